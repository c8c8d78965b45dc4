"""What the issue-44 probes found, ranked, from the committed raw results: the closing note.

``python -m matrix discovery --raw reports/raw --out notes/discovery/issue-44-findings.md``

A *series* is one recorded state across releases: a cell of ``python_in_kernel`` or
``autotune_validation`` (per backend and target), the status of ``aot_target`` and
``aot_launcher_abi`` per target, the C type the AOT launcher declares for each scalar dtype,
where each runtime hook or knob of ``matrix/data/runtime_homes.toml`` lives (the API census),
and each of this project's kernels' resources (``matrix.report.resource_rows``: a growth beyond
the gate's rule). A *finding* is one change of a series between two recorded releases, with
its first and last release (the releases that show the new state, up to the next change), its
evidence (the candidate's recorded error or detail, and the raw file it is in), and the columns
that show the same change. They rank by ``matrix/data/discovery.toml``. Nothing is measured
here; no Triton is imported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.analyze.census import censuses_from_runs, load_homes
from matrix.core import DATA_DIR, DataFileError, load_toml, release_key, table_keys
from matrix.exitcodes import ExitCode
from matrix.report import resource_rows
from matrix.results import Run, read_runs

RULES_PATH = DATA_DIR / "discovery.toml"
TOP = 10


@dataclass(frozen=True)
class Ranking:
    cell_probes: tuple[str, ...]
    status_probes: tuple[str, ...]
    launcher_probe: str
    cost: dict[str, int]


def load_ranking(path: str | Path = RULES_PATH) -> Ranking:
    """The ranking file; a DataFileError names the key at fault."""
    keys = {"cell_probes", "status_probes", "launcher_probe", "cost"}
    doc = table_keys(path, "", load_toml(path), keys)
    for key in ("cell_probes", "status_probes"):
        value = doc.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DataFileError(path, key, "a list of probe names", value)
    if not isinstance(doc.get("launcher_probe"), str):
        raise DataFileError(path, "launcher_probe", "a probe name", doc.get("launcher_probe"))
    cost = doc.get("cost")
    if not isinstance(cost, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in cost.values()
    ):
        raise DataFileError(path, "cost", "a table of state = integer >= 0", cost)
    return Ranking(
        tuple(doc["cell_probes"]), tuple(doc["status_probes"]), doc["launcher_probe"], cost
    )


@dataclass
class Series:
    """One recorded state across releases: ``{release: (state, evidence)}``."""

    kind: str  # "cell", "status", "abi", "home", "resource"
    subject: str  # the probe (or thing) it belongs to: "python_in_kernel"
    member: str  # the cell, dtype or measure of it ("cdiv_scalar"), "" for a whole status
    where: str  # "aot:cuda:90"
    states: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class Finding:
    """One change (or several of one probe, column and release range, ``fold``)."""

    subject: str
    changes: list[tuple[str, str, str]]  # (member, before, after)
    changed_at: str  # the first release with the new state
    previous: str  # the last release with the old one
    last: str  # the last release with the new state before it changed again (or the newest)
    evidence: str
    cost: int
    worse: bool
    wheres: list[str] = field(default_factory=list)
    current: bool = False  # the newest recorded release still has the new state

    @property
    def key(self) -> tuple[bool, int, int, bool]:
        return (self.worse, self.cost, len(self.wheres), self.current)

    @property
    def what(self) -> str:
        return "; ".join(f"{m + ' ' if m else ''}`{b}` -> `{a}`" for m, b, a in self.changes)

    def line(self, n: int) -> str:
        more = f" +{len(self.wheres) - 4}" if len(self.wheres) > 4 else ""
        cols = ", ".join(self.wheres[:4]) + more
        still = ", still on the newest" if self.current else ""
        return (
            f"{n}. **{self.subject}** on {cols}: {self.what} (last old {self.previous}; "
            f"first {self.changed_at}, last {self.last}{still}).\n   Evidence: {self.evidence}"
        )


def _release(run: Run) -> str | None:
    return str(run.release) if run.release is not None else None


def _first_line(text: Any, limit: int = 220) -> str:
    lines = [ln.strip() for ln in str(text or "").splitlines() if ln.strip()]
    return (lines[0] if lines else "")[:limit]


def probe_series(runs: Iterable[Run], ranking: Ranking) -> list[Series]:
    """The cell, status and launcher-type series of the ranked probes, per column (an
    interpreter column per numpy; compiled columns once per release: every numpy cell of a
    release compiles the same code, the first run read wins)."""
    table: dict[tuple[str, str, str, str], Series] = {}

    def put(kind: str, subject: str, member: str, where: str, release: str, state: str,
            ev: str) -> None:  # fmt: skip
        s = table.setdefault((kind, subject, member, where), Series(kind, subject, member, where))
        s.states.setdefault(release, (state, ev))

    for run in runs:
        release = _release(run)
        if release is None:
            continue
        raw = f"raw {run.id}"
        for res in run.results:
            where = res.backend + (f":{res.target}" if res.target else "")
            if res.backend == "interpret" and run.env.get("numpy"):
                # the interpreter's numerics are numpy's: each numpy is a column of its own
                where += f" (numpy {run.env['numpy']})"
            data = res.data or {}
            if res.probe in ranking.cell_probes and isinstance(data.get("cells"), dict):
                found = data.get("errors")
                errors: dict[str, Any] = found if isinstance(found, dict) else {}
                for cell, state in data["cells"].items():
                    ev = _first_line(errors.get(cell)) or _first_line(res.detail)
                    put("cell", res.probe, cell, where, release, str(state), f"{ev} ({raw})")
            if res.probe in ranking.status_probes:
                put("status", res.probe, "", where, release, res.status,
                    f"{_first_line(res.detail)} ({raw})")  # fmt: skip
            launcher = data.get("jit_launcher")
            if res.probe == ranking.launcher_probe and isinstance(launcher, dict):
                for dtype, decl in launcher.items():
                    if isinstance(decl, dict) and decl.get("c"):
                        put("abi", res.probe, f"C type of a {dtype} scalar", where, release,
                            str(decl["c"]), f"{_first_line(res.detail)} ({raw})")  # fmt: skip
    return list(table.values())


def home_series(runs: Sequence[Run]) -> list[Series]:
    """Where each runtime hook or knob lives, release by release (the API census)."""
    censuses = censuses_from_runs(runs)
    out = []
    for home in load_homes():
        s = Series("home", "runtime home", home.name, "census")
        for release, census in censuses.items():
            present = [p for p in home.at if census.status(p) == "present"]
            s.states[release] = (" + ".join(present) or "absent", f"{home.what} (API census)")
        out.append(s)
    return out


def resource_findings(runs: Sequence[Run], ranking: Ranking) -> list[Finding]:
    """Each growth of this project's kernels beyond the gate's rule (the performance page's
    flagged cells), its last release the last one before that measure moved again."""
    view = resource_rows.build_view(runs)
    if view is None:
        return []
    out = []
    for row in view.rows:
        releases = [r for r in view.releases if r in row.cells]
        for i, r in enumerate(releases):
            for ch in row.cells[r].worse:
                last = r
                for later in releases[i + 1 :]:
                    if row.cells[later].changed(ch.measure):
                        break
                    last = later
                out.append(Finding(
                    f"{row.kernel} resources", [(ch.measure, ch.before, ch.after)], r,
                    row.cells[r].previous, last, f"may slow your kernel: {ch.text} (aot rows)",
                    ranking.cost.get("may-slow", 0), True, [f"aot:{row.target}"],
                    current=last == view.releases[-1],
                ))  # fmt: skip
    return out


def _cost(kind: str, before: str, after: str, ranking: Ranking) -> tuple[int, bool]:
    """(cost, got worse) of one change: a home that lost a path code reached, a launcher type
    that changed, else the cost of the worse of the two states (``discovery.toml``)."""
    if kind == "home":
        gone = set(before.split(" + ")) - set(after.split(" + ")) - {"absent"}
        return (
            (ranking.cost.get("moved", 0), True) if gone else (ranking.cost.get("absent", 0), False)
        )
    if kind == "abi":
        return ranking.cost.get("abi", 0), True
    b, a = ranking.cost.get(before, 0), ranking.cost.get(after, 0)
    return max(b, a), a > b


def findings_of(series: Iterable[Series], newest: str, ranking: Ranking) -> list[Finding]:
    """Each change of each series, releases in order (a release not recorded is skipped)."""
    out = []
    for s in series:
        releases = sorted(s.states, key=release_key)
        for i in range(1, len(releases)):
            (before, _), (after, ev) = s.states[releases[i - 1]], s.states[releases[i]]
            if before == after:
                continue
            last = releases[i]
            for later in releases[i + 1 :]:
                if s.states[later][0] != after:
                    break
                last = later
            cost, worse = _cost(s.kind, before, after, ranking)
            out.append(Finding(
                s.subject, [(s.member, before, after)], releases[i], releases[i - 1], last, ev,
                cost, worse, [s.where], current=last == newest,
            ))  # fmt: skip
    return out


def merged(found: Iterable[Finding]) -> list[Finding]:
    """One finding per change seen in several columns (the same states and releases)."""
    by: dict[tuple[Any, ...], Finding] = {}
    for f in found:
        key = (f.subject, tuple(f.changes), f.changed_at, f.last)
        if key in by:
            by[key].wheres += [w for w in f.wheres if w not in by[key].wheres]
        else:
            by[key] = f
    return list(by.values())


def fold(found: Iterable[Finding]) -> list[Finding]:
    """One finding per probe, columns and release range that changed the same way (worse or
    fixed): the cells (or dtypes) that changed together are one finding, not several."""
    by: dict[tuple[Any, ...], Finding] = {}
    for f in found:
        key = (f.subject, tuple(f.wheres), f.changed_at, f.last, f.worse)
        if key in by:
            g = by[key]
            g.changes += [c for c in f.changes if c not in g.changes]
            g.cost = max(g.cost, f.cost)
        else:
            by[key] = Finding(f.subject, list(f.changes), f.changed_at, f.previous, f.last,
                              f.evidence, f.cost, f.worse, list(f.wheres), f.current)  # fmt: skip
    return list(by.values())


def ranked(runs: Sequence[Run], ranking: Ranking | None = None) -> list[Finding]:
    """Every finding, the most consequential first (module docstring; ``discovery.toml``)."""
    ranking = ranking or load_ranking()
    releases = sorted({r for run in runs if (r := _release(run))}, key=release_key)
    if not releases:
        return []
    series = probe_series(runs, ranking) + home_series(runs)
    found = fold(
        merged(findings_of(series, releases[-1], ranking) + resource_findings(runs, ranking))
    )
    return sorted(found, key=lambda f: f.key, reverse=True)


def markdown(found: Sequence[Finding], raw: str, top: int = TOP) -> str:
    lines = [
        "# Issue 44: the most consequential findings of the new probes",
        "",
        f"Generated from the committed raw results (`{raw}`) by "
        f"`python -m matrix discovery --raw {raw} --out <this file>`; ranked by "
        "`matrix/data/discovery.toml` (got worse rather than fixed, then the cost of the worse "
        "state, then columns, then still on the newest release). First/last: the releases "
        "that show the new state, up to its next change. Do not edit by hand.",
        "",
        f"{len(found)} findings in all; the first {min(top, len(found))}:",
        "",
    ]
    lines += [f.line(i) for i, f in enumerate(found[:top], 1)]
    rest = found[top:]
    if rest:
        lines += ["", f"## The other {len(rest)}", ""]
        lines += [
            f"- {f.subject} on {', '.join(f.wheres)}: {f.what} "
            f"(first {f.changed_at}, last {f.last})"
            for f in rest
        ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m matrix discovery", description=__doc__, allow_abbrev=False
    )
    p.add_argument("--raw", default="reports/raw", help="folder of raw result files")
    p.add_argument("--out", help="write the Markdown here (default: print it)")
    p.add_argument("--top", type=int, default=TOP, help=f"findings listed (default {TOP})")
    args = p.parse_args(argv)
    if not Path(args.raw).is_dir():
        print(f"--raw: {args.raw} is not a folder of raw result files", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    text = markdown(ranked(read_runs(args.raw)), args.raw, args.top)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
