"""What the host reading types, modeled on false gate entries of libraries nobody here had
tuned against (session 20); each test fails without its mechanism."""

from __future__ import annotations

from pathlib import Path

from matrix.analyze.profile.model import Use
from tests.support import operand_kinds, profiled_package


def _package(tmp_path: Path, files: dict[str, str]) -> list[Use]:
    return profiled_package(tmp_path, files)


SCRIPT = """
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n)
    tl.store(y_ptr + r, tl.maximum(0, x), mask=r < n)


def relu(x, y):
    relu_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
    return y


def get_inputs(n=1024, seed=False):
    if seed:
        torch.manual_seed(0)
    x = torch.randn(n, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    return x, y


if __name__ == "__main__":
    x, y = get_inputs(seed=True)
    relu_kernel[(8,)](x, y, x.numel(), BLOCK=128)
    {call}
"""


def test_a_launch_in_module_code_is_typed_like_one_in_a_function(tmp_path):
    """gpu-mode lectures (lecture_018): a script's ``__main__`` block unpacks ``x, y =
    get_inputs()`` (float32 tensors) and launches the kernel, and calls the wrapper with
    them. Module code was read as no scope at all: the launch's arguments were unknown, the
    kernel read again with every open 16/32-bit float, and ``tl.maximum(0, x)`` tied to
    3.9.0's bf16 changes. Module code is a scope of its own now: both launches pass float32."""
    wrapper = SCRIPT[SCRIPT.index("def relu(") : SCRIPT.index("def get_inputs")]
    assert wrapper in SCRIPT
    only_launch = SCRIPT.replace(wrapper, "").replace("{call}", "pass")
    for src in (SCRIPT.replace("{call}", "relu(x, y)"), only_launch):
        found = _package(tmp_path, {"k.py": src})
        kinds = operand_kinds(found, "binary_fn.maximum", lambda u: "tl.maximum" in u.code, 1)
        assert kinds == {"float32"}, kinds


def test_module_code_names_stay_out_of_functions(tmp_path):
    """A function's free name is not read through module code: ``x`` of ``__main__`` is not
    what another function's global ``x`` holds when it runs (a wrapper called elsewhere)."""
    src = SCRIPT.replace("{call}", "pass").replace(
        "def relu(x, y):",
        "def relu_global(y):\n    relu_kernel[(1,)](x, y, 1, BLOCK=128)\n\n\ndef relu(x, y):",
    )
    found = _package(tmp_path, {"k.py": src})
    kinds = operand_kinds(found, "binary_fn.maximum", lambda u: "tl.maximum" in u.code, 1)
    assert kinds > {"float32"}, kinds  # relu_global's x: open
