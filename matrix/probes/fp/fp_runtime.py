"""Fingerprint group ``runtime_semantics``: how the process-wide hooks and knobs a host program
sets behave across threads, contexts and resets (``[runtime_semantics].rules`` of the battery
file names the rules, RULES below holds them).

Each rule is a small function run in a forked child of its own (a rule sets process-wide state;
a fork of the probe process, which has Triton imported, costs milliseconds, not an import).
Its cell is what the rule saw: ``seen``/``not-seen`` (a value set in one thread or context, read
in another), ``restored``/``kept`` (after a scope or a reset), ``written``/``not-written`` (the
environment after setting a knob), ``explicit``/``env`` (which wins); ``absent`` where the
release lacks the hook (the rule's ``needs`` path is missing: by trying, not by version);
``error`` with the exception where the rule itself raised, ``crashed`` where the child died.

Where a hook is only readable through an internal (the allocator set by ``triton.set_allocator``
lives in ``triton.runtime._allocation._allocator``: a plain global up to 3.4.0, a ContextVar
later), ``data.details`` names the internal read.
"""

from __future__ import annotations

import contextvars
import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable
from typing import Any

from matrix.probes.support.base import Observation

# A rule's child is given this long (seconds) before it counts as hung.
RULE_TIMEOUT = 30.0


def _path(path: str) -> Any:
    """The object at ``path`` (``triton.knobs.runtime``), or None where any part is missing."""
    import importlib

    parts = path.split(".")
    obj: Any = importlib.import_module(parts[0])
    for part in parts[1:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(f"{obj.__name__}.{part}")
            except (ImportError, AttributeError):
                return None
    return obj


def _current_allocator() -> Any:
    import triton.runtime._allocation as allocation

    holder = allocation._allocator
    return holder.get() if isinstance(holder, contextvars.ContextVar) else holder


def _in_thread(fn: Callable[[], Any]) -> Any:
    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


def _marker(*_args: Any, **_kwargs: Any) -> None:
    """A hook or allocator that is recognisably ours."""


def seen(value: Any) -> str:
    return "seen" if value is _marker else "not-seen"


# -- the rules: each returns its cell's status ---------------------------------------------
def allocator_other_thread() -> str:
    import triton

    triton.set_allocator(_marker)
    return seen(_in_thread(_current_allocator))


def allocator_from_thread() -> str:
    import triton

    _in_thread(lambda: triton.set_allocator(_marker))
    return seen(_current_allocator())


def allocator_outside_context() -> str:
    import triton

    contextvars.copy_context().run(triton.set_allocator, _marker)
    return seen(_current_allocator())


def _knob_group() -> Any:
    return _path("triton.knobs.compilation")


def knob_other_thread() -> str:
    group = _knob_group()
    group.always_compile = True
    return "seen" if _in_thread(lambda: group.always_compile) is True else "not-seen"


def knob_scope_restores() -> str:
    group = _knob_group()
    os.environ.pop("TRITON_ALWAYS_COMPILE", None)
    with group.scope():
        group.always_compile = True
    return "restored" if group.always_compile is False else "kept"


def knob_reset_reads_env() -> str:
    group = _knob_group()
    group.always_compile = True
    os.environ["TRITON_ALWAYS_COMPILE"] = "0"
    group.reset()
    return "env" if group.always_compile is False else "kept"


def knob_set_writes_env() -> str:
    group = _knob_group()
    os.environ.pop("TRITON_ALWAYS_COMPILE", None)
    group.always_compile = True
    return "written" if os.environ.get("TRITON_ALWAYS_COMPILE") else "not-written"


def knob_explicit_over_env() -> str:
    group = _knob_group()
    group.always_compile = False
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    return "explicit" if group.always_compile is False else "env"


def _hook_owner() -> tuple[Any, str]:
    """Where a launch hook is set: knobs.runtime (3.4+), else CompiledKernel (the class)."""
    runtime = _path("triton.knobs.runtime")
    if runtime is not None and hasattr(type(runtime), "launch_enter_hook"):
        return runtime, "triton.knobs.runtime.launch_enter_hook"
    return _path(
        "triton.compiler.CompiledKernel"
    ), "triton.compiler.CompiledKernel.launch_enter_hook"


def launch_hook_other_thread() -> str:
    owner, _ = _hook_owner()
    _in_thread(lambda: setattr(owner, "launch_enter_hook", _marker))
    return seen(owner.launch_enter_hook)


def launch_hook_assign_reads_back() -> str:
    """What assigning a plain function gives back: the function, or the release's own type
    (3.9.0 made the hook a HookChain with add/remove)."""
    owner, _ = _hook_owner()
    before = type(owner.launch_enter_hook).__name__
    owner.launch_enter_hook = _marker
    after = owner.launch_enter_hook
    return "function" if after is _marker else f"{type(after).__name__} (was {before})"


# name: (the path that must exist, the rule, what its details say it read)
RULES: dict[str, tuple[str, Callable[[], str], str]] = {
    "allocator.other_thread": ("triton.set_allocator", allocator_other_thread,
                               "triton.runtime._allocation._allocator read in a new thread"),
    "allocator.from_thread": ("triton.set_allocator", allocator_from_thread,
                              "set in a thread, triton.runtime._allocation._allocator read "
                              "in the main thread after it ended"),
    "allocator.outside_context": ("triton.set_allocator", allocator_outside_context,
                                  "set inside contextvars.copy_context().run, read outside"),
    "knobs.other_thread": ("triton.knobs.compilation.always_compile", knob_other_thread,
                           "knobs.compilation.always_compile = True, read in a new thread"),
    "knobs.scope_restores": ("triton.knobs.compilation.scope", knob_scope_restores,
                             "set inside knobs.compilation.scope(), read after it"),
    "knobs.reset_reads_env": ("triton.knobs.compilation.reset", knob_reset_reads_env,
                              "set True, TRITON_ALWAYS_COMPILE=0, reset(), read"),
    "knobs.set_writes_env": ("triton.knobs.compilation.always_compile", knob_set_writes_env,
                             "set True, read os.environ['TRITON_ALWAYS_COMPILE']"),
    "knobs.explicit_over_env": ("triton.knobs.compilation.always_compile",
                                knob_explicit_over_env,
                                "set False, then TRITON_ALWAYS_COMPILE=1, read"),
    "launch_hook.other_thread": ("triton.compiler.CompiledKernel", launch_hook_other_thread,
                                 "launch_enter_hook set in a thread, read in the main thread"),
    "launch_hook.assign": ("triton.compiler.CompiledKernel", launch_hook_assign_reads_back,
                           "launch_enter_hook = a function, read back"),
}  # fmt: skip


def _child(name: str, out: str) -> None:
    try:
        payload = ("ok", RULES[name][1]())
    except BaseException as e:  # the rule's own failure is its cell, with the reason
        payload = ("error", f"{type(e).__name__}: {e}"[:300])
    with open(out, "wb") as f:
        pickle.dump(payload, f)
    os._exit(0)


def run_rule(name: str) -> tuple[str, str]:
    """(status, detail) of one rule, in a forked child."""
    import tempfile

    needs, _, reads = RULES[name]
    if needs.startswith("triton.knobs") and _path("triton.knobs") is None:
        return "absent", "no triton.knobs"
    if _path(needs) is None:
        return "absent", f"no {needs}"
    fd, out = tempfile.mkstemp(prefix="fp-runtime-", suffix=".pickle")
    os.close(fd)
    try:
        child = multiprocessing.get_context("fork").Process(target=_child, args=(name, out))
        child.start()
        child.join(RULE_TIMEOUT)
        if child.is_alive():
            child.kill()
            child.join()
            return "timeout", f"no answer in {RULE_TIMEOUT:.0f} s"
        with open(out, "rb") as f:
            data = f.read()
    finally:
        os.unlink(out)
    if not data:
        return "crashed", f"exit code {child.exitcode}"
    status, value = pickle.loads(data)
    if name.startswith("launch_hook."):
        reads = f"{_hook_owner()[1]}: {reads}"
    return (value, reads) if status == "ok" else ("error", value)


def runtime_semantics_rows(rules: list[str]) -> list[Observation]:
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise ValueError(f"[runtime_semantics].rules names {unknown}; known: {sorted(RULES)}")
    cells: dict[str, str] = {}
    details: dict[str, str] = {}
    for name in rules:
        cells[name], details[name] = run_rule(name)
    return [Observation("observed", "", {"cells": cells, "details": details},
                        name="fp.runtime_semantics")]  # fmt: skip
