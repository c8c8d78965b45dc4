"""The command line: ``python -m matrix scan PATH... [--results DIR --candidate X]``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from matrix.analyze.census import (
    CensusError,
    censuses_from_runs,
)
from matrix.core import DataFileError, Release, ReleaseError
from matrix.exitcodes import ExitCode
from matrix.results import SchemaError, read_runs
from matrix.scan.baseline import BaselineError, drop_known, read_baseline, write_baseline
from matrix.scan.engine import scan_paths
from matrix.scan.findings import ScanReport
from matrix.scan.judge import judge, same_release
from matrix.scan.output import render_text, summary_line, to_github, to_json, to_sarif
from matrix.scan.rule_file import load_rules
from matrix.scan.rules import DEFAULT_EXCLUDE, RULES_PATH, select_rules

# ----------------------------------------------------------------------------------------- CLI


def _codes(values: Sequence[str]) -> list[str]:
    return [c.strip().upper() for v in values for c in v.split(",") if c.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix scan",
        description="Report Triton upgrade hazards in kernel sources "
        "(rules: matrix/data/scan_rules.toml; the API census from --results).",
        epilog="Exit status: 0 nothing breaks or changes the candidate; 1 a breaking or "
        "changing finding that affects the candidate (or whose effect is unknown); "
        "2 bad arguments, a missing path, a bad rules or baseline file.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders to scan")
    p.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    p.add_argument("--results", metavar="DIR", help="recorded results (raw folder or matrix.json)")
    p.add_argument("--candidate", metavar="X", help="say whether each finding affects release X")
    p.add_argument(
        "--baseline-release",
        metavar="X",
        help="compare census defaults with release X (default: the release before the candidate)",
    )
    p.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="CODES",
        help="only these rules (comma list of ids or prefixes: TRI001,TRI1)",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODES",
        help="not these rules (ids or prefixes)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip paths matching GLOB (a file or folder name or path; repeatable)",
    )
    p.add_argument(
        "--no-default-excludes",
        action="store_true",
        help="also scan what is skipped by default inside a folder given: hidden folders (.*), "
        + ", ".join(e for e in DEFAULT_EXCLUDE if e != ".*"),
    )
    p.add_argument(
        "--sarif-root",
        metavar="DIR",
        help="SARIF: URIs relative to DIR, with uriBaseId SRCROOT (default: the git root of "
        "the first path, else the current folder)",
    )
    p.add_argument(
        "--baseline-file",
        metavar="FILE",
        help="do not report findings recorded in FILE (see --write-baseline-file)",
    )
    p.add_argument(
        "--write-baseline-file",
        metavar="FILE",
        help="record the current findings in FILE, then exit 0",
    )
    p.add_argument("--summary", action="store_true", help="text: only the summaries")
    p.add_argument("--rules", metavar="FILE", default=str(RULES_PATH), help=argparse.SUPPRESS)
    return p


def nothing_scanned(report: ScanReport, paths: Sequence[str]) -> str:
    """Why the scan read nothing (then it cannot vouch for anything: exit 2), or ""."""
    shown = " ".join(paths)
    if not report.files:
        return f"nothing to scan: no .py or .ipynb file under {shown}"
    if len(report.skipped) >= len(report.files):
        return f"nothing scanned: all {len(report.files)} file(s) under {shown} were skipped"
    return ""


def git_root(path: Path) -> Path:
    """The nearest folder above ``path`` holding ``.git``, else the current folder."""
    here = path.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return Path.cwd()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    if args.candidate is not None and args.results is None:
        print(
            "matrix.scan: --candidate needs --results DIR to know what the candidate does",
            file=sys.stderr,
        )
        return ExitCode.UNDECIDABLE
    try:
        for flag in ("candidate", "baseline_release"):
            value = getattr(args, flag)
            if value is not None:  # said as core spells it: 3.9 -> 3.9.0, as the gate does
                setattr(args, flag, str(Release.parse(value, f"--{flag.replace('_', '-')}")))
    except ReleaseError as e:
        print(f"matrix.scan: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    try:
        rules = select_rules(load_rules(args.rules), _codes(args.select), _codes(args.ignore))
        runs = read_runs(args.results) if args.results is not None else None
        known = read_baseline(args.baseline_file) if args.baseline_file else None
        censuses = censuses_from_runs(runs) if runs else {}
        defaults = () if args.no_default_excludes else DEFAULT_EXCLUDE
        report = scan_paths(
            args.paths, rules, exclude=(*defaults, *args.exclude), censuses=censuses
        )
    except (
        DataFileError,
        BaselineError,
        SchemaError,
        ReleaseError,
        CensusError,
        OSError,
        json.JSONDecodeError,
    ) as e:
        print(f"matrix.scan: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    if runs is not None and not runs:
        print(f"matrix.scan: --results {args.results!r}: no runs recorded there", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    why = nothing_scanned(report, args.paths)
    if why:
        for skipped in report.skipped:
            print(f"skipped: {skipped}", file=sys.stderr)
        print(f"matrix.scan: {why}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    if args.candidate is not None:
        recorded = sorted({*censuses, *(str(r.release) for r in runs or () if r.release)})
        if not any(same_release(r, args.candidate) for r in recorded):
            print(
                f"matrix.scan: --candidate {args.candidate}: nothing recorded for it in "
                f"{args.results} (recorded: {', '.join(recorded)}); cannot say what it does",
                file=sys.stderr,
            )
            return ExitCode.UNDECIDABLE
    if args.write_baseline_file:
        write_baseline(report.findings, args.write_baseline_file)
        print(
            f"matrix.scan: {len(report.findings)} finding(s) recorded in "
            f"{args.write_baseline_file}",
            file=sys.stderr,
        )
        return ExitCode.OK
    if known is not None:
        report.findings, report.known = drop_known(report.findings, known)
    if args.candidate is not None:
        # Say the release as it was recorded (3.9 -> 3.9.0), as the gate does.
        recorded = [*censuses, *(r.triton for r in runs or () if r.triton)]
        args.candidate = next(
            (r for r in recorded if same_release(r, args.candidate)), args.candidate
        )
    notes = judge(report.findings, runs, args.candidate, censuses, args.baseline_release)
    if args.format == "json":
        print(json.dumps(to_json(report, notes, args.candidate), indent=1))
    elif args.format == "sarif":
        root = Path(args.sarif_root) if args.sarif_root else git_root(Path(args.paths[0]))
        print(json.dumps(to_sarif(report, rules, notes, root), indent=1))
    elif args.format == "github":
        sys.stdout.write(to_github(report, args.candidate))
    else:
        sys.stdout.write(
            render_text(report, rules, notes, args.candidate, summary_only=args.summary)
        )
    for skipped in report.skipped:
        print(f"skipped: {skipped}", file=sys.stderr)
    if report.left_out:
        print(
            f"not scanned: {len(report.left_out)} file(s) under folders excluded by default "
            f"(e.g. {report.left_out[0]}); --no-default-excludes scans them",
            file=sys.stderr,
        )
    print(summary_line(report, args.candidate, time.perf_counter() - started), file=sys.stderr)
    return ExitCode.FAILED if any(f.fails for f in report.findings) else ExitCode.OK
