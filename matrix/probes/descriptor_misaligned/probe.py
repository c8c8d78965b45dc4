"""What a tensor descriptor over a base address that is not 16-byte aligned does.

The kernel (the same padded load ``compat`` trials) gets ``src[:, 1:]`` of a float32 matrix:
its base is 4 bytes past a 16-byte boundary, while rows stay 64-byte aligned. Descriptors
require a 16-byte aligned base. The probe records where that is enforced:

rejected-compile: the compiler refuses (a CompilationError); rejected-host: the launcher
refuses before running; rejected-runtime: raised while running (the interpreter asserts);
accepted: it runs silently, with ``data.correct`` saying whether the numbers were still right.

On a GPU a misaligned access can poison the CUDA context, which is why every probe runs in its
own child process.
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation
from matrix.probes.support.descriptor_rules import misaligned_case


def observe(ctx: Context) -> Observation:
    return misaligned_case(ctx, base_offset=1, row_stride=17, what="base 4 bytes off alignment")
