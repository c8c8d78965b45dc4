"""Performance across releases, in the style of the PyTorch HUD: one row per benchmark case,
one column per release (newest first), each cell split-K's absolute time in µs by CUDA-graph
replay (GPU time alone). Lower is faster, everywhere on the pages.

Reads the per-release GPU benchmark files (``reports/bench/*.json`` with ``"kind":
"triton-gpu-bench"``: per record ``us_graph``; per case ``ratios`` to cuBLAS in the same run)
and repeated runs of a release (``bench/history/*.json`` of the same kind).

The noise band of a case is measured across runs, not rounds: the largest relative spread of
(a) cuBLAS's time for that case over every release's run (the same library each time: what
differs is the run) and (b) split-K's time for that case between two runs of the same release.
A cell is flagged slower or faster only when its time differs from the previous measured
release by more than its case's band, and by more than the gate's threshold (``MIN_CHANGE``).
The gate's own timing rule (``matrix.gate.timing``, ratios to cuBLAS against a threshold) is
named in each cell's title where it finds a slowdown.
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
from matrix.results import SchemaError

BENCH_KIND = "triton-gpu-bench"
# The smallest change flagged even where the noise band is narrower: the gate's slowdown
# threshold (a 1% move beyond a 0.7% band is real and of no consequence to a team).
MIN_CHANGE = gate_timing.DEFAULT_THRESHOLD
# A band wider than this (±100%: one run took twice the other's time) is shown capped, with the
# measured value in its tooltip: such a row is too noisy to say anything about speed.
BAND_CAP = 1.0
IMPL = "splitk"


def is_release_bench(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == BENCH_KIND


@dataclass(frozen=True)
class PerfCell:
    release: str
    graph: float
    eager: float | None
    noise: float | None
    # The gate's slowdown finding against the previous release (its evidence), else "".
    evidence: str = ""
    us: float | None = None  # split-K's CUDA-graph time in µs
    # "slower" or "faster" than the previous measured release beyond the case's noise band.
    flag: str = ""
    change: float | None = None  # us / previous release's us

    @property
    def meaning(self) -> str:
        return {"slower": "regression", "faster": "good"}.get(self.flag, "neutral")

    @property
    def title(self) -> str:
        noise = "" if self.noise is None else f" (rounds ±{self.noise:.1%})"
        eager = "" if self.eager is None else f"; eager (do_bench) {self.eager:.3f}"
        change = "" if self.change is None else f"; {self.change:.3f}x the previous release's time"
        gate = f"; the gate: {self.evidence}" if self.evidence else ""
        return f"{IMPL}/cuBLAS time {self.graph:.3f}{noise}{eager}{change}{gate}"


@dataclass
class PerfRow:
    case: str
    place: str
    cells: dict[str, PerfCell] = field(default_factory=dict)
    band: float | None = None  # the run-to-run noise band (relative), None if not measured
    band_from: str = ""

    @property
    def too_noisy(self) -> bool:
        """A band beyond ``BAND_CAP``: that row's times cannot show a change (none is flagged)."""
        return self.band is not None and self.band > BAND_CAP

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


@dataclass(frozen=True)
class Slowdown:
    case: str
    place: str
    before: str
    after: str
    before_us: float
    after_us: float

    @property
    def factor(self) -> float:
        return self.after_us / self.before_us


@dataclass
class PerfView:
    releases: list[str]
    rows: list[PerfRow]
    flagged_by_gate: bool
    files: list[str]
    repeats: list[str] = field(default_factory=list)  # releases measured more than once

    @property
    def newest_first(self) -> list[str]:
        return list(reversed(self.releases))

    @property
    def biggest_regression(self) -> Slowdown | None:
        """The flagged slowdown with the largest time factor between adjacent measured releases."""
        found = []
        for row in self.rows:
            prev = None
            for r in self.releases:
                c = row.cells.get(r)
                if c is None or c.us is None:
                    continue
                if c.flag == "slower" and prev is not None and prev.us:
                    found.append(Slowdown(row.case, row.place, prev.release, r, prev.us, c.us))
                prev = c
        return max(found, key=lambda s: s.factor, default=None)

    @property
    def flag_counts(self) -> dict[str, int]:
        out = {"slower": 0, "faster": 0}
        for row in self.rows:
            for c in row.cells.values():
                if c.flag:
                    out[c.flag] += 1
        return out

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


def case_name(record: dict[str, Any]) -> str:
    """A record's case as the ``ratios`` name it: ``64x64x8192 fp16 kn``."""
    return f"{record['m']}x{record['n']}x{record['k']} {record['dtype']} {record['layout']}"


def _graph_us(doc: dict[str, Any], impl: str) -> dict[str, float]:
    out = {}
    for r in doc.get("records", []):
        if r.get("impl") == impl and r.get("ok", True) and isinstance(r.get("us_graph"), float):
            out[case_name(r)] = r["us_graph"]
    return out


def _spread(values: Sequence[float]) -> float | None:
    return max(values) / min(values) - 1 if len(values) > 1 and min(values) > 0 else None


def noise_bands(
    docs: Sequence[dict[str, Any]], repeats: Sequence[dict[str, Any]]
) -> dict[tuple[str, str], tuple[float, str]]:
    """Per (place, case) the run-to-run band and what measured it (see the module docstring)."""
    out: dict[tuple[str, str], tuple[float, str]] = {}
    by_place: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by_place.setdefault(f"{d['column']} ({d['machine']})", []).append(d)
    for place, group in by_place.items():
        cublas: dict[str, list[float]] = {}
        for d in group:
            for case, us in _graph_us(d, "cublas").items():
                cublas.setdefault(case, []).append(us)
        for case, values in cublas.items():
            spread = _spread(values)
            if spread is not None:
                out[(place, case)] = (spread, f"cuBLAS over {len(values)} runs")
        for rep in repeats:
            if f"{rep['column']} ({rep['machine']})" != place:
                continue
            same = [d for d in group if str(Release.parse(d["release"])) == rep["release"]]
            for d in same:
                a, b = _graph_us(d, IMPL), _graph_us(rep, IMPL)
                for case in a.keys() & b.keys():
                    spread = _spread([a[case], b[case]])
                    if spread is not None and spread > out.get((place, case), (-1.0, ""))[0]:
                        out[(place, case)] = (spread, f"{IMPL} run twice on {rep['release']}")
    return out


def read_repeats(bench_dir: Path) -> list[dict[str, Any]]:
    """Repeated per-release runs (``bench_dir/history``), release normalised."""
    out = []
    for doc in read_release_benches(bench_dir / "history"):
        doc["release"] = str(Release.parse(doc["release"]))
        out.append(doc)
    return out


def build_view(
    docs: Sequence[dict[str, Any]], repeats: Sequence[dict[str, Any]] = ()
) -> PerfView | None:
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
            us = _graph_us(d, IMPL).get(q["case"])
            row.cells[release] = PerfCell(
                release, q["graph"], q.get("eager"), q.get("noise"), us=us
            )
    timing = _gate_timing()
    if timing is not None:
        prefix = getattr(timing, "SLOWDOWN_PREFIX", "slowdown ")
        for before, after in itertools.pairwise(releases):
            comparison = timing.compare_timings(docs, before, after, [])
            for f in comparison.findings:
                if not f.probe.startswith(prefix + IMPL + " "):
                    continue
                case = f.probe[len(prefix + IMPL + " ") :]
                _gate_says(rows, f.where, case, after, f.evidence[0] if f.evidence else "")
    bands = noise_bands(docs, repeats)
    for (place, case), row in rows.items():
        row.band, row.band_from = bands.get((place, case), (None, ""))
        _flag_beyond_noise(row, releases)
    ordered = sorted(rows.values(), key=lambda r: (r.place, r.case))
    return PerfView(
        releases,
        ordered,
        timing is not None,
        [Path(d["_path"]).name for d in docs],
        sorted({r["release"] for r in repeats}, key=release_key),
    )


def _flag_beyond_noise(row: PerfRow, releases: Sequence[str]) -> None:
    """Each cell against the previous release measured in this row: flagged when the time
    moved by more than the row's band and by more than the gate's threshold (MIN_CHANGE);
    never flagged where no band was measured."""
    prev: PerfCell | None = None
    for r in releases:
        c = row.cells.get(r)
        if c is None or c.us is None:
            continue
        if prev is not None and prev.us:
            change = c.us / prev.us
            flag = ""
            if row.band is not None and abs(change - 1) > max(row.band, MIN_CHANGE):
                flag = "slower" if change > 1 else "faster"
            row.cells[r] = c = PerfCell(
                c.release, c.graph, c.eager, c.noise, c.evidence, c.us, flag, change
            )
        prev = c


def _gate_says(
    rows: dict[tuple[str, str], PerfRow], place: str, case: str, release: str, ev: str
) -> None:
    row = rows.get((place, case))
    if row is None or release not in row.cells:
        return
    c = row.cells[release]
    row.cells[release] = PerfCell(c.release, c.graph, c.eager, c.noise, ev, c.us)
