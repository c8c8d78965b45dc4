"""Uses of a runtime hook, knob, cache setting or driver utility by a path a release moved
(rule TRI022): ``CompiledKernel.launch_enter_hook = f`` stops doing anything at 3.4.0, where the
hook is ``triton.knobs.runtime.launch_enter_hook``.

The paths each thing has had are data (``matrix/data/runtime_homes.toml``, read by
``matrix.analyze.homes``); the census decides per release whether the path used is there
(the rule's ``census_decides``), and the finding's detail names every path the thing has had,
with the releases of each: where the code must reach it on the candidate. A path present on
every recorded release is not reported (the engine's census check), nor, without a census,
anything (nothing says where a path is).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from matrix.analyze.census import Census
from matrix.analyze.homes import Home, home_of, home_text, load_homes
from matrix.scan.imports import Module
from matrix.scan.internals import COMPILED, _kernel_classes, _launch_results
from matrix.scan.matchers import _outer_references
from matrix.scan.rules import Rule

# Per loaded set of censuses: {qualname: (the home's path prefix used, its home) or None}.
_MEMO: dict[int, tuple[Mapping[str, Census], dict[str, tuple[str, Home] | None]]] = {}


def _leaves() -> frozenset[str]:
    """The last part of every recorded path: a reference naming none of them is no use."""
    return frozenset(p.rsplit(".", 1)[-1] for h in load_homes() for p in h.at)


def _home_use(censuses: Mapping[str, Census], qualname: str) -> tuple[str, Home] | None:
    """(the prefix of ``qualname`` that is a home's path, the home); ``.add(f)`` on a hook
    is a use of the hook."""
    key = id(censuses)
    if key not in _MEMO or _MEMO[key][0] is not censuses:
        _MEMO[key] = (censuses, {})
    memo = _MEMO[key][1]
    if qualname not in memo:
        memo[qualname] = None
        parts = qualname.split(".")
        leaves = _leaves()
        for cut in range(len(parts), 2, -1):
            if parts[cut - 1] not in leaves:
                continue
            prefix = ".".join(parts[:cut])
            home = home_of(censuses, prefix)
            if home is not None:
                memo[qualname] = (prefix, home)
                break
    return memo[qualname]


def _class_of_compiled(node: ast.expr, compiled: set[str]) -> bool:
    """``c.__class__`` or ``type(c)`` for a name ``c`` bound to a kernel's launch result."""
    if isinstance(node, ast.Attribute) and node.attr == "__class__":
        return isinstance(node.value, ast.Name) and node.value.id in compiled
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in compiled
    )


def _compiled_class_references(module: Module) -> Iterator[tuple[ast.AST, str]]:
    """``binary.__class__.launch_enter_hook`` (``type(binary).x``) where ``binary`` is what a
    kernel's launch returned: the class attribute of ``CompiledKernel``, as launchers that
    forward the hooks spell it (torch 2.7's Inductor did; 3.4.0 moved the hooks to knobs)."""
    kernels = _kernel_classes(module)
    compiled = _launch_results(module, kernels) if kernels else set()
    if not compiled:
        return
    for node in module.nodes:
        if isinstance(node, ast.Attribute) and _class_of_compiled(node.value, compiled):
            yield node, f"{COMPILED}.{node.attr}"


def match_runtime_home(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """References (reads, assignments, calls) to a path of a home in runtime_homes.toml."""
    censuses = getattr(module, "censuses", None) or {}
    if not censuses:
        return
    for ref, q in (*_outer_references(module), *_compiled_class_references(module)):
        if not q.startswith("triton."):
            continue
        found = _home_use(censuses, q)
        if found is None:
            continue
        prefix, home = found
        module.qualnames[id(ref)] = prefix  # the census decides on the hook's own path
        module.details[id(ref)] = f"{home.name} is {home_text(censuses, home)}"
        yield ref, ast.unparse(ref)
