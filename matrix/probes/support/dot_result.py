"""Shared by the probes that ask which dtype a ``tl.dot`` returns (``dot_acc_out_dtype``,
``dot_f32_out_fp16``): the kernel side (``store_dtype_code``: the dtype traced, as a code) and
the observation (``dot_result``: refused, the result type of the first ``tt.dot`` in TTIR on
aot, else the code the run stored)."""

import re
from typing import Any

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, refusal

TT_DOT_RESULT = re.compile(r"tt\.dot.*->\s*tensor<[0-9x]+x(\w+)")


def classify_ttir(ttir: str) -> Observation:
    """Status from the result type of the first ``tt.dot`` in TTIR."""
    line = next((ln.strip() for ln in ttir.splitlines() if "tt.dot" in ln), "")
    m = TT_DOT_RESULT.search(line)
    if not m:
        return Observation("error", f"could not read tt.dot's result type: {line[:300]!r}")
    status = {"f16": "fp16", "f32": "fp32"}.get(m.group(1), m.group(1))
    return Observation(status, f"TTIR: {line[:300]}", {"ttir_dot": line[:300]})


@triton.jit
def store_dtype_code(d, code):
    """Store 16 or 32 where ``d`` traced as float16 or float32, else 1 (decided at trace)."""
    if d.dtype == tl.float16:
        tl.store(code, 16)
    elif d.dtype == tl.float32:
        tl.store(code, 32)
    else:
        tl.store(code, 1)


def dot_result(ctx: Context, out: Any, stored: Any, unset: int | None = None) -> Observation:
    """The observation of one run of such a probe's kernel (``out`` from ``exercise``): a
    refusal is ``rejected``; aot reads TTIR; a run reads the ``code`` it stored, where
    ``unset`` (the code's fill, if the probe gave one) means nothing was stored: ``skipped``,
    the dtype not observed (the 3.0/3.1 interpreter runs such a kernel and writes nothing
    back; python_min_runtime sees the same)."""
    refused = refusal(out, "rejected")
    if refused:
        return refused
    if ctx.backend == "aot":
        return classify_ttir(out.value.ir.get("ttir", ""))
    code = int(stored.item())
    if unset is not None and code == unset:
        return Observation("skipped", f"the kernel ran but stored nothing (the code kept its "
                           f"{unset} fill): the dot's dtype was not observed")  # fmt: skip
    status = {16: "fp16", 32: "fp32"}.get(code, f"other({code})")
    return Observation(status, f"the dot returned {status} (traced dtype code {code})",
                       {"code": code, "warnings": out.warning_texts()})  # fmt: skip
