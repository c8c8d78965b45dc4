"""What the gate reads and what it can decide without, modeled on undecidable verdicts of
libraries nobody here had tuned against (session 22: Fast-LLM and jax-triton write Python 3.12
syntax; llmc's 1.9 MB Hadamard table and m2's path template do not parse); each test fails
without its mechanism."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from matrix.newer_syntax import lower_type_params, parse_python, swap_nested_quotes
from tests.support import REPO, profiled_package
from tests.test_gate import run_gate

# ------------------------------------------------------------------ Python 3.12 syntax, lowered

PEP_695 = """\
import typing
type Scalar = bool | int | float
type ValueOrFn[T] = T | typing.Callable[[dict], T]
def div[T](x: T, y: T) -> T:
    return x
class Data[ConfigType: dict](list):
    kind = type(3)
def multi[
    T,
    **P,
](a, b):
    return a
"""


def test_type_parameters_are_lowered_keeping_every_line():
    """``def div[T]``, ``class Data[C: X](Base)``, ``type Alias[T] = ...`` (Fast-LLM's
    ``config.py``, jax-triton's ``triton_lib.py``): Python 3.11 refused the whole file."""
    with pytest.raises(SyntaxError):
        ast.parse(PEP_695)
    tree = parse_python(PEP_695)
    where = {getattr(n, "name", None) or ast.unparse(n).split(" =")[0]: n.lineno for n in tree.body}
    assert where == {
        "import typing": 1, "Scalar": 2, "ValueOrFn": 3, "div": 4, "Data": 6, "multi": 8
    }  # fmt: skip
    data = tree.body[4]
    assert isinstance(data, ast.ClassDef) and ast.unparse(data.bases[0]) == "list"
    assert ast.unparse(data.body[0]) == "kind = type(3)"  # `type` the builtin stays one
    assert tree.body[5].body[0].lineno == 12  # type: ignore[attr-defined]
    # the columns of what follows the brackets are the file's
    assert "def div   (x: T" in (lower_type_params(PEP_695) or "")


def test_strings_nested_in_their_own_quote_are_requoted_at_the_same_width():
    """PEP 701 (Fast-LLM's ``f"ranks_{"_".join(r)}/"``, ``f"{"\\n".join(errors)}"``): the
    nested string takes the other quote; one holding a backslash is blanked (3.11 refuses a
    backslash inside a field); one that cannot be requoted leaves the file unread."""
    source = 'a = f"ranks_{"_".join(r)}/"\nb = f"{"\\n".join(e)} {d[\'k\']}"  # f"{"c"}"\n'
    lowered = swap_nested_quotes(source)
    assert (
        lowered == 'a = f"ranks_{\'_\'.join(r)}/"\nb = f"{\'  \'.join(e)} {d[\'k\']}"  # f"{"c"}"\n'
    )
    assert [len(x) for x in lowered.splitlines()] == [len(x) for x in source.splitlines()]
    tree = parse_python(source)
    assert ast.unparse(tree.body[0]) == "a = f\"ranks_{'_'.join(r)}/\""
    assert swap_nested_quotes('v = f"{"it\'s"}"\n') is None  # holds the other quote
    with pytest.raises(SyntaxError, match="must be parenthesized"):  # the first error stands
        parse_python("try:\n    pass\nexcept ValueError, TypeError:\n    pass\n")  # 3.14's


def test_a_kernel_in_a_312_file_is_scanned_and_profiled(tmp_path):
    """The kernel's uses come from a file 3.11 could not parse before: the scanner names its
    removed API at its own line, and the profile reads its ops."""
    from matrix.scan import scan_paths

    body = """
    type Grid = tuple[int, ...]
    def launch[T](x: T) -> T:
        print(f"{"grid"}")
        k[(1,)](x)
        return x

    @triton.jit
    def k(x, BT: tl.constexpr = 16):
        p = tl.make_block_ptr(x, (BT,), (1,), (0,), (BT,), (0,))
        tl.store(p, tl.maximum(tl.load(p), 0.0))
    """
    found = profiled_package(tmp_path, {"k.py": body})
    assert any(u.op == "binary_fn.maximum" for u in found), sorted({u.op for u in found})
    report = scan_paths([tmp_path / "pkg"])
    assert not report.skipped, report.skipped
    lines = {f.line for f in report.findings if f.rule.id == "TRI001"}
    assert lines == {15}, [(f.rule.id, f.line) for f in report.findings]


# -------------------------------------------------- files that do not parse and cannot matter


@pytest.fixture
def gate_results() -> Path:
    return REPO / "reports" / "raw"  # (a census recorded: the kernel alone is SAFE)


KERNEL = """\
import torch
import triton
import triton.language as tl

@triton.jit
def k(x, o, BT: tl.constexpr):
    tl.store(o + tl.arange(0, BT), tl.load(x + tl.arange(0, BT)))

def launch(x):
    o = torch.empty_like(x)
    k[(1,)](x, o, BT=16)
    return o

def get_table(n):
    return [[1] * n]
"""


def _gate(tmp_path: Path, raw: Path, unparsed: str) -> tuple[int, str, dict]:
    team = tmp_path / "team"
    team.mkdir(exist_ok=True)
    (team / "ops.py").write_text(KERNEL)
    (team / "other.py").write_text(textwrap.dedent(unparsed))
    return run_gate(tmp_path, raw, "--scan", str(team))


def test_an_unparsed_file_naming_nothing_of_the_kernels_leaves_the_verdict_to_the_rest(
    tmp_path, gate_results
):
    """m2's ``directory = # Enter path``, llmc's Hadamard table past the parse limit: neither
    names Triton nor anything that reaches a kernel, so neither can hide a use. It is named
    in a note; the verdict is the rest's. (It was undecidable.)"""
    template = """
    import json
    from .ops import get_table  # a name of the read files that reaches no kernel
    directory = # Enter path to your data directory here
    def main():
        return get_table(3)  # launch(x) in a comment calls nothing
    """
    code, md, doc = _gate(tmp_path, gate_results, template)
    assert code == 0, md
    assert not doc["undecidable"], doc["undecidable"]
    assert "other.py: not read (SyntaxError" in md and "nothing in it reaches a kernel" in md


@pytest.mark.parametrize(
    "unparsed",
    [
        "from .ops import launch\nx = launch(\n",  # the wrapper that launches the kernel
        "from . import ops\ndirectory = #\nops.get_table(3)\n",  # the module, then anything
        "from .ops import launch as _run\ndef launch(x):\n    return _run(x) +\n",  # an alias
        "import triton\nx = (\n",  # Triton itself
        "from .ops import k\nk[(1,)](x, y, BT=\n",  # the kernel
    ],
)
def test_an_unparsed_file_naming_a_way_into_a_kernel_stays_undecidable(
    tmp_path, gate_results, unparsed
):
    code, md, doc = _gate(tmp_path, gate_results, unparsed)
    assert code == 2, md
    assert any("other.py" in u and "not read" in u for u in doc["undecidable"]), doc


# ------------------------------------------------------------------ kernels under a jit wrapper

WRAPPERS = """
def try_decorate(get):
    def new(*args, **kwargs):
        return get()(*args, **kwargs)
    return new

triton_jit = try_decorate(lambda: triton.jit)

def my_jit(fn):
    return triton.jit(fn)

again = try_decorate(lambda: my_jit)
"""

WRAPPED = """
from pkg.wrappers import again, my_jit, triton_jit

@triton_jit()
def a(x, BT: tl.constexpr):
    p = tl.make_block_ptr(x, (BT,), (1,), (0,), (BT,), (0,))
    tl.store(p, tl.maximum(tl.load(p), 0.0))

@my_jit
def b(x, BT: tl.constexpr):
    tl.store(x + tl.arange(0, BT), tl.minimum(tl.load(x + tl.arange(0, BT)), 1.0))

@again
def c(x, BT: tl.constexpr):
    tl.store(x + tl.arange(0, BT), tl.abs(tl.load(x + tl.arange(0, BT))))
"""


def test_a_kernel_under_the_trees_own_jit_wrapper_is_a_kernel(tmp_path):
    """Fast-LLM's ``triton_jit = try_decorate(lambda: triton.jit)``, used as
    ``@triton_jit()``: its 36 kernels were not read (0 kernels, 0 uses: SAFE). A wrapper is a
    module-level name bound to what names ``triton.jit`` (or another wrapper), or a function
    whose body does."""
    from matrix.scan import scan_paths

    found = profiled_package(tmp_path, {"wrappers.py": WRAPPERS, "k.py": WRAPPED})
    assert {u.kernel for u in found} >= {"a", "b", "c"}, sorted({u.kernel for u in found})
    assert {u.op for u in found} >= {"binary_fn.maximum", "binary_fn.minimum"}
    report = scan_paths([tmp_path / "pkg"])
    assert {f.line for f in report.findings if f.rule.id == "TRI001"} == {11}


def test_a_kernel_under_a_decorator_the_gate_cannot_see_into_is_undecidable(tmp_path):
    """A function that calls ``tl.load`` under a decorator from elsewhere (not ``triton.jit``,
    not a wrapper the tree shows) is a kernel whose uses the gate cannot read: never SAFE on
    the rest. A decorated host function that only names a dtype, or calls ``tl.constexpr``,
    is not one; nor is a function under Triton's own ``core.extern``."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "ops.py").write_text(
        textwrap.dedent("""\
        import functools
        import triton
        import triton.language as tl
        from elsewhere import compile_kernel

        @compile_kernel(debug=False)
        def k(x, BT: tl.constexpr):
            tl.store(x + tl.arange(0, BT), tl.load(x + tl.arange(0, BT)))

        @functools.lru_cache
        def dtype_of(name):
            return {"fp16": tl.float16}.get(name, tl.constexpr(1))

        @tl.core.extern
        def ext(arg0, _semantic=None):
            return tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [arg0], dtype=tl.int32,
                                             is_pure=True, pack=1, _semantic=_semantic)

        @triton.autotune(configs=[], key=[])
        @compile_kernel()
        def k2(x):
            tl.store(x, 1)
        """)
    )
    code, md, doc = run_gate(tmp_path, REPO / "reports" / "raw", "--scan", str(team))
    assert code == 2, md
    unknown = [u for u in doc["undecidable"] if "does not read as triton.jit" in u]
    assert len(unknown) == 2 and "k (line 7) calls tl.store (line 8)" in unknown[0], unknown
    # autotune sits on a kernel's own: the decorator named is the one the gate cannot read
    assert "k2 (line 21) calls tl.store (line 22) under @compile_kernel()" in unknown[1]
    assert "@compile_kernel(debug=False)" in unknown[0]


def test_a_kernel_defined_inside_a_test_or_a_cached_factory_is_judged_on_its_own(tmp_path):
    """jax-triton's tests and whisper's ``@lru_cache def median_kernel(w)`` define their
    kernels inside a decorated function: the outer function is not a kernel the gate cannot
    see into (the kernel inside is read)."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "ops.py").write_text(
        textwrap.dedent("""\
        import functools
        import pytest
        import triton
        import triton.language as tl

        @functools.lru_cache(maxsize=None)
        def make(width):
            @triton.jit
            def k(x, BT: tl.constexpr):
                tl.store(x + tl.arange(0, BT), tl.load(x + tl.arange(0, BT)))
            return k

        @pytest.mark.parametrize("n", [1])
        def test_k(n):
            @triton.jit
            def inner(x):
                tl.store(x, tl.load(x))
            inner[(1,)](n)
        """)
    )
    code, md, doc = run_gate(tmp_path, REPO / "reports" / "raw", "--scan", str(team))
    assert code == 0 and not doc["undecidable"], (doc["undecidable"], md)
    assert "2 kernel(s) read" in md


def test_a_jit_wrapper_of_the_package_above_a_scanned_folder_is_found(tmp_path):
    """Triton-distributed scanned at ``python/triton_dist/kernels`` (no ``__init__.py``):
    ``import triton_dist`` is the package beside it, whose ``jit`` (re-exported from
    ``jit.py``) wraps ``triton.jit``. Its 235 kernels were read as functions under a decorator
    the gate cannot see into."""
    pkg = tmp_path / "python" / "dist"
    (pkg / "kernels" / "amd").mkdir(parents=True)
    (pkg / "__init__.py").write_text("import triton\nfrom .jit import jit\n")
    (pkg / "jit.py").write_text(
        textwrap.dedent("""\
        import triton

        def jit(fn=None, **kwargs):
            def decorator(fn):
                return triton.jit(fn, **kwargs)
            return decorator if fn is None else decorator(fn)
        """)
    )
    (pkg / "kernels" / "amd" / "ops.py").write_text(
        textwrap.dedent("""\
        import triton.language as tl
        import dist

        @dist.jit(do_not_specialize=["n"])
        def k(x, n, BT: tl.constexpr):
            tl.store(x + tl.arange(0, BT), tl.load(x + tl.arange(0, BT)) + n)
        """)
    )
    code, md, doc = run_gate(tmp_path, REPO / "reports" / "raw", "--scan", str(pkg / "kernels"))
    assert code == 0 and not doc["undecidable"], (doc["undecidable"], md)
    assert "1 kernel(s) read" in md and "`k` at `kernels/amd/ops.py:5`" in md, md


def test_a_kernel_under_a_wrapper_local_to_its_factory_is_a_kernel(tmp_path):
    """triton-viz's ``examples/multithread.py``: ``def make_kernels(): def wrap(fn): fn =
    triton.jit(fn) ...`` then ``@wrap def producer_consumer(...)``. Its kernels were read as
    functions under a decorator the gate cannot see into (undecidable)."""
    body = """
    def make_kernels(trace=None):
        def wrap(fn):
            fn = triton.jit(fn)
            return trace(fn) if trace else fn

        @wrap
        def producer(x, out, N: tl.constexpr):
            tl.atomic_add(out, tl.sum(tl.load(x + tl.arange(0, N))))

        return producer
    """
    found = profiled_package(tmp_path, {"k.py": body})
    assert {u.kernel for u in found} - {""} == {"producer"}, sorted(
        {(u.kernel, u.op) for u in found}
    )
    code, md, doc = run_gate(tmp_path, REPO / "reports" / "raw", "--scan", str(tmp_path / "pkg"))
    assert code == 0 and not doc["undecidable"], (doc["undecidable"], md)


def test_triton_handed_out_by_a_shim_outside_the_tree_is_triton(tmp_path):
    """NeMo-RL's fp8 kernels: ``from vllm.triton_utils import tl, triton`` then
    ``@triton.jit``. A module outside the tree that hands out ``triton`` and ``tl`` under those
    names re-exports Triton: its kernels were read as none (SAFE on 0 kernels)."""
    from matrix.scan import scan_paths

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "fp8.py").write_text(
        textwrap.dedent("""\
        from vllm.triton_utils import tl, triton

        @triton.jit
        def k(x, BT: tl.constexpr):
            p = tl.make_block_ptr(x, (BT,), (1,), (0,), (BT,), (0,))
            tl.store(p, tl.maximum(tl.load(p), 0.0))
        """)
    )
    report = scan_paths([pkg])
    assert {f.line for f in report.findings if f.rule.id == "TRI001"} == {5}
    code, md, doc = run_gate(tmp_path, REPO / "reports" / "raw", "--scan", str(pkg))
    assert code == 1 and "1 kernel(s) read" in md and not doc["undecidable"], md
    assert "**block_ptr** breaks" in md


def test_a_tl_or_triton_of_a_module_not_named_for_triton_is_not_triton(tmp_path):
    """BitBLAS's ``from tvm import tl`` is TileLang, and Pallas's ``triton`` module is a JAX
    backend: neither is read as Triton (no kernel, no Triton use)."""
    from matrix.scan import Project, SourceModule

    src = "from tvm import tl\nfrom jax.experimental.pallas import triton\n"
    src += "x = tl.load\ny = triton.jit\n"
    m = SourceModule("m.py", "m", False, src, ast.parse(src))
    imports = Project([m]).imports(m)
    x, y = (stmt.value for stmt in m.tree.body[2:])  # type: ignore[attr-defined]
    assert imports.qualname(x) == "tvm.tl.load"
    assert imports.qualname(y) == "jax.experimental.pallas.triton.jit"
