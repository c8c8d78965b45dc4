"""Performance across releases, in the style of the PyTorch HUD: one row per benchmark case,
one column per release, each cell split-K's time as a ratio to cuBLAS's time for the same call
in the same run (CUDA-graph replay time; the eager ``do_bench`` ratio is in the cell's title).

Reads the per-release GPU benchmark files (``reports/bench/*.json`` with ``"kind":
"triton-gpu-bench"``; their ``ratios`` hold per case ``graph``, ``eager`` and ``noise``, the
spread over the run's rounds). cuBLAS is the same library in every release's run, so the ratio
cancels machine drift. A cell is flagged as a slowdown or a speed-up by the gate's own timing
rule (``matrix.gate.timing.compare_timings``: beyond the threshold and the measured noise of
both runs) against the previous release measured at the same place; the flags are the gate's,
not a second rule.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from matrix.core import Release, release_key
from matrix.gate import timing as gate_timing
from matrix.measure.results import SchemaError

BENCH_KIND = "triton-gpu-bench"
IMPL = "splitk"


def is_release_bench(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == BENCH_KIND


@dataclass(frozen=True)
class PerfCell:
    release: str
    graph: float
    eager: float | None
    noise: float | None
    # "slower" or "faster" than the previous release by the gate's rule, else "".
    flag: str = ""
    evidence: str = ""

    @property
    def meaning(self) -> str:
        return {"slower": "breaking", "faster": "good"}.get(self.flag, "neutral")

    @property
    def title(self) -> str:
        noise = "" if self.noise is None else f", noise ±{self.noise:.1%}"
        eager = "" if self.eager is None else f"; eager (do_bench) {self.eager:.3f}"
        return f"{IMPL}/cuBLAS {self.graph:.3f} by CUDA-graph time{noise}{eager}" + (
            f"; {self.evidence}" if self.evidence else ""
        )


@dataclass
class PerfRow:
    case: str
    place: str
    cells: dict[str, PerfCell] = field(default_factory=dict)

    def sparkline(self, releases: Sequence[str]) -> str:
        """A small inline SVG of the ratio over the releases (1.0 = as fast as cuBLAS)."""
        points = [(i, self.cells[r].graph) for i, r in enumerate(releases) if r in self.cells]
        if len(points) < 2:
            return ""
        w, h = 90, 22
        top = max(max(v for _, v in points), 1.0) * 1.1
        n = max(len(releases) - 1, 1)

        def xy(i: int, v: float) -> str:
            return f"{i * w / n:.1f},{h - v * h / top:.1f}"

        one = h - h / top
        path = " ".join(xy(i, v) for i, v in points)
        label = escape(f"{self.case}: " + ", ".join(f"{v:.2f}" for _, v in points))
        return (
            f"<svg class='spark' viewBox='0 0 {w} {h}' width='{w}' height='{h}' role='img' "
            f"aria-label='{label}'><line x1='0' x2='{w}' y1='{one:.1f}' y2='{one:.1f}' "
            f"stroke='#b03030' stroke-dasharray='3 2'/><polyline fill='none' stroke='#2f5d8a' "
            f"stroke-width='1.5' points='{path}'/></svg>"
        )


@dataclass
class PerfView:
    releases: list[str]
    rows: list[PerfRow]
    flagged_by_gate: bool
    files: list[str]

    @property
    def geomeans(self) -> dict[str, float]:
        out = {}
        for r in self.releases:
            vals = [row.cells[r].graph for row in self.rows if r in row.cells]
            if vals:
                out[r] = math.exp(sum(math.log(v) for v in vals) / len(vals))
        return out


def read_bench_folder(bench_dir: Path) -> list[tuple[Path, Any]]:
    """Every ``*.json`` in ``bench_dir`` (sorted) with its document; none if there is no folder.

    The folder holds two kinds of file: per-release GPU files (``is_release_bench``, read here)
    and benchmark runs of one machine (``charts.load_bench``). A file that is not JSON is a
    SchemaError naming it.
    """
    if not bench_dir.is_dir():
        return []
    out = []
    for path in sorted(bench_dir.glob("*.json")):
        try:
            out.append((path, json.loads(path.read_text(encoding="utf-8"))))
        except json.JSONDecodeError as e:
            raise SchemaError(f"{path}: not JSON ({e})") from e
    return out


def read_release_benches(bench_dir: Path) -> list[dict[str, Any]]:
    """The per-release benchmark files in ``bench_dir`` (other JSON files are not these)."""
    docs = []
    for path, doc in read_bench_folder(bench_dir):
        if not is_release_bench(doc):
            continue
        for key in ("release", "column", "machine", "ratios"):
            if key not in doc:
                raise SchemaError(f"{path}.{key}: missing (a {BENCH_KIND} file field)")
        doc["_path"] = str(path)
        docs.append(doc)
    return docs


def _gate_timing() -> Any:
    """The gate's timing rules (``matrix.gate.timing``); a function so tests can stand in."""
    return gate_timing


def build_view(docs: Sequence[dict[str, Any]]) -> PerfView | None:
    if not docs:
        return None
    releases = sorted({str(Release.parse(d["release"])) for d in docs}, key=release_key)
    rows: dict[tuple[str, str], PerfRow] = {}
    for d in docs:
        place = f"{d['column']} ({d['machine']})"
        release = str(Release.parse(d["release"]))
        for q in d["ratios"]:
            if q.get("impl") != IMPL:
                continue
            row = rows.setdefault((place, q["case"]), PerfRow(q["case"], place))
            row.cells[release] = PerfCell(release, q["graph"], q.get("eager"), q.get("noise"))
    timing = _gate_timing()
    if timing is not None:
        prefix = getattr(timing, "SLOWDOWN_PREFIX", "slowdown ")
        for before, after in itertools.pairwise(releases):
            comparison = timing.compare_timings(docs, before, after, [])
            for f in comparison.findings:
                if not f.probe.startswith(prefix + IMPL + " "):
                    continue
                case = f.probe[len(prefix + IMPL + " ") :]
                _flag(rows, f.where, case, after, "slower", f.evidence[0] if f.evidence else "")
            for note in comparison.notes:
                if note.startswith(f"faster: {IMPL} "):
                    rest = note[len(f"faster: {IMPL} ") :]
                    case, _, tail = rest.partition(" on ")
                    _flag(rows, tail.split(": ", 1)[0], case, after, "faster", note)
    ordered = sorted(rows.values(), key=lambda r: (r.place, r.case))
    return PerfView(releases, ordered, timing is not None, [d["_path"] for d in docs])


def _flag(
    rows: dict[tuple[str, str], PerfRow], place: str, case: str, release: str, flag: str, ev: str
) -> None:
    row = rows.get((place, case))
    if row is None or release not in row.cells:
        return
    c = row.cells[release]
    row.cells[release] = PerfCell(c.release, c.graph, c.eager, c.noise, flag, ev)
