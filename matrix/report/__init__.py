"""Report pages for the matrix: ``python -m matrix report --raw reports/raw --out reports``.

``model`` turns runs into the matrix the pages show, ``charts`` draws inline SVG, ``sources``
reads probe modules without importing them, ``verdicts`` fetches the seed-note claims, and
``render`` writes the pages. Works without Triton, torch or numpy installed.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path

from matrix.analyze.fingerprint import is_group
from matrix.gate.config import ACCEPTED_PATH
from matrix.report import (
    all_pairs,
    charts,
    fp_pages,
    freshness,
    known,
    model,
    perf,
    render,
    resource_rows,
    stamp,
    team,
    team_verdict,
    upgrade,
    verdicts,
)
from matrix.report.sources import PROBES_DIR
from matrix.results import Run, merge


@dataclass(frozen=True)
class Built:
    """What a build wrote, and whether the claims could be evaluated."""

    pages: list[Path]
    runs: int
    claims: verdicts.ClaimsOutcome
    skipped: bool = False  # nothing it reads changed since the last build (``stamp``)
    why: str = ""  # what changed since the last build (``stamp.changes``), where it built


def without_fingerprint_groups(run: Run) -> Run:
    return dataclasses.replace(run, results=[r for r in run.results if not is_group(r)])


def build(
    raw_dir: Path,
    out_dir: Path,
    *,
    bench_dir: Path | None = None,
    probes_dir: Path = PROBES_DIR,
    commit: str | None = None,
    date: str | None = None,
    rebuild: bool = False,
) -> Built:
    """Merge ``raw_dir`` into ``out_dir/matrix.json`` and write every page under ``out_dir``.

    ``bench_dir`` defaults to ``out_dir/bench``; benchmark charts appear only if it has files.
    ``commit``/``date`` name what the footers say the pages were built from (default: the last
    git commit of ``raw_dir``, ``matrix.report.freshness``). Unless ``rebuild``, a build whose
    inputs and outputs are as the last one left them (``matrix.report.stamp``) writes nothing.
    """
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    if not raw_dir.is_dir():
        raise FileNotFoundError(f"raw_dir: {raw_dir} is not a folder of raw result files")
    bench_dir = bench_dir if bench_dir is not None else out_dir / "bench"
    fresh = freshness.of_raw_folder(raw_dir, commit, date)

    def digest(suites: list[str]) -> stamp.Inputs:
        return stamp.read_inputs(
            raw_dir=raw_dir,
            bench_dir=bench_dir,
            probes_dir=probes_dir,
            accepted_path=ACCEPTED_PATH,
            freshness=repr(fresh),
            suites=suites,
        )

    last = None if rebuild else stamp.read(out_dir)
    if (
        last is not None
        and digest(last.suites).digest == last.inputs
        and stamp.outputs_intact(out_dir, last)
    ):
        pages = [out_dir / rel for rel in last.outputs]
        return Built(
            pages, last.runs, verdicts.ClaimsOutcome(error=last.claims_error), skipped=True
        )
    runs = merge(raw_dir, out_dir / "matrix.json")
    suites = team_verdict.suites_of(runs)
    inputs = digest(suites)  # read now: what this build is built from
    # Fingerprint groups (fp.<group>, thousands of cells a run) have pages of their own
    # (fp_pages, on matrix.analyze.fingerprint); the grid and the probe table show only the fp row.
    matrix = model.build([without_fingerprint_groups(r) for r in runs])
    claims = verdicts.evaluate_claims(matrix.runs)
    bench = charts.load_bench(bench_dir)
    performance = perf.build_view(
        perf.read_release_benches(bench_dir), perf.read_repeats(bench_dir)
    )
    resources = resource_rows.build_view(runs)
    # The gate sees every result (fingerprint cells, the API census), as on the command line.
    team_view = team.build_view(runs)
    gate_inputs = upgrade.gate_inputs(str(raw_dir), runs=runs)
    # The fingerprint group pages and the known issues read the same runs as the gate's pair
    # decisions, and nothing else: they share its workers (matrix.report.workers).
    decided = all_pairs.decide_all(
        matrix,
        runs,
        results=str(raw_dir),
        team=team_view,
        inputs=gate_inputs,
        also=[functools.partial(known.known_issues, runs),
              functools.partial(fp_pages.build_groups, runs)],
    )  # fmt: skip
    known_issues, fp_groups = decided.also
    pages = render.render_site(
        matrix,
        out_dir,
        claims=claims,
        bench=bench,
        probes_dir=probes_dir,
        upgrades=decided.pages,
        performance=performance,
        resources=resources,
        fp_groups=fp_groups,
        team_view=team_view,
        every_pair=decided.every,
        fresh=fresh,
        known=known_issues,
    )
    written = [out_dir / "matrix.json", *pages]
    stamp.write(out_dir, inputs, written, suites, len(runs), claims.error)
    why = stamp.changes(last, inputs) if not rebuild else "asked to (--rebuild)"
    if last is not None and not why:
        why = "a page it wrote was changed or removed since"
    return Built(written, len(runs), claims, why=why)
