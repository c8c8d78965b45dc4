"""The upgrade gate: is it safe to move from a baseline Triton release to a candidate?

Compares results already recorded (``--results``: a folder of raw files or a ``matrix.json``);
it installs nothing and needs no Triton, torch or numpy::

    python -m matrix.gate --candidate 3.9.0 --results reports/raw [--baseline 3.8.0]
                          [--scan my_kernels/ ...] [--out triton-compat-gate]

``--baseline`` defaults to the release pinned in ``matrix/data/pinned.toml``. ``--candidate``
is required here: ``nox -s gate`` resolves its default (the newest release on the package index),
runs the cells that are missing, and passes both in. The project's own ``kernels/`` are always
scanned (``--no-project-scan`` turns that off); ``--scan`` adds a team's own sources.

Findings (matrix/gate/compare.py): a *regression* (a check that passes on the baseline fails,
errors, crashes or times out on the candidate: kernel numerics, compilation for an aot target,
the user's tests), a *breaking API* (a scanned use of an API whose probe says "removed" on the
candidate, or, from the API census (matrix/gate/api.py), a Triton name the scanned code uses that
the candidate lacks or that refuses the arguments passed), a *behaviour change* (any other probe
status difference, or a default the scanned code relies on that the census shows changed), which
fails the gate unless ``matrix/data/accepted_changes.toml`` acknowledges it with a reason.

Exit status (``EXIT_*``), fail closed:

- 0 safe: everything both sides recorded was compared and nothing is unsafe or undecided;
- 1 unsafe: at least one regression, breaking API or unacknowledged behaviour change (anything
  undecidable is listed as well);
- 2 undecidable: no results (or no installed cell) for either side, a candidate cell that did
  not install where the baseline's did, an incomplete cell, a backend recorded for the baseline
  but not the candidate, a passing check with no comparable candidate result, bad arguments,
  malformed data files, or any unexpected error. (A baseline cell that never installed is only a
  note: the upgrade loses nothing there.)

Output: a Markdown summary (verdict line first, fit for a pull-request comment), printed and
written to ``<out>/gate.md``, and the same as JSON in ``<out>/gate.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from matrix import cli
from matrix.analyze.census import CensusError, censuses_from_runs
from matrix.analyze.profile import Profile, load_map
from matrix.analyze.profile.declaration import Declaration, load_declaration
from matrix.core import REPO_ROOT, DataFileError, Release
from matrix.gate import api, lowering, policy, roots, targets, timing
from matrix.gate import compare as gc
from matrix.gate.arguments import (
    DEFAULT_OUT,
    OWN_CONFIG,
    PROJECT_CONFIG,
    PROJECT_KERNELS,
    UsageError,
    bench_folder,
    check_out,
    default_bench_folder,
    default_out,
    parser,
    recorded_releases,
    release_arg,
    split_device,
)
from matrix.gate.config import ACCEPTED_PATH, AcceptedChange, load_accepted, pinned_release
from matrix.gate.gate_report import (
    EXIT_SAFE,
    EXIT_UNDECIDABLE,
    EXIT_UNSAFE,
    SECTIONS,
    VERDICTS,
    GateReport,
)
from matrix.gate.markdown import ENTRIES_SHOWN, finding_groups, render_markdown, split_cell
from matrix.gate.profiled import apply_profile, stale_acknowledgements
from matrix.gate.usage import build_profile, coverage_text
from matrix.results import (
    NoValidator,
    Run,
    SchemaError,
    atomic_write_text,
    read_folder,
    read_runs,
)
from matrix.scan import ScanReport, load_rules, scan_paths

# The gate's parts live in their own modules; the names its readers use are importable here.
__all__ = [
    "DEFAULT_OUT",
    "ENTRIES_SHOWN",
    "EXIT_SAFE",
    "EXIT_UNDECIDABLE",
    "EXIT_UNSAFE",
    "PROJECT_CONFIG",
    "PROJECT_KERNELS",
    "SECTIONS",
    "VERDICTS",
    "GateReport",
    "GpuTimings",
    "UsageError",
    "apply_profile",
    "decide_runs",
    "default_bench_folder",
    "finding_groups",
    "gate",
    "gpu_timings",
    "main",
    "parser",
    "render_markdown",
    "run_gate",
    "split_cell",
    "split_device",
    "stale_acknowledgements",
    "write_outputs",
]


def gpu_timings(results: str | Path, accepted: str | Path) -> GpuTimings:
    """What the gate compares of GPU timings by default for ``results``."""
    folder = default_bench_folder(results)
    docs = timing.read_bench(folder) if folder else []
    return GpuTimings(docs, timing.load_slowdowns(accepted), timing.DEFAULT_THRESHOLD, folder)


def run_gate(args: argparse.Namespace) -> GateReport:
    """Everything but argument parsing and output; errors are recorded, never raised."""
    report = GateReport(baseline=args.baseline, candidate=args.candidate, results=args.results)
    team = bool(args.scan or args.tests)
    # This project's acknowledgements were written for its own kernels/: they decide only its
    # own verdict. A team's code is judged against the team's file alone.
    accepted_path = args.accepted or ("" if team else str(ACCEPTED_PATH))
    report.accepted_file = accepted_path or "accepted_changes.toml (yours: pass --accepted FILE)"
    try:
        baseline = release_arg("--baseline", args.baseline or pinned_release(args.pinned))
        report.baseline = str(baseline)
        candidate = release_arg("--candidate", args.candidate)
        report.candidate = str(candidate)
        results = _results_of(args, baseline, candidate)
        accepted = load_accepted(accepted_path, scoped=team) if accepted_path else []
        slowdowns = timing.load_slowdowns(accepted_path) if accepted_path else []
        if not 0 <= args.slowdown_threshold < 10:
            raise UsageError(
                f"--slowdown-threshold {args.slowdown_threshold}: expected a fraction like 0.10"
            )
        bench = bench_folder(args)
        bench_docs = timing.read_bench(bench) if bench else []
        # A folder's unreadable raw file is named and the rest compared, but it may hold either
        # side's cell: the verdict cannot be safe (undecidable below).
        runs, unreadable = read_folder(results) if results.is_dir() else (read_runs(results), [])
        scan_targets = [*args.scan, *args.tests]
        if not team and not args.no_project_scan and Path(PROJECT_KERNELS).is_dir():
            scan_targets.insert(0, PROJECT_KERNELS)
        # With the recorded censuses: the runtime matchers (a kernel's members reached through
        # a helper, a hook read off a launch result's class) resolve names only through them,
        # and the uses they find are the census check's too (matrix.scan.engine._derived_uses).
        censuses = censuses_from_runs(runs)
        scan = (
            scan_paths(scan_targets, load_rules(), censuses=censuses or None)
            if scan_targets
            else ScanReport()
        )
        # Read before the profile: its dtypes type what the sources cannot (report.declaration).
        own_dir = _own_dir(args, scan_targets)
        own = own_dir is not None
        report.declaration = _declaration(args, own_dir)
        profile = _profile(args, runs, report.declaration, candidate, own)
        if profile is not None and profile.imported:
            # the helper modules the kernels call from outside the scanned paths: scanned
            # too, so that their feature guards (`if callable(getattr(tl, ...))`) decide their
            # lines per release as the scanned code's do
            more = scan_paths(profile.imported, load_rules(), censuses=censuses or None)
            scan.findings += more.findings
            scan.files += more.files
        timings = GpuTimings(bench_docs, slowdowns, args.slowdown_threshold, bench)
    except (UsageError, DataFileError, SchemaError, NoValidator, FileNotFoundError) as e:
        report.errors.append(str(e))
        return report
    except OSError as e:
        report.errors.append(f"--results {args.results!r}: cannot read ({e})")
        return report

    report.scanned = scan_targets
    decide_runs(
        report,
        runs,
        baseline,
        candidate,
        accepted,
        scan,
        timings,
        profile,
        report.declaration,
        own=own and profile is not None,
    )
    report.stale_accepted = stale_acknowledgements(report, accepted, baseline, candidate)
    # A folder's unreadable raw file may hold a cell of either side: never safe.
    report.comparison.undecidable += [
        f"a raw file could not be read (it may hold a cell of either side): {m}" for m in unreadable
    ]
    return report


def _results_of(args: argparse.Namespace, baseline: Release, candidate: Release) -> Path:
    """``--results``, refused where the two releases are one, where it does not exist, or where
    its file names say it holds no cell of a side."""
    if baseline == candidate:
        raise UsageError(
            f"--baseline {baseline!r} and --candidate {candidate!r} are the same release"
        )
    results = Path(args.results)
    if not results.exists():
        raise UsageError(f"--results {args.results!r}: no such folder or file")
    recorded = recorded_releases(results)
    for side, release in (("baseline", baseline), ("candidate", candidate)):
        # told from the file names before anything is read: a mistyped release costs
        # a second, not the reading of every cell
        if recorded is not None and release not in recorded:
            raise UsageError(
                f"--{side} {release}: no results for the {side} Triton {release} in "
                f"--results {args.results!r}; recorded releases: " + ", ".join(map(str, recorded))
            )
    return results


def _declaration(args: argparse.Namespace, own_dir: Path | None) -> Declaration:
    """The declaration of the code judged: ``--config``, the project's own (OWN_CONFIG in its
    kernels/), or the one above the team's paths, with targets inferred where none is
    declared."""
    team = bool(args.scan or args.tests)
    config = getattr(args, "config", None)
    if config is None and own_dir is not None and (own_dir / OWN_CONFIG).is_file():
        config = str(own_dir / OWN_CONFIG)  # the project's own targets, its own verdict
    declaration = load_declaration(config, [*args.scan, *args.tests] if team else ())
    if team and declaration.targets is None:
        # nothing declared: the repository says whether the interpreter is a target
        inferred = targets.infer(
            [*args.scan, *args.tests], {"tests_device": getattr(args, "tests_device", None)}
        )
        declaration = replace(declaration, inferred=inferred)
    return declaration


def _profile(
    args: argparse.Namespace,
    runs: Sequence[Run],
    declaration: Declaration,
    candidate: Release,
    own: bool,
) -> Profile | None:
    """The usage profile of the code judged: the team's (--scan/--tests), the project's own
    kernels/ (``own``), or None."""
    if args.scan or args.tests:
        return build_profile(
            args.scan,
            args.tests,
            runs,
            declaration,
            baseline=args.baseline,
            candidate=str(candidate),
            launches_elsewhere=not own,
        )
    if own:
        # the project's verdict is about what kernels/ does, as a team's is about its code
        return build_profile(
            [PROJECT_KERNELS],
            [],
            runs,
            declaration,
            baseline=args.baseline,
            candidate=str(candidate),
            launches_elsewhere=False,
        )
    return None


def _own_dir(args: argparse.Namespace, scan_targets: Sequence[str]) -> Path | None:
    """This project's kernels/ folder when it is the code judged: no --scan/--tests (the
    project scan), or --scan of that folder alone (what the upgrade pages show); else None.
    Then its declared targets (OWN_CONFIG there) apply and the rows that measure it concern
    it."""
    if args.tests:
        return None
    if not args.scan:
        return Path(PROJECT_KERNELS) if PROJECT_KERNELS in scan_targets else None
    mine = cli.resolved(REPO_ROOT / PROJECT_KERNELS)
    if all(cli.resolved(p) == mine for p in args.scan):
        return mine
    return None


@dataclass(frozen=True)
class GpuTimings:
    """The GPU benchmark files the gate compares, with their acknowledgements and threshold;
    ``folder`` is None when no benchmark folder was given (timings are then not compared)."""

    docs: Sequence[dict[str, Any]] = ()
    slowdowns: Sequence[timing.AcceptedSlowdown] = ()
    threshold: float = timing.DEFAULT_THRESHOLD
    folder: Path | None = None


def decide_runs(
    report: GateReport,
    runs: Sequence[Run],
    baseline: Release,
    candidate: Release,
    accepted: Sequence[AcceptedChange],
    scan: ScanReport,
    timings: GpuTimings = GpuTimings(),
    profile: Profile | None = None,
    declaration: Declaration | None = None,
    own: bool = False,
) -> GateReport:
    """The gate's comparison of ``baseline`` and ``candidate`` over recorded ``runs``, into
    ``report`` (call ``report.decide()`` for the exit code). The report's upgrade pages call
    this too, so that a page's verdict is the gate's own.

    With ``declaration`` targets, what changed only in other columns moves to
    ``report.off_target`` (``matrix.gate.policy``), never blocking.

    With a team's ``profile`` the verdict is about that code (``apply_profile``): ``accepted``
    are then the team's own acknowledgements, applied only where they were justified."""
    # (``own``: the profile is this project's kernels/, whose acknowledgements are its own)
    project_accepted = accepted if profile is None or own else ()
    report.scan_findings = [f.to_dict() for f in scan.findings]
    report.errors += [f"scan: {e}" for e in scan.errors]
    sel = gc.select_runs(
        gc.runs_for(runs, baseline), gc.runs_for(runs, candidate), baseline, candidate
    )
    report.errors += sel.errors
    base, cand = sel.sides.base, sel.sides.cand
    if report.errors:
        return report
    try:
        report.comparison = gc.compare(
            base, cand, baseline, candidate, project_accepted, scan.findings, sel.uninstalled
        )
    except gc.DataError as e:
        report.errors.append(f"bad data in {report.results}: {e}")
    # The census's check of every Triton name the scanned code uses (matrix.gate.api); the
    # scanner lists them in ScanReport.uses. A scanner without that list checks nothing here,
    # and the report says so rather than passing silently.
    uses = getattr(scan, "uses", None)
    if uses is None:
        if report.scanned:
            report.comparison.notes.append(
                "API census not checked: the scanner did not list the Triton names the code uses"
            )
    else:
        try:
            api.check_uses(
                base, cand, baseline, candidate, uses, report.comparison, project_accepted
            )
        except CensusError as e:
            report.errors.append(f"bad API census in {report.results}: {e}")
    report.comparison.undecidable[:0] = sel.undecidable
    # A scanned file the scanner could not read may use anything the upgrade breaks: never safe.
    report.comparison.undecidable += [
        f"scan: a file was not read, so its Triton uses are unknown: {s}"
        for s in getattr(scan, "skipped", ())
    ]
    report.comparison.notes[:0] = sel.notes
    timed = timing.compare_timings(
        timings.docs, baseline, candidate, timings.slowdowns, timings.threshold
    )
    if timings.folder is None:
        timed.notes.append("no GPU benchmark folder (--bench): GPU timings not compared")
    for name in ("findings", "undecidable", "notes", "compared"):
        getattr(report.comparison, name).extend(getattr(timed, name))
    if declaration is not None:
        report.declaration = declaration
    moved, items = policy.split_targets(report.comparison, report.declaration)
    report.off_target += moved
    report.off_target_undecidable += items
    if profile is not None:
        apply_profile(report, profile, accepted, baseline, candidate, own=own,
                      censuses=censuses_from_runs(runs))  # fmt: skip
        report.coverage = coverage_text(sel.sides)
    # one blocking reason per root: what only says how a removed API behaves follows from it
    report.folded += roots.fold(
        report.comparison.findings, report.tied, load_map().probes, report.scanned
    )
    # and a lowering change that only follows from a result-dtype change at its lines
    report.folded_dtype += lowering.fold_dtype(
        report.comparison.findings, report.tied, load_map(), report.unused, report.may_why
    )
    # a change that only adds a warning: after the profile, so that only used ones are listed
    report.notices += policy.split_notices(report.comparison)
    if profile is not None:
        # a file of the team's code that could not be read, or a kernel the gate does not
        # recognise as one, may use anything that changed
        report.comparison.undecidable += [
            f"your code: not read, so its uses are unknown: {u}" for u in profile.unread
        ]
    return report


def write_outputs(report: GateReport, out: str | Path) -> str:
    markdown = render_markdown(report)
    out = Path(out)
    atomic_write_text(out / "gate.md", markdown)
    atomic_write_text(out / "gate.json", json.dumps(report.to_dict(), indent=1) + "\n")
    return markdown


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    device, rest = split_device(argv)
    if device == "cuda":
        from matrix.gate import legs

        return legs.main(argv)
    if device != "cpu":
        print(f"matrix.gate: --device {device!r}: expected cpu or cuda (exit 2)", file=sys.stderr)
        return EXIT_UNDECIDABLE
    return gate(parser().parse_args(rest))


def gate(args: argparse.Namespace) -> int:
    """The gate on parsed arguments (``parser``): decide, write gate.md/gate.json, print."""
    if args.out is None:
        args.out = str(default_out())
    try:
        check_out(args.out, args.results)
    except UsageError as e:
        print(f"matrix.gate: {e} (exit 2: undecidable)", file=sys.stderr)
        return EXIT_UNDECIDABLE
    try:
        report = run_gate(args)
        report.decide()
    except Exception:  # fail closed: an unexpected error is "undecidable", never "safe"
        report = GateReport(args.baseline, args.candidate, args.results)
        report.errors.append("internal error in the gate:\n" + traceback.format_exc())
        report.decide()
    try:
        markdown = write_outputs(report, args.out)
    except OSError as e:
        markdown = render_markdown(report)
        _print(markdown)
        print(f"matrix.gate: --out {args.out!r}: cannot write the report ({e})", file=sys.stderr)
        return EXIT_UNDECIDABLE
    _print(markdown)
    return report.exit_code


def _print(text: str) -> None:
    """Print, and let a closed pipe (``gate | head``) end the output, not the verdict."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Point stdout at /dev/null so that the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    cli.deprecated("python -m matrix.gate.verdict", "gate")
    sys.exit(cli.run(main, "matrix.gate"))
