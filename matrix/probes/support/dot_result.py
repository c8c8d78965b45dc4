"""Shared by the probes that ask which dtype a ``tl.dot`` returns (``dot_acc_out_dtype``,
``dot_f32_out_fp16``): the status from the result type of the first ``tt.dot`` in TTIR."""

import re

from matrix.probes.support.base import Observation

TT_DOT_RESULT = re.compile(r"tt\.dot.*->\s*tensor<[0-9x]+x(\w+)")


def classify_ttir(ttir: str) -> Observation:
    """Status from the result type of the first ``tt.dot`` in TTIR."""
    line = next((ln.strip() for ln in ttir.splitlines() if "tt.dot" in ln), "")
    m = TT_DOT_RESULT.search(line)
    if not m:
        return Observation("error", f"could not read tt.dot's result type: {line[:300]!r}")
    status = {"f16": "fp16", "f32": "fp32"}.get(m.group(1), m.group(1))
    return Observation(status, f"TTIR: {line[:300]}", {"ttir_dot": line[:300]})
