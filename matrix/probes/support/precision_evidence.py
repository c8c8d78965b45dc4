"""Read the input precision of a float32 ``tl.dot`` from compiled IR and assembly.

TTIR: ``tt.dot ... inputPrecision = tf32`` (newer releases) or ``allowTF32 = true`` (older);
``ieee`` is the attribute's default and is not printed, so a ``tt.dot`` with neither means ieee.
Assembly: on NVIDIA, tf32 shows as ``mma``/``wgmma`` with ``.tf32`` operands and ieee as scalar
``fma.rn.f32``; tf32x3 as several tf32 MMAs. On AMD, ``v_mfma_*xf32`` is tf32 (xf32) and
``v_mfma_f32_*_f32`` is full float32.
"""

from __future__ import annotations

import re

TTIR_PRECISION = re.compile(r"inputPrecision\s*=\s*(\w+)")
TTIR_ALLOW_TF32 = re.compile(r"allowTF32\s*=\s*(true|false)")


def ttir_precision(ttir: str) -> str | None:
    """The precision on the first ``tt.dot`` in TTIR, or None when there is no dot."""
    for line in ttir.splitlines():
        if "tt.dot" not in line:
            continue
        m = TTIR_PRECISION.search(line)
        if m:
            return m.group(1)
        m = TTIR_ALLOW_TF32.search(line)
        if m:
            return "tf32" if m.group(1) == "true" else "ieee"
        return "ieee"  # the default is not printed
    return None


def asm_instructions(asm: str) -> dict[str, int]:
    """Counts of the matrix/scalar instructions that tell the precision apart."""
    patterns = {
        "wgmma_tf32": r"wgmma[^\n]*\.tf32",
        "mma_tf32": r"mma\.sync[^\n]*\.tf32",
        "fma_f32": r"\bfma\.rn\.f32",
        "mfma_xf32": r"v_mfma\w*xf32",
        "mfma_f32": r"v_mfma_f32_\w+_f32\b",
    }
    return {name: len(re.findall(p, asm)) for name, p in patterns.items()}


def dot_line(ttir: str) -> str:
    for line in ttir.splitlines():
        if "tt.dot" in line:
            return line.strip()[:300]
    return ""
