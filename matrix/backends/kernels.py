"""A team's captured kernel launches, compiled for a target with no GPU, and what the code is.

A launch is what ``matrix.measure.capture`` recorded (its docstring has the shape). Here:

- ``rebuild_kernel(launch, definitions)``: the ``@triton.jit`` function that ran, made again
  from the KERNEL DEFINITION the capture recorded (its source text, the globals and closure
  values it read, its nested helpers, each rebuilt the same way); the test module is never
  imported, so kernels defined inside tests, built from strings, or in modules that need a GPU
  at import are compiled as they ran, and a test-local kernel is never confused with a
  module-level one of the same name;
- ``load_kernel(launch)``: the old way, for launches recorded without a definition (raw files
  from before source capture): imported by module name from the ``sys.path`` entry the suite
  had it from;
- ``compile_launch(launch, target, definitions=...)``: one KERNEL COMPILE record (below);
- ``replay(launch, device)``: run the launch once on a real device with fresh random inputs of
  the recorded shapes and the recorded scalars and grid (the GPU runner calls it).

A KERNEL COMPILE record, as a cell's raw file stores it under ``"kernel_compiles"``::

    {"id": "<launch key>@cuda:90", "key": "<launch key>", "kernel": "pkg.mod:fn",
     "target": "cuda:90",
     "status": "compiled" | "rejected" | "skipped" | "error",
     "detail": "",                       # the compiler's error for rejected; the reason else
     "seconds": 0.8,
     "shared": 16384,                    # bytes of shared memory (compile metadata)
     "registers": 40, "spills": 0,       # per thread / bytes of local memory per thread (the
     "local_bytes": 0,                   # stack frame, where spills live), from the cubin's
     "resource_source": "cubin .nv.info", # .nv.info (NumVgprs, ScratchSize on HIP); None unknown
     "compile_seconds": [0.61, 0.58],    # each compile's wall time: the first, then repeats
                                         # (matrix.backends.compile_time: a noise band)
     "classes": ["mma.sync", "fma"],     # instruction classes present in the assembly
     "instruction_class": "mma.sync",    # the strongest (tcgen05 > wgmma > mma.sync > mfma >
                                         # wmma > fma > none)
     "instructions": 812,                # instruction lines in the PTX / AMDGCN
     "ttgir_hash": "<16 hex digits>",    # of the TTGIR without location lines
     "ttir_ops": [{"op": "arith.maxnumf", "file": ..., "line": 19, "col": 9,
                   "operands": ["bf16", "c:f32"], "result": "f32", "attrs": {}}, ...],
                                         # the TTIR's ops with dtypes (matrix.backends.ttir_ops)
     "num_warps": 4, "num_stages": 3}

``rejected`` means the release's compiler refused the code (its exception text is the
detail); ``skipped`` means we could not ask it (a tool is missing, an argument type that
cannot be rebuilt from the launch, a kernel whose definition could not be rebuilt: the reason
says which); ``error`` means our side failed (the kernel could not be imported). Only
``compiled`` and ``rejected`` are Triton behaviour. A record compiled from a module imported by
name (no recorded definition) says so in ``"source"``: ``"imported"``, else ``"recorded"``.
"""

from __future__ import annotations

import builtins
import collections
import hashlib
import importlib
import json
import linecache
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from matrix.backends import compile_time, ttir_ops
from matrix.backends.aot import (
    Artifacts,
    SpellingNotRecognised,
    TupleArgumentsNotSpelled,
    compile_for_target,
)
from matrix.backends.targets import KNOWN_TARGETS, TargetUnsupported
from matrix.core import COMPILE_OPTIONS, INT_TYPES, TORCH_TO_TRITON, TUPLE_PREFIX, AotUnavailable

# A team's captured launches are compiled for every target the aot backend knows (a release
# that cannot compile for one records ``skipped`` with why: ``matrix.backends.targets``).
TARGETS = KNOWN_TARGETS
# Strongest first: the class a kernel "uses" is the first of these its assembly contains.
INSTRUCTION_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Blackwell's (cuda:100) tensor-core MMA: tcgen05.mma, no wgmma or mma.sync there.
    ("tcgen05", re.compile(r"\btcgen05\.mma")),
    ("wgmma", re.compile(r"\bwgmma\.mma_async")),
    ("mma.sync", re.compile(r"\bmma\.sync\.")),
    ("mfma", re.compile(r"\bv_mfma_")),
    ("wmma", re.compile(r"\bv_wmma_")),
    ("fma", re.compile(r"\bfma\.rn|\bv_fma_|\bv_fmac_|\bv_pk_fma_")),
)
MATRIX_CLASSES = frozenset({"tcgen05", "wgmma", "mma.sync", "mfma", "wmma"})


class KernelNotLoadable(LookupError):
    """A captured kernel cannot be imported again (the message says which and why)."""


class KernelNotRebuilt(LookupError):
    """A captured kernel's definition cannot be made into a function again (the message says
    which part and why): its compile is ``skipped``, never a Triton answer."""


# One import per module per process (a cell's compile child): a module that failed to import
# fails the same way every time (3.8.0's cell once imported one 2,490 times, 139 s).
_imported: dict[tuple[str | None, str], Any] = {}


def import_once(module_name: str, root: str | None = None) -> Any:
    """``importlib.import_module(module_name)`` (``root`` first on ``sys.path``), its failure
    remembered: raises KernelNotLoadable each time with the first failure's text."""
    key = (root, module_name)
    if key not in _imported:
        if root and root not in sys.path:
            sys.path.insert(0, root)
        try:
            _imported[key] = importlib.import_module(module_name)
        except Exception as e:
            where = root or "sys.path"
            _imported[key] = KernelNotLoadable(
                f"importing {module_name!r} (from {where}) failed: {type(e).__name__}: {e}"
            )
    got = _imported[key]
    if isinstance(got, KernelNotLoadable):
        raise KernelNotLoadable(str(got))
    return got


def _kernel_classes() -> tuple[type, ...]:
    """What a ``@triton.jit`` object is here: a JITFunction, or under ``TRITON_INTERPRET=1``
    the interpreter's InterpretedFunction (where the release has one)."""
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return (JITFunction,)
    return (JITFunction, InterpretedFunction)


def load_kernel(
    launch: dict[str, Any], root: str | None = None, suite_root: str | Path | None = None
) -> Any:
    """The ``@triton.jit`` object of a captured launch (an autotuner or heuristics wrapper
    unwrapped). ``path_root`` is recorded relative to the suite's root (``matrix.measure.
    capture``), so ``suite_root`` says where the suite is now; ``root`` replaces the recorded
    ``path_root`` altogether (the library somewhere else, e.g. copied to a GPU machine)."""
    module_name, name = launch.get("module"), launch.get("name")
    if not module_name or not name or module_name == "__main__" or "<locals>" in name:
        raise KernelNotLoadable(
            f"kernel {launch.get('kernel')!r} is not importable by name (module {module_name!r}, "
            f"name {name!r}): only module-level kernels can be compiled again"
        )
    recorded = launch.get("path_root")
    if root is None and recorded and not Path(recorded).is_absolute():
        if suite_root is None:
            raise KernelNotLoadable(
                f"kernel {launch.get('kernel')!r}: its path_root {recorded!r} is relative to the "
                "suite's root, and no suite_root was given"
            )
        root = str((Path(suite_root) / recorded).resolve())
    obj: Any = import_once(module_name, root or recorded)
    for part in name.split("."):
        if not hasattr(obj, part):
            raise KernelNotLoadable(f"{module_name!r} has no attribute {name!r}")
        obj = getattr(obj, part)
    kinds = _kernel_classes()
    seen = 0
    while not isinstance(obj, kinds) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1  # Autotuner -> Heuristics -> JITFunction
    if not isinstance(obj, kinds):
        raise KernelNotLoadable(
            f"{launch.get('kernel')!r} is a {type(obj).__name__}, not a @triton.jit function"
        )
    return obj


# ------------------------------------------------------------------------------ rebuilding


_rebuilt: dict[str, tuple[Any, dict[str, str]]] = {}


def _value(spec: Mapping[str, Any], definitions: Mapping[str, Any], missing: dict[str, str]) -> Any:
    """The object a recorded VALUE (``matrix.measure.capture``) stands for."""
    kind = spec.get("kind")
    if kind == "module":
        return import_once(spec["name"])
    if kind == "jit":
        fn, inner = _rebuild(spec["id"], definitions)
        missing.update(inner)
        return fn
    if kind == "constexpr":
        import triton.language as tl

        return tl.constexpr(spec["value"])
    if kind == "dtype":
        import triton.language as tl

        return tl.dtype(spec["name"])
    if kind == "value":
        value = spec["value"]
        return tuple(value) if spec.get("tuple") else value
    if kind == "float":
        return float(spec["repr"])
    if kind == "import":
        obj = import_once(spec["module"])
        for part in spec["qualname"].split("."):
            obj = getattr(obj, part)
        return obj
    why = spec.get("why") or "a value the capture could not record"
    raise KernelNotRebuilt(f"{spec.get('type')} {spec.get('repr')}: {why}")


def _rebuild(ident: str, definitions: Mapping[str, Any]) -> tuple[Any, dict[str, str]]:
    """(the JITFunction of definition ``ident``, {name: why} of the values left out of its
    namespace and its helpers'); cached per process: every target compiles the same object."""
    if ident in _rebuilt:
        return _rebuilt[ident]
    d = definitions.get(ident)
    if not isinstance(d, Mapping):
        raise KernelNotRebuilt(f"definition {ident} is not in the run's kernel_sources")
    qualname = d.get("qualname") or d.get("name")
    if not d.get("source"):
        raise KernelNotRebuilt(f"{qualname}: no source recorded ({'; '.join(d.get('cut') or [])})")
    ns: dict[str, Any] = {"__builtins__": builtins, "__name__": d.get("module") or "__captured__"}
    missing: dict[str, str] = {}
    for name, spec in [*d.get("globals", {}).items(), *d.get("closure", {}).items()]:
        try:
            ns[name] = _value(spec, definitions, missing)
        except (KernelNotRebuilt, KernelNotLoadable, AttributeError) as e:
            missing[name] = str(e)[:300]
    # A file name of its own per definition: Triton reads the source back through linecache,
    # and the padding keeps the recorded line numbers (the IR's locations point at them).
    filename = f"<captured {d.get('file')}:{d.get('line')} {d.get('source_hash')}>"
    text = "\n" * max(int(d.get("line") or 1) - 1, 0) + d["source"]
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    try:
        exec(compile(text, filename, "exec", dont_inherit=True), ns)
        fn = ns[d["name"]]
    except Exception as e:
        raise KernelNotRebuilt(
            f"{qualname}: its source does not run: {type(e).__name__}: {e}"
        ) from e
    import triton

    jit_options = {k: v for k, v in (d.get("jit") or {}).items() if k == "noinline"}
    jit = triton.jit(**jit_options)(fn) if jit_options else triton.jit(fn)
    _rebuilt[ident] = (jit, missing)
    return jit, missing


def rebuild_kernel(
    launch: Mapping[str, Any], definitions: Mapping[str, Any]
) -> tuple[Any, dict[str, str]]:
    """The ``@triton.jit`` function a captured launch ran, made from its recorded definition
    (module docstring), and {name: why} of the values it read that could not be rebuilt (a
    compile that fails on one of those is ``skipped``, not ``rejected``). Raises
    KernelNotRebuilt when the function itself cannot be made."""
    ident = launch.get("definition")
    if not isinstance(ident, str):
        raise KernelNotRebuilt(f"launch {launch.get('kernel')!r} names no definition")
    return _rebuild(ident, definitions)


# -------------------------------------------------------------------------------- the assembly


def assembly(art: Artifacts) -> str:
    """The target assembly text of a compile: PTX for CUDA, AMDGCN for HIP."""
    return art.ir.get("ptx") or art.ir.get("amdgcn") or ""


def instruction_classes(asm: str) -> list[str]:
    """The instruction classes present in ``asm``, strongest first."""
    return [name for name, pattern in INSTRUCTION_CLASSES if pattern.search(asm)]


_INSTRUCTION_LINE = re.compile(r"^\s*(?:@!?%\w+\s+)?[a-z_][a-z0-9_.]*(?:\s|;|$)")


def instruction_count(asm: str) -> int:
    """Lines of ``asm`` that are instructions (not directives, labels, comments or braces)."""
    n = 0
    for line in asm.splitlines():
        text = line.split("//")[0].split(";;")[0].strip()
        if not text or text.startswith((".", ";", "{", "}", "#")) or text.endswith(":"):
            continue
        if _INSTRUCTION_LINE.match(text):
            n += 1
    return n


def ttgir_hash(ttgir: str) -> str:
    """A hash of the TTGIR that ignores source locations (file paths and line numbers)."""
    lines = [ln for ln in ttgir.splitlines() if not ln.startswith("#loc")]
    text = re.sub(r"\s*loc\([^()]*(?:\([^()]*\)[^()]*)*\)", "", "\n".join(lines))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _ptxas_binaries() -> list[Path]:
    import triton.backends.nvidia as nvidia

    return sorted(Path(nvidia.__file__).parent.joinpath("bin").glob("ptxas*"))


def ptx_resources(ptx: str) -> tuple[int | None, int | None, str]:
    """(registers, spill-store bytes, note) from ``ptxas -v`` on ``ptx``, trying each ptxas the
    release ships (a newer PTX needs the newer one); None, None and why where none works."""
    match = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M)
    if not match:
        return None, None, "no .target line in the PTX"
    notes = []
    with tempfile.TemporaryDirectory(prefix="matrix-ptxas-") as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx, encoding="utf-8")
        for ptxas in _ptxas_binaries():
            proc = subprocess.run(
                [
                    str(ptxas),
                    "-v",
                    f"--gpu-name={match.group(1)}",
                    str(src),
                    "-o",
                    str(Path(tmp) / "k.cubin"),
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if proc.returncode != 0:
                notes.append(f"{ptxas.name}: {proc.stderr.strip()[:200]}")
                continue
            regs = re.search(r"Used (\d+) registers", proc.stderr)
            spills = re.search(r"(\d+) bytes spill stores", proc.stderr)
            return (
                int(regs.group(1)) if regs else None,
                int(spills.group(1)) if spills else None,
                ptxas.name,
            )
    return None, None, "; ".join(notes) or "no ptxas in the release"


def describe(art: Artifacts, recompile: Callable[[], Artifacts] | None = None) -> dict[str, Any]:
    """The measured fields of a KERNEL COMPILE record for one compile; ``recompile`` compiles
    the same kernel again (the compile seconds' noise band), None: the one compile's seconds."""
    asm = assembly(art)
    classes = instruction_classes(asm)
    used = art.resources
    if recompile is not None:
        seconds, _ = compile_time.samples(art, recompile)
    else:
        seconds = [art.seconds] if art.seconds is not None else []
    return {
        "shared": art.metadata.get("shared"),
        # From the binary (matrix.backends.resources): ptxas's register count; local memory
        # bytes per thread (its stack frame, where spills live), kept as "spills" too, the
        # field the gate's spill rule reads.
        "registers": used.get("registers"),
        "spills": used.get("local_bytes"),
        "local_bytes": used.get("local_bytes"),
        "resource_source": used.get("resource_source"),
        "compile_seconds": seconds,
        "classes": classes,
        "instruction_class": classes[0] if classes else "none",
        "instructions": instruction_count(asm),
        "ttgir_hash": ttgir_hash(art.ir.get("ttgir", "")),
        # the ops the kernel ran on, with their dtypes and lines: the usage profile's TTIR
        "ttir_ops": ttir_ops.summarize_ir(art.ir),
        **{k: art.metadata.get(k) for k in ("num_warps", "num_stages")},
    }


def specialized(
    launch: Mapping[str, Any],
    definition: Mapping[str, Any] | None,
    arg_names: Sequence[str] = (),
) -> tuple[dict[str, str], dict[str, Any]]:
    """(signature, constexprs) of a launch as the JIT compiles it: an integer argument whose
    recorded value is 1 is the constant 1 (Triton 3.x specializes on it: ``equal_to_1``, later
    ``("constexpr", 1)``), unless the kernel's ``do_not_specialize`` names it. Compiled without
    that, a kernel that needs the constant (``tl.make_tensor_descriptor`` with a last stride
    of 1, as Triton's test_tensor_descriptor.py passes it) is refused where the launch was not.
    ``arg_names`` (the kernel's, in order) resolves a ``do_not_specialize`` given by position."""
    signature: dict[str, Any] = dict(launch["signature"])
    constexprs: dict[Any, Any] = dict(launch["constexprs"])
    scalars = (launch.get("example") or {}).get("scalars") or {}
    keep = set((definition or {}).get("jit", {}).get("do_not_specialize") or ())
    order = {n: i for i, n in enumerate(arg_names)}
    for key in [k for k in constexprs if "[" in k]:  # a tuple's constant element: its path
        base = key.partition("[")[0]
        if base not in order:
            raise ValueError(f"constexpr {key!r}: {base!r} is not an argument of {arg_names}")
        constexprs[(order[base], *map(int, re.findall(r"\[(\d+)\]", key)))] = constexprs.pop(key)
    for name, kind in list(signature.items()):
        value = scalars.get(name)
        if kind.startswith(TUPLE_PREFIX):
            if name not in order:
                raise ValueError(f"tuple argument {name!r} is not an argument of {arg_names}")
            specialize = name not in keep and order[name] not in keep
            spelled = json.loads(kind.removeprefix(TUPLE_PREFIX))
            signature[name] = _tuple_types(spelled, value, (order[name],), specialize, constexprs)
            continue
        if _jit_makes_it_one(kind, value):
            if name in keep or order.get(name) in keep:
                continue
            del signature[name]
            constexprs[name] = 1
    return signature, constexprs


def _jit_makes_it_one(kind: str, value: Any) -> bool:
    """Whether the JIT compiles an argument (or tuple element) of ``kind`` launched with
    ``value`` as the constant 1."""
    return kind in INT_TYPES and value == 1 and not isinstance(value, bool)


def _tuple_types(
    spelled: Mapping[str, Any],
    scalars: Sequence[Any] | None,
    path: tuple[int, ...],
    specialize: bool,
    constexprs: dict[Any, Any],
) -> tuple[Any, ...]:
    """The (named) tuple of Triton type strings that a tuple argument's recorded type spells
    (``matrix.measure.capture.tuple_signature``), as Triton 3.3+'s ``ASTSource`` takes it; an
    integer element equal to 1 becomes the constant 1 at its path, as the JIT specializes it."""
    items: list[Any] = []
    values = list(scalars) if scalars is not None else [None] * len(spelled["items"])
    for i, (kind, value) in enumerate(zip(spelled["items"], values, strict=True)):
        if isinstance(kind, Mapping):
            items.append(_tuple_types(kind, value, (*path, i), specialize, constexprs))
        elif specialize and _jit_makes_it_one(kind, value):
            items.append("constexpr")
            constexprs[(*path, i)] = 1
        else:
            items.append(kind)
    if spelled.get("fields"):  # a NamedTuple: the kernel reads its fields by name
        cls = collections.namedtuple(spelled.get("name") or "Tuple", spelled["fields"])  # type: ignore[misc]
        return cls(*items)
    return tuple(items)


def compile_launch(
    launch: dict[str, Any],
    target: str,
    suite_root: str | Path | None = None,
    definitions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One KERNEL COMPILE record (module docstring) for ``launch`` on ``target``; never raises
    for a kernel's own failure: that is the record's status. A launch with a recorded
    definition is rebuilt from it (``definitions``: the run's ``kernel_sources``); one without
    is imported by name (``suite_root`` as for ``load_kernel``)."""
    rec: dict[str, Any] = {
        "id": f"{launch['key']}@{target}",
        "key": launch["key"],
        "kernel": launch.get("kernel"),
        "target": target,
        "detail": "",
    }
    t0 = time.monotonic()

    def done(status: str, detail: str = "", **fields: Any) -> dict[str, Any]:
        rec.update(status=status, detail=detail[:1500], seconds=round(time.monotonic() - t0, 3))
        rec.update(fields)
        return rec

    if "error" in launch:
        return done("error", f"the launch was not captured: {launch['error']}")
    odd = {k: v for k, v in launch["signature"].items() if v.startswith("unknown:")}
    if any(v.startswith("unknown:tuple") for v in odd.values()):
        return done("skipped", f"a tuple argument holds a value the capture could not type: {odd}")
    if odd:
        return done("skipped", f"argument types the capture could not name: {odd}")
    missing: dict[str, str] = {}
    if launch.get("definition"):
        rec["source"] = "recorded"
        if definitions is None:
            return done("error", "the launch names a definition and none were given")
        try:
            fn, missing = rebuild_kernel(launch, definitions)
        except (KernelNotRebuilt, KernelNotLoadable) as e:
            return done("skipped", f"the kernel could not be rebuilt: {e}")
    else:
        rec["source"] = "imported"
        try:
            fn = load_kernel(launch, suite_root=suite_root)
        except KernelNotLoadable as e:
            return done("error", f"no recorded source (a raw file from before capture): {e}")
    options = {k: v for k, v in launch.get("options", {}).items() if k in COMPILE_OPTIONS}
    definition = (definitions or {}).get(str(launch.get("definition")))
    signature, constexprs = specialized(launch, definition, getattr(fn, "arg_names", ()))
    try:
        art = compile_for_target(fn, signature, constexprs, target, options=options)
    except TargetUnsupported as e:  # the release predates the target: not the kernel's doing
        return done("skipped", str(e))
    except AotUnavailable as e:
        return done("skipped", f"a tool outside Triton is missing: {e}")
    except TupleArgumentsNotSpelled as e:
        return done("skipped", str(e))
    except (SpellingNotRecognised, ValueError) as e:
        return done("error", f"the harness could not state the compile: {type(e).__name__}: {e}")
    except Exception as e:  # the compiler refused the code, unless it is a value we left out
        text = f"{type(e).__name__}: {e}"
        left_out = [n for n in missing if re.search(rf"\b{re.escape(n)}\b", text)]
        if left_out:
            why = "; ".join(f"{n}: {missing[n]}" for n in left_out)
            return done("skipped", f"the kernel reads values that were not rebuilt ({why}): {text}")
        return done("rejected", text)

    def recompile() -> Artifacts:
        return compile_for_target(fn, signature, constexprs, target, options=options)

    return done("compiled", **describe(art, recompile))


# ------------------------------------------------------------------------------------ replaying


def replay(
    launch: dict[str, Any],
    device: str = "cuda",
    seed: int = 0,
    root: str | None = None,
    suite_root: str | Path | None = None,
    definitions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Launch a captured specialization once on ``device`` with fresh random inputs of the
    recorded shapes, dtypes, scalars and grid; return the arguments it was given (tensors
    hold the results). Raises KernelNotLoadable or ValueError when the launch lacks what a
    replay needs; the kernel's own errors propagate. ``root`` and ``suite_root`` as for
    ``load_kernel``."""
    import torch

    if launch.get("definition") and definitions is not None:
        fn, _ = rebuild_kernel(launch, definitions)
    else:
        fn = load_kernel(launch, root, suite_root)
    example = launch.get("example") or {}
    grid = example.get("grid")
    if not grid:
        raise ValueError(f"launch {launch.get('kernel')!r}: no recorded grid to replay")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dtypes = {v: k for k, v in TORCH_TO_TRITON.items()}
    args: dict[str, Any] = {}
    for name, kind in launch["signature"].items():
        if kind.startswith(TUPLE_PREFIX):
            raise ValueError(
                f"launch {launch.get('kernel')!r}: {name} is a tuple; tuples are not replayed"
            )
        if kind.startswith("*"):
            shape = example.get("shapes", {}).get(name)
            if shape is None:
                raise ValueError(f"launch {launch.get('kernel')!r}: no shape for {name}")
            dtype = getattr(torch, dtypes.get(kind[1:], ""), None)
            if dtype is None:
                raise ValueError(f"launch {launch.get('kernel')!r}: no torch dtype for {kind}")
            t = (
                torch.randn(shape, generator=gen)
                if dtype.is_floating_point
                else (torch.randint(0, 8, shape, generator=gen))
            )
            args[name] = t.to(dtype).to(device)
        elif name in example.get("scalars", {}):
            args[name] = example["scalars"][name]
        else:
            raise ValueError(f"launch {launch.get('kernel')!r}: {name} ({kind}) has no value")
    args.update(launch["constexprs"])
    options = {k: v for k, v in launch.get("options", {}).items() if k in COMPILE_OPTIONS}
    given = {n: args[n] for n in fn.arg_names if n in args}
    fn[tuple(grid)](**given, **options)
    return given
