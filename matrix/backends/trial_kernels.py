"""The two kernels ``matrix.backends.targets`` compiles to learn whether a release knows a
target: a plain store (every stage down to the binary, the assembler's list of architectures)
and an fp16 ``tl.dot`` (the matrix-instruction selection, which aborts on 3.0.0-3.2.0 for an
architecture it has no MMA version for). Kept at module level with ``tl`` imported here:
older releases resolve names only through the function's globals."""

from __future__ import annotations

import json
import sys

import triton
import triton.language as tl


@triton.jit
def store_trial(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32))


@triton.jit
def dot_trial(a_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    c = tl.dot(a, a)
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], c)


# (name, kernel, signature, constexprs)
TRIALS = (
    ("store", store_trial, {"out_ptr": "*fp32"}, {"BLOCK": 64}),
    ("fp16 tl.dot", dot_trial, {"a_ptr": "*fp16", "c_ptr": "*fp32"}, {"BLOCK": 64}),
)


def _trial(target: str) -> tuple[str, str | None]:
    """Compile the trial kernels in this process (the child of ``targets.run_trial``)."""
    from matrix.backends.aot import compile_for_target
    from matrix.core import AotUnavailable

    for name, fn, signature, constexprs in TRIALS:
        try:
            compile_for_target(fn, signature, constexprs, target, check_target=False)
        except AotUnavailable as e:
            return "tool", f"{name}: {e}"
        except Exception as e:  # the release refused the target: the answer
            # 3.2's ptxas error ends with a repro command naming temporary files: left out.
            text = " ".join(f"{type(e).__name__}: {e}".split()).split(" Repro command:")[0]
            return "unsupported", f"its {name} trial kernel does not compile: {text[:400]}"
    return "supported", None


if __name__ == "__main__":
    print(json.dumps(_trial(sys.argv[1])))
