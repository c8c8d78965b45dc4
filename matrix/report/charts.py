"""Inline SVG charts, drawn here with no plotting library (pages must be self-contained).

Two charts: the time each matrix cell cost (install + probes), and, where benchmark files exist
(``reports/bench/*.json``), the split-K kernel's speed relative to cuBLAS per shape. Output is a
pure function of the input (fixed number formatting, sorted order), so pages stay byte-identical.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from matrix.core import release_key
from matrix.report import perf
from matrix.report.model import install_seconds, is_gpu_run, probe_seconds
from matrix.results import Run, SchemaError

# Colours match the page's CSS variables (style.css); SVG is inlined, so they are spelled out.
INSTALL_COLOUR = "#9db4d0"
PROBES_COLOUR = "#2f5d8a"
IMPL_COLOURS = {
    "splitk": "#2f5d8a",
    "splitk_deterministic": "#7a9cc6",
    "tiled": "#c98a2b",
}
# Implementations compared with cuBLAS, in legend order.
COMPARED_IMPLS = ("splitk", "splitk_deterministic", "tiled")
BENCH_FIELDS = {"m": int, "n": int, "k": int, "dtype": str, "layout": str, "impl": str, "us": float}

WIDTH = 760
LABEL_W = 210
BAR_H = 16
GAP = 6
FONT = "font-family='system-ui, sans-serif' font-size='12'"


def _num(x: float) -> str:
    """Coordinates with two decimals: enough for a screen, stable as text."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _nice_step(top: float, ticks: int = 5) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about ``ticks`` ticks."""
    raw = top / ticks if top > 0 else 1.0
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))


def _axis_top(top: float) -> float:
    step = _nice_step(top)
    return step * max(1, math.ceil(top / step - 1e-9))


def _axis(x0: float, x1: float, y: float, top: float, unit: str) -> list[str]:
    step = _nice_step(top)
    out = [f"<line x1='{_num(x0)}' y1='{_num(y)}' x2='{_num(x1)}' y2='{_num(y)}' stroke='#888'/>"]
    for i in range(round(top / step) + 1):
        v = i * step
        x = x0 + (x1 - x0) * v / top
        out.append(
            f"<line x1='{_num(x)}' y1='{_num(y)}' x2='{_num(x)}' y2='{_num(y + 4)}' stroke='#888'/>"
        )
        out.append(
            f"<text x='{_num(x)}' y='{_num(y + 16)}' text-anchor='middle' {FONT} fill='#555'>"
            f"{_num(v)}{unit}</text>"
        )
    return out


def _svg(height: float, body: list[str], title: str) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' role='img' "
        f"viewBox='0 0 {WIDTH} {_num(height)}' width='{WIDTH}' height='{_num(height)}'>"
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def run_label(run: Run) -> str:
    triton = run.env.get("triton") or "?"
    if is_gpu_run(run):
        gpu = run.env["gpu"]
        name = gpu.get("name", "GPU") if isinstance(gpu, dict) else str(gpu)
        return f"{triton} · {name}"
    return f"{triton} · numpy {run.env.get('numpy') or '?'}"


def time_chart(runs: Sequence[Run]) -> str:
    """Horizontal stacked bars: install seconds and probe seconds for every run (matrix cell)."""
    if not runs:
        return ""
    runs = sorted(
        runs,
        key=lambda r: (
            release_key(r.env.get("triton")),
            is_gpu_run(r),
            release_key(r.env.get("numpy")),
            r.id,
        ),
    )
    rows = []
    for r in runs:
        install, probes = install_seconds(r), probe_seconds(r)
        rows.append((run_label(r), install, probes, r))
    top = max(i + p for _, i, p, _ in rows) or 1.0
    top = _axis_top(top)
    x0, x1 = LABEL_W, WIDTH - 60
    legend_y = 14
    body = [
        f"<rect x='{x0}' y='{legend_y - 10}' width='12' height='12' fill='{INSTALL_COLOUR}'/>",
        f"<text x='{x0 + 18}' y='{legend_y}' {FONT}>install</text>",
        f"<rect x='{x0 + 80}' y='{legend_y - 10}' width='12' height='12' fill='{PROBES_COLOUR}'/>",
        f"<text x='{x0 + 98}' y='{legend_y}' {FONT}>probes (sum of result seconds)</text>",
    ]
    y = 28.0
    for label, install, probes, run in rows:
        wi = (x1 - x0) * install / top
        wp = (x1 - x0) * probes / top
        tip = escape(
            f"{run.id}: install {install:.2f} s ({run.install.get('status')}), "
            f"probes {probes:.2f} s, total {install + probes:.2f} s"
        )
        body.append(
            f"<text x='{x0 - 8}' y='{_num(y + BAR_H - 4)}' text-anchor='end' {FONT}>"
            f"{escape(label)}</text>"
        )
        body.append(
            f"<g><title>{tip}</title>"
            f"<rect x='{x0}' y='{_num(y)}' width='{_num(wi)}' height='{BAR_H}' "
            f"fill='{INSTALL_COLOUR}'/>"
            f"<rect x='{_num(x0 + wi)}' y='{_num(y)}' width='{_num(wp)}' height='{BAR_H}' "
            f"fill='{PROBES_COLOUR}'/></g>"
        )
        body.append(
            f"<text x='{_num(x0 + wi + wp + 4)}' y='{_num(y + BAR_H - 4)}' {FONT} fill='#333'>"
            f"{install + probes:.1f} s</text>"
        )
        y += BAR_H + GAP
    body += _axis(x0, x1, y + 2, top, " s")
    return _svg(y + 26, body, "Seconds per matrix cell: install plus probes")


@dataclass(frozen=True)
class Ratio:
    """One bar of the benchmark chart: an implementation's time over cuBLAS's time (lower is
    faster; below 1 it beats cuBLAS): one direction with every page of the report."""

    shape: str
    impl: str
    ratio: float
    us: float
    cublas_us: float
    record: dict[str, Any]
    # The eager (do_bench) ratio beside a graph-time ratio; None when the bar is eager already.
    eager_ratio: float | None = None


@dataclass
class BenchSet:
    """One benchmark file: its ratios, what could not be compared, and its metadata."""

    name: str
    ratios: list[Ratio]
    meta: dict[str, Any] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)

    @property
    def chart(self) -> str:
        return bench_chart(self)

    @property
    def meta_text(self) -> str:
        """The file's other top-level keys, flattened: ``env: triton 3.9.0, gpu NVIDIA H200``."""
        parts = []
        for key, value in sorted(self.meta.items()):
            if isinstance(value, dict):
                value = ", ".join(f"{k} {v}" for k, v in sorted(value.items()))
            parts.append(f"{key}: {value}")
        return "; ".join(parts)


def _records(doc: Any, where: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if isinstance(doc, list):
        return doc, {}
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):
        return doc["records"], {k: v for k, v in doc.items() if k != "records"}
    raise SchemaError(f"{where}: expected a list of records or {{'records': [...]}}")


def _check(rec: Any, where: str) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise SchemaError(f"{where}: expected an object, got {type(rec).__name__}")
    for name, typ in BENCH_FIELDS.items():
        if name not in rec:
            raise SchemaError(f"{where}.{name}: missing")
        ok = isinstance(rec[name], typ) or (typ is float and isinstance(rec[name], int))
        if not ok or isinstance(rec[name], bool):
            raise SchemaError(f"{where}.{name}: expected {typ.__name__}, got {rec[name]!r}")
    if rec["us"] <= 0:
        raise SchemaError(
            f"{where}.us: expected a positive time in microseconds, got {rec['us']!r}"
        )
    return rec


def bench_ratios(records: Sequence[dict[str, Any]]) -> tuple[list[Ratio], list[str]]:
    """Implementation time / cuBLAS time per (shape, dtype, layout); the fastest record of each.

    Returns the ratios and the groups that had no cuBLAS record to compare with.
    """
    # CUDA-graph time (GPU time alone) where every record has it; do_bench's eager time counts
    # host time on small shapes, so it is shown beside, not instead.
    field_ = "us_graph" if records and all(_positive(r.get("us_graph")) for r in records) else "us"
    groups: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for rec in records:
        key = (rec["m"], rec["n"], rec["k"], rec["dtype"], rec["layout"])
        best = groups.setdefault(key, {}).get(rec["impl"])
        if best is None or rec[field_] < best[field_]:
            groups[key][rec["impl"]] = rec
    ratios, unmatched = [], []
    for key in sorted(groups, key=lambda k: tuple(str(x) if isinstance(x, str) else x for x in k)):
        m, n, k, dtype, layout = key
        shape = f"{m}×{n}×{k} {dtype} {layout}"
        impls = groups[key]
        if "cublas" not in impls:
            unmatched.append(f"{shape}: no cublas record")
            continue
        base = impls["cublas"][field_]
        for impl in COMPARED_IMPLS:
            if impl in impls:
                rec = impls[impl]
                eager = rec["us"] / impls["cublas"]["us"] if field_ != "us" else None
                ratios.append(Ratio(shape, impl, rec[field_] / base, rec[field_], base, rec, eager))
    return ratios, unmatched


def _positive(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and x > 0


def load_bench(bench_dir: Path) -> list[BenchSet]:
    """Every ``*.json`` in ``bench_dir`` (sorted); none if the folder does not exist."""
    out = []
    for path, doc in perf.read_bench_folder(bench_dir):
        if perf.is_release_bench(doc):
            continue  # a per-release GPU file: the performance-across-releases page (perf.py)
        records, meta = _records(doc, str(path))
        checked = [_check(r, f"{path}[{i}]") for i, r in enumerate(records)]
        ratios, unmatched = bench_ratios(checked)
        out.append(BenchSet(path.name, ratios, meta, unmatched))
    return out


def bench_chart(bench: BenchSet) -> str:
    """Grouped horizontal bars of impl/cuBLAS time per shape, a line at 1.0 (as fast as cuBLAS)."""
    if not bench.ratios:
        return ""
    shapes = list(dict.fromkeys(r.shape for r in bench.ratios))
    impls = [i for i in COMPARED_IMPLS if any(r.impl == i for r in bench.ratios)]
    top = max(max(r.ratio for r in bench.ratios), 1.0)
    top = _axis_top(top)
    x0, x1 = LABEL_W, WIDTH - 60
    body = []
    lx = x0
    for impl in impls:
        body.append(f"<rect x='{lx}' y='4' width='12' height='12' fill='{IMPL_COLOURS[impl]}'/>")
        body.append(f"<text x='{lx + 18}' y='14' {FONT}>{escape(impl)}</text>")
        lx += 30 + 8 * len(impl)
    y = 28.0
    for shape in shapes:
        group = [r for r in bench.ratios if r.shape == shape]
        body.append(
            f"<text x='{x0 - 8}' y='{_num(y + BAR_H - 4)}' text-anchor='end' {FONT}>"
            f"{escape(shape)}</text>"
        )
        for r in sorted(group, key=lambda r: impls.index(r.impl)):
            w = (x1 - x0) * r.ratio / top
            extra = ", ".join(
                f"{k}={r.record[k]}" for k in ("split_k", "us_graph", "rel_err") if k in r.record
            )
            tip = escape(
                f"{shape} {r.impl}: {r.us:.2f} us vs cuBLAS {r.cublas_us:.2f} us "
                f"= {r.ratio:.2f}x" + (f" ({extra})" if extra else "")
            )
            body.append(
                f"<g><title>{tip}</title><rect x='{x0}' y='{_num(y)}' width='{_num(w)}' "
                f"height='{BAR_H - 3}' fill='{IMPL_COLOURS[r.impl]}'/></g>"
            )
            eager = "" if r.eager_ratio is None else f" (eager {r.eager_ratio:.2f}×)"
            body.append(
                f"<text x='{_num(x0 + w + 4)}' y='{_num(y + BAR_H - 5)}' {FONT} fill='#333'>"
                f"{r.ratio:.2f}×{eager}</text>"
            )
            y += BAR_H
        y += GAP + 4
    one = x0 + (x1 - x0) / top
    body.append(
        f"<line x1='{_num(one)}' y1='22' x2='{_num(one)}' y2='{_num(y)}' stroke='#b03030' "
        f"stroke-dasharray='4 3'/><text x='{_num(one + 3)}' y='{_num(y - 2)}' {FONT} "
        f"fill='#b03030'>cuBLAS</text>"
    )
    body += _axis(x0, x1, y + 2, top, "×")
    timer = "CUDA-graph time" if any(r.eager_ratio is not None for r in bench.ratios) else "eager"
    return _svg(
        y + 26, body, f"{bench.name}: kernel time / cuBLAS time by {timer} (lower is faster)"
    )
