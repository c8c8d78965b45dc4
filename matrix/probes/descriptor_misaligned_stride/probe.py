"""What a tensor descriptor whose row stride is not a multiple of 16 bytes does.

Same kernel as ``descriptor_misaligned``, over a 12 x 13 float32 matrix (row stride 52 bytes)
with an aligned base. Statuses as for ``descriptor_misaligned``.
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation
from matrix.probes.support.descriptor_rules import misaligned_case


def observe(ctx: Context) -> Observation:
    return misaligned_case(ctx, base_offset=0, row_stride=13, what="row stride of 52 bytes")
