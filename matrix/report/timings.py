"""``python -m matrix timings RAW_DIR``: how long each cell and each release took, from raw files.

Prints a Markdown table: per release, the install and runner seconds of each of its cells and
their sum, plus the slowest probe. Reads only recorded numbers, so it can be rerun any time.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from matrix import cli
from matrix.core import Column, release_key
from matrix.exitcodes import ExitCode
from matrix.results import Run, known_seconds, read_runs


def table(runs: list[Run]) -> str:
    by_release: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_release[str(run.env.get("triton"))].append(run)
    lines = [
        "| release | cells | install s | runner s | total s | slowest probe |",
        "|---|---|---|---|---|---|",
    ]
    for release in sorted(by_release, key=release_key):
        cells = by_release[release]
        install = sum(known_seconds(r.install.get("seconds")) or 0.0 for r in cells)
        runner = sum(known_seconds(r.extra.get("seconds")) or 0.0 for r in cells)
        results = [res for r in cells for res in r.results if known_seconds(res.seconds)]
        slow = max(results, key=lambda res: res.seconds, default=None)
        where = str(Column(slow.backend, slow.target)) if slow else ""
        slowest = f"{slow.probe} [{where}] {slow.seconds:.1f} s" if slow else "-"
        lines.append(f"| {release} | {len(cells)} | {install:.1f} | {runner:.1f} | "
                     f"{install + runner:.1f} | {slowest} |")  # fmt: skip
    return "\n".join(lines)


def parts_table(runs: list[Run]) -> str:
    """Per fingerprint part and column, the seconds it took over the recorded releases (the
    ``fp`` rows' ``data.part_seconds``; each release's interpreter cells averaged first)."""
    seen: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for res in run.results:
            spent = (res.data or {}).get("part_seconds") if res.probe == "fp" else None
            if isinstance(spent, dict):
                where = str(Column(res.backend, res.target))
                for part, secs in spent.items():
                    known = known_seconds(secs)
                    if known is not None:
                        seen[(part, where)][str(run.env.get("triton"))].append(known)
    if not seen:
        return "no fp row records part_seconds (measured before parts were timed)"
    lines = ["| fingerprint part | column | releases | min s | median s | max s |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for part, where in seen:
        per_release = seen[(part, where)]
        means = sorted(sum(v) / len(v) for v in per_release.values())
        median = means[len(means) // 2]
        span = sorted(per_release, key=release_key)
        lines.append(f"| {part} | {where} | {span[0]}-{span[-1]} | {means[0]:.1f} | "
                     f"{median:.1f} | {means[-1]:.1f} |")  # fmt: skip
    return "\n".join(lines)


def probes_table(runs: list[Run], top: int = 12) -> str:
    """Where the cell time goes: the ``top`` probes x columns by seconds summed over ``runs``,
    then the rest, and the runners' time outside any probe (children starting, raw files
    written, and a team's suite with ``--tests``)."""
    spent: dict[tuple[str, str], list[float]] = defaultdict(list)
    for run in runs:
        for res in run.results:
            if not res.is_row:  # a task's own result: ``fp.binary.add`` is one of fp's rows
                spent[(res.probe, str(Column(res.backend, res.target)))].append(
                    known_seconds(res.seconds) or 0.0
                )
    ranked = sorted(spent.items(), key=lambda kv: -sum(kv[1]))
    runner = sum(known_seconds(r.extra.get("seconds")) or 0.0 for r in runs)

    def share(seconds: float) -> str:
        return f"{seconds / runner:.0%}" if runner else "-"

    lines = ["| probe | column | cells | total s | per cell s | share |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for (probe, where), secs in ranked[:top]:
        total = sum(secs)
        lines.append(f"| {probe} | {where} | {len(secs)} | {total:.1f} | "
                     f"{total / len(secs):.1f} | {share(total)} |")  # fmt: skip
    rest = sum(sum(v) for _, v in ranked[top:])
    lines.append(f"| {len(ranked[top:])} others | | | {rest:.1f} | | {share(rest)} |")
    outside = runner - sum(sum(v) for v in spent.values())
    per_cell = outside / len(runs) if runs else 0.0
    lines.append(f"| outside probes (start-up, raw files, a team suite) | | {len(runs)} | "
                 f"{outside:.1f} | {per_cell:.1f} | "
                 f"{share(outside)} |")  # fmt: skip
    lines.append(f"| all cells | | {len(runs)} | {runner:.1f} | | {share(runner)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix timings",
        description=__doc__.split("\n")[0],
    )
    p.add_argument("raw", type=Path, nargs="?", default=Path("reports/raw"))
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--parts", action="store_true",
                       help="the fingerprint's cost per part and column instead")  # fmt: skip
    shown.add_argument("--probes", action="store_true",
                       help="where the cell time goes: seconds per probe and column")  # fmt: skip
    args = p.parse_args(argv)
    cpu = [r for r in read_runs(args.raw) if not r.env.get("gpu")]
    print(parts_table(cpu) if args.parts else probes_table(cpu) if args.probes else table(cpu))
    return ExitCode.OK


if __name__ == "__main__":
    cli.deprecated("python -m matrix.report.timings", "timings")
    sys.exit(cli.run(main, "matrix.timings"))
