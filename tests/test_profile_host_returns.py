"""A pointer the host makes float32 where the dtype travels through a host function's return
value, through calls from the repository outside the scanned folder, through
``torch.autograd.Function`` (``C.apply`` -> ``C.forward(ctx, ...)``, ``ctx.saved_tensors``),
or through dtype-keeping host ops (matrix/data/host_ops.toml): the kernel's scale operand is
float32 only, not the open fp16/bf16/fp32 (issue 39). Anything this reading cannot follow
stays open. Small kernels and wrappers written for these tests, shaped like lmdeploy's
blocked_gemm_fp8.py (``quant_fp8`` returning ``_quant_fp8_launcher(...)``'s ``out, scales``)
and mamba_ssm's mamba3 (``ADT = rearrange(-clamp(A.float()) * DT)`` passed through
``_Mamba3Function.apply``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matrix.analyze.profile.model import Profile
from matrix.gate.usage import build_profile

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"

KERNEL = """
@triton.jit
def scale_kernel(x_ptr, s_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    s = tl.load(s_ptr)
    tl.store(x_ptr + r, x / s)

"""

OPEN = {"float16", "bfloat16", "float32"}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def scale_dtypes(profile: Profile) -> set[str]:
    """The dtypes the kernel's ``s`` (the divisor) is read with, over every launch."""
    got: set[str] = set()
    for u in profile.uses:
        if u.op == "binary.truediv":
            pairs = set(u.combos) if u.combos else {
                (a, b) for a in u.operands[0] or () for b in u.operands[1] or ()
            }  # fmt: skip
            got |= {b for _, b in pairs}
    assert got, sorted({u.op for u in profile.uses})
    return got


def scanned(tmp_path: Path, host: str) -> set[str]:
    write(tmp_path / "k.py", HEAD + textwrap.dedent(KERNEL) + textwrap.dedent(host))
    return scale_dtypes(build_profile([str(tmp_path)], [], []))


def test_a_return_value_types_what_is_unpacked_from_it(tmp_path: Path) -> None:
    # quant's scales come from make_scales, whose return is _launcher's ``x, scales``
    host = """
    def _launcher(x, scales):
        return x, scales


    def make_scales(x):
        scales = x.new_empty(4, dtype=torch.float32)
        return _launcher(x, scales)


    def quant(x):
        q, s = make_scales(x)
        scale_kernel[(1,)](q, s, BLOCK=128)
    """
    assert scanned(tmp_path, host) == {"float32"}
    # ``s = only_scales(x)``: a whole return, not a tuple's element
    whole = """
    def only_scales(x):
        return torch.empty(4, dtype=torch.float32, device=x.device)


    def quant(x):
        scale_kernel[(1,)](x, only_scales(x), BLOCK=128)
    """
    assert scanned(tmp_path, whole) == {"float32"}


def test_a_return_this_reading_cannot_follow_stays_open(tmp_path: Path) -> None:
    # one return is the caller's own (unknown) tensor, one a float32: not one dtype
    host = """
    def pick(x, y, c):
        if c:
            return x
        return torch.empty(4, dtype=torch.float32)


    def quant(x, y, c):
        scale_kernel[(1,)](x, pick(x, y, c), BLOCK=128)
    """
    assert scanned(tmp_path, host) == OPEN
    # a returned name bound to a tuple elsewhere, and a generator: not followed
    held = """
    def pair(x):
        out = (x, torch.empty(4, dtype=torch.float32))
        return out


    def quant(x):
        q, s = pair(x)
        scale_kernel[(1,)](q, s, BLOCK=128)
    """
    assert scanned(tmp_path, held) == OPEN
    # a function returning its own call's element: followed only as deep as the bound allows
    recursive = """
    def again(x):
        return again(x)


    def quant(x):
        q, s = again(x)
        scale_kernel[(1,)](q, s, BLOCK=128)
    """
    assert scanned(tmp_path, recursive) == OPEN


def repo(tmp_path: Path, outside: str) -> Path:
    """A repository (pyproject.toml) with the kernel folder ``pkg/kernels`` (scanned), the
    given caller in ``pkg/model.py`` (not scanned) and a test that passes fp16 scales."""
    write(tmp_path / "pyproject.toml", "[project]\nname = 'pkg'\n")
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "kernels" / "__init__.py", "")
    wrapper = """
    def scaled(x, s):
        scale_kernel[(1,)](x, s, BLOCK=128)
    """
    write(
        tmp_path / "pkg" / "kernels" / "k.py",
        HEAD + textwrap.dedent(KERNEL) + textwrap.dedent(wrapper),
    )
    write(tmp_path / "pkg" / "model.py", "import torch\n" + textwrap.dedent(outside))
    # a test suite is not read for callers ([callers] skip_dirs): its tensors come from fixtures
    write(
        tmp_path / "tests" / "test_k.py",
        """
    from pkg.kernels.k import scaled


    def test_scaled(x, s):
        scaled(x, s)
    """,
    )
    return tmp_path / "pkg" / "kernels"


def test_callers_outside_the_scanned_folder_type_a_wrapper(tmp_path: Path) -> None:
    kernels = repo(tmp_path, """
    from pkg.kernels.k import scaled


    def run(x):
        s = torch.ones(4, dtype=torch.float32, device=x.device)
        scaled(x, s)
    """)  # fmt: skip
    profile = build_profile([str(kernels)], [], [])
    assert scale_dtypes(profile) == {"float32"}
    assert profile.sources[0] == "1 file(s) outside --scan read for host calls"
    # the outside file is read for host typing only: nothing of it is profiled
    assert not any("model.py" in u.path for u in profile.uses)


def test_an_outside_caller_that_passes_an_unknown_tensor_keeps_it_open(tmp_path: Path) -> None:
    half = repo(tmp_path / "half", """
    from pkg.kernels.k import scaled


    def run(x, s):
        scaled(x, s.half())
    """)  # fmt: skip
    assert scale_dtypes(build_profile([str(half)], [], [])) == {"float16"}
    # a second caller passes what nothing types: every call counts, so it stays open
    unknown = repo(tmp_path / "unknown", """
    from pkg.kernels.k import scaled


    def run(x, s):
        scaled(x, s.half())


    def other(x, s):
        scaled(x, s)
    """)  # fmt: skip
    assert scale_dtypes(build_profile([str(unknown)], [], [])) == OPEN


def test_autograd_apply_calls_forward_and_backward_reads_what_it_saved(tmp_path: Path) -> None:
    host = """
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, s):
            scale_kernel[(1,)](x, s, BLOCK=128)
            ctx.save_for_backward(x, s)
            return x

        @staticmethod
        def backward(ctx, g):
            x, s = ctx.saved_tensors
            scale_kernel[(1,)](g, s, BLOCK=128)
            return g, None


    def api(x):
        return Scale.apply(x, torch.ones(4, dtype=torch.float32, device=x.device))
    """
    write(tmp_path / "k.py", HEAD + textwrap.dedent(KERNEL) + textwrap.dedent(host))
    profile = build_profile([str(tmp_path)], [], [])
    lines = {u.line for u in profile.uses if u.op == "binary.truediv"}
    assert scale_dtypes(profile) == {"float32"}, lines


def test_dtype_keeping_host_ops_and_arithmetic(tmp_path: Path) -> None:
    # mamba3's ADT: float32 made, negated, clamped, times a tensor nothing types, rearranged
    host = """
    from einops import rearrange


    def act(x):
        neg = x.clamp_max(0)
        return x.clamp_min(0) + torch.reciprocal(1 - neg)


    def run(x, dd_a, dt):
        a = -act(dd_a.to(torch.float32))
        a = torch.clamp(a, max=-1e-4)
        adt = a * dt
        adt = rearrange(adt, "b l n -> b n l")
        adt = adt.contiguous() if not adt.is_contiguous() else adt
        scale_kernel[(1,)](x, adt, BLOCK=128)
    """
    assert scanned(tmp_path, host) == {"float32"}
    # fp16 * bf16: neither wins over every open type ([arithmetic] wins_over_open): unknown
    mixed = """
    def run(x, w):
        s = x.to(torch.float16) * w.to(torch.bfloat16)
        scale_kernel[(1,)](x, s, BLOCK=128)
    """
    assert scanned(tmp_path, mixed) == OPEN
