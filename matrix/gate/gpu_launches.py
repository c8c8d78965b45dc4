"""What a release's GPU launch of a fingerprint case computed, where the probe rows ask only a
compile (``matrix/data/gpu_launches.toml``, measured by scripts under notes/gpu-logs/).

3.9.0's compile refuses an in-kernel tensor descriptor whose constexpr stride is not a multiple
of 16 bytes, which 3.8.0's compile accepted: on an H200, 3.8.0's launch of it reads every row at
the stride rounded down to 16 bytes, silently wrong. Code that worked on the baseline (aligned
strides) is not affected, and code that was not gets an error instead of a wrong result: the
change is a fix for any code, listed with the measurement, never blocking.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from matrix.analyze.fingerprint import RIGHT_STATUSES, WRONG
from matrix.core import DATA_DIR, REJECTED, DataFileError, table_keys, tables_at, text_at
from matrix.gate.findings import GateFinding

LAUNCHES_PATH = DATA_DIR / "gpu_launches.toml"
KEYS = ("cell", "release", "target", "status", "device", "detail", "measured")
STATUSES = (WRONG, "right")  # what a launch computed against the case's rule


@dataclass(frozen=True)
class Launch:
    cell: str
    release: str
    target: str
    status: str
    device: str
    detail: str
    measured: str


@lru_cache(maxsize=1)
def launches(path: Path = LAUNCHES_PATH) -> tuple[Launch, ...]:
    """The measured launches, checked (a wrong key or value names it)."""
    rows = tables_at(path, "launch")
    out = []
    for i, raw in enumerate(rows):
        row = table_keys(path, f"launch[{i}]", raw, set(KEYS))
        for key in KEYS:
            text_at(path, f"launch[{i}]", row, key)
        if row["status"] not in STATUSES:
            raise DataFileError(path, f"launch[{i}] status", " or ".join(STATUSES), row["status"])
        out.append(Launch(*(row[k] for k in KEYS)))
    return tuple(out)


def refused_wrong(
    probe: str, where: str, baseline: str, before: str | None, after: str | None
) -> Launch | None:
    """The measured launch that makes this change a wrong result refused: the baseline's
    compile accepted ``probe`` on ``where`` (``aot:cuda:90``), the candidate's refuses it, and
    the baseline's GPU launch of it for that target computed it wrong; else None."""
    if before not in RIGHT_STATUSES or after != REJECTED:
        return None
    target = where.partition(":")[2]
    for launch in launches():
        if (launch.cell, launch.release, launch.target) == (probe, baseline, target):
            return launch if launch.status == WRONG else None
    return None


def fixed_by_refusal(f: GateFinding, baseline: str) -> bool:
    """Whether ``f`` refuses what the baseline's GPU computed wrong (``refused_wrong``); if so
    its evidence says so, with the measurement."""
    wrong = refused_wrong(f.probe, f.where, baseline, f.baseline, f.candidate)
    if wrong is None:
        return False
    f.evidence.append(
        f"on the GPU ({wrong.device}), {wrong.release}'s launch of this case computes it wrong: "
        f"{wrong.detail} (measured: {wrong.measured}); refusing it at compile breaks no code "
        "that worked"
    )
    return True
