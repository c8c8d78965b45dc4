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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from matrix import cli
from matrix.analyze import fingerprint
from matrix.analyze.census import CensusError, censuses_from_runs
from matrix.analyze.profile import MAY_AFFECT, NOT_USED, USED, Match, Matcher, Profile, load_map
from matrix.analyze.profile.declaration import Declaration, load_declaration
from matrix.core import REPO_ROOT, DataFileError, Release, ReleaseError
from matrix.exitcodes import ExitCode
from matrix.gate import api, policy, roots, summary, targets, timing
from matrix.gate import compare as gc
from matrix.gate.config import (
    ACCEPTED_PATH,
    PINNED_PATH,
    AcceptedChange,
    load_accepted,
    matches_path,
    pinned_release,
)
from matrix.gate.shapes import Sites
from matrix.gate.usage import build_profile, coverage_text, relevance, shown_path
from matrix.measure import test_device
from matrix.results import (
    NoValidator,
    Run,
    SchemaError,
    atomic_write_text,
    raw_files,
    read_folder,
    read_runs,
    release_named,
)
from matrix.scan import ScanReport, load_rules, scan_paths

EXIT_SAFE, EXIT_UNSAFE, EXIT_UNDECIDABLE = ExitCode.OK, ExitCode.FAILED, ExitCode.UNDECIDABLE
VERDICTS: dict[int, str] = {
    EXIT_SAFE: "SAFE",
    EXIT_UNSAFE: "UNSAFE",
    EXIT_UNDECIDABLE: "UNDECIDABLE",
}
PROJECT_KERNELS = "kernels"
# The project's own declaration (targets) for its own verdict: a file in its kernels/ (not
# pyproject.toml's table, which every test fixture under the root would read as its own).
OWN_CONFIG = "triton-compat.toml"
PROJECT_CONFIG = f"{PROJECT_KERNELS}/{OWN_CONFIG}"


# Where the gate writes without ``--out``: a folder of the current directory that no checkout
# commits (.gitignore), so that a team's gate run never dirties the project's committed files.
DEFAULT_OUT = "triton-compat-gate"


def default_out() -> Path:
    """Where the gate writes when ``--out`` is not given: ``DEFAULT_OUT`` in the current
    directory."""
    return Path(DEFAULT_OUT)


def check_out(out: str | Path, results: str | Path) -> None:
    """Refuse an ``--out`` that is the results folder or inside it: the gate.json left there
    would sit among the raw files of every later run."""
    folder = cli.resolved(results)
    if not folder.is_dir():
        return
    target = cli.resolved(out)
    if target == folder or target.is_relative_to(folder):
        raise UsageError(
            f"--out {str(out)!r}: inside the --results folder {str(results)!r}; expected a "
            "folder outside it (gate.md and gate.json must not sit among the raw files)"
        )


def recorded_releases(results: Path) -> list[Release] | None:
    """The releases a results folder holds cells of, told from the raw files' names alone (no
    file is read); None where a name does not spell a cell (the contents decide then)."""
    if not results.is_dir():
        return None
    found: set[Release] = set()
    for path in raw_files(results):
        release = release_named(path)
        if release is None:
            return None
        found.add(release)
    return sorted(found) or None


SECTIONS = (
    (gc.BREAKING, "Breaking API"),
    (gc.REGRESSION, "Regressions"),
    (gc.BEHAVIOUR, "Behaviour changes, not acknowledged"),
    (gc.ACCEPTED, "Behaviour changes, acknowledged"),
    (gc.RELAXATION, "New on the candidate (relaxations, never blocking)"),
    (gc.MAY_SLOW, "May slow your kernel (resources, not blocking: matrix/data/resource_gate.toml)"),
)


class UsageError(ValueError):
    """A command-line argument is wrong; the message names it, its value and what was expected."""


@dataclass
class GateReport:
    """What the gate decided and why; rendered as Markdown and JSON."""

    baseline: str | None
    candidate: str | None
    results: str | None
    exit_code: int = EXIT_UNDECIDABLE
    errors: list[str] = field(default_factory=list)
    comparison: gc.Comparison = field(default_factory=gc.Comparison)
    scanned: list[str] = field(default_factory=list)
    scan_findings: list[dict[str, Any]] = field(default_factory=list)
    accepted_file: str = ""
    # With a team's code (--scan/--tests): its usage profile, and what changed that it does
    # not use (never blocking) or that the candidate fixed where it does (never blocking).
    profile: Profile | None = None
    unused: list[gc.GateFinding] = field(default_factory=list)
    unused_undecidable: list[str] = field(default_factory=list)
    fixed: list[gc.GateFinding] = field(default_factory=list)
    coverage: str = ""  # "N of M captured specializations compiled", per side
    # Each blocking (or acknowledged, or fixed) finding with the profile's uses it maps onto:
    # what the pages lay out kernel by kernel.
    tied: list[tuple[gc.GateFinding, list[Any]]] = field(default_factory=list)
    # acknowledgements for this upgrade that matched nothing (never blocking; listed)
    stale_accepted: list[str] = field(default_factory=list)
    # The team's declaration ([tool.triton-compat]: targets, dtypes); Declaration() when none.
    # The profile's type inference reads its dtypes (``declaration.dtypes_of``).
    declaration: Declaration = field(default_factory=Declaration)
    # What changed only in columns outside the declared targets (never blocking).
    off_target: list[gc.GateFinding] = field(default_factory=list)
    off_target_undecidable: list[str] = field(default_factory=list)
    # Changes that only add a warning (``policy.split_notices``): listed, never blocking.
    notices: list[gc.GateFinding] = field(default_factory=list)
    # Findings that only say how an API the candidate removed behaves, with the removal they
    # follow from (``matrix.gate.roots``): listed under it, never a reason of their own.
    folded: list[tuple[gc.GateFinding, gc.GateFinding]] = field(default_factory=list)
    # Why each "may affect" finding may (by identity): what decides it when no use says.
    may_why: dict[int, str] = field(default_factory=dict)
    _entries: tuple[Any, list[summary.Entry]] | None = field(default=None, repr=False)

    def blocking(self) -> list[summary.Entry]:
        """The blocking findings as entries, one per change x kernel (``matrix.gate.summary``);
        gate.md and gate.json both ask, once the report is decided: kept while the findings
        and their ties are the same lists."""
        key = (id(self.comparison.findings), len(self.comparison.findings), len(self.tied))
        if self._entries is None or self._entries[0] != key:
            entries = summary.entries(
                self.comparison.findings, self.tied, self.may_why, self.folded
            )
            self._entries = (key, entries)
        return self._entries[1]

    @property
    def verdict(self) -> str:
        return VERDICTS[self.exit_code]

    def decide(self) -> int:
        """Unsafe if proven unsafe; else undecidable if something is unknown; else safe."""
        if self.errors:
            self.exit_code = EXIT_UNDECIDABLE
        elif self.comparison.unsafe:
            self.exit_code = EXIT_UNSAFE
        elif self.comparison.undecidable or not self.comparison.compared:
            if not self.comparison.compared and not self.comparison.undecidable:
                self.comparison.undecidable.append("nothing was compared")
            self.exit_code = EXIT_UNDECIDABLE
        else:
            self.exit_code = EXIT_SAFE
        return self.exit_code

    def to_dict(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "verdict": self.verdict.lower(),
            "exit_code": self.exit_code,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "results": self.results,
            "errors": self.errors,
            "findings": [f.to_dict() for f in c.findings],
            "undecidable": c.undecidable,
            "suite_problems": c.suite_problems,
            "notes": c.notes,
            "compared": c.compared,
            "scanned": self.scanned,
            "scan_findings": self.scan_findings,
            "profile": self.profile.to_dict() if self.profile is not None else None,
            "not_used": [f.to_dict() for f in self.unused],
            "not_used_undecidable": self.unused_undecidable,
            "fixed_used": [f.to_dict() for f in self.fixed],
            "coverage": self.coverage,
            "stale_accepted": self.stale_accepted,
            "counts": summary.counts(self, blocking := self.blocking()),
            "blocking": [e.to_dict() for e in blocking],
            "may_affect_kernels": (
                summary.may_affect_kernels(blocking, self.profile.uses)
                if self.profile is not None
                else None
            ),
            "relaxations": [f.to_dict() for f in c.findings if f.kind == gc.RELAXATION],
            "new_warnings": [f.to_dict() for f in self.notices],
            "follows_from_removed": [
                {**f.to_dict(), "root": root.probe, "root_where": root.where}
                for f, root in self.folded
            ],
            "targets": list(self.declaration.targets or []) or None,
            "targets_inferred": (
                self.declaration.inferred.to_dict() if self.declaration.inferred else None
            ),
            "declaration": self.declaration.source or None,
            "not_on_targets": [f.to_dict() for f in self.off_target],
            "not_on_targets_undecidable": self.off_target_undecidable,
        }


# ------------------------------------------------------------------------------------ markdown


def _headline(report: GateReport) -> str:
    upgrade = f"Triton {report.baseline or '?'} → {report.candidate or '?'}"
    c = report.comparison
    counts = {
        kind: len({_group_key(f) for f in c.findings if f.kind == kind}) for kind, _ in SECTIONS
    }
    if report.exit_code == EXIT_SAFE:
        why = "no regression, breaking API or unacknowledged behaviour change"
    elif report.exit_code == EXIT_UNSAFE:
        why = ", ".join(
            f"{title}: {counts[k]}" for k, title in SECTIONS if k in gc.UNSAFE_KINDS and counts[k]
        )
    else:
        n = len(report.errors) + len(c.undecidable)
        why = f"{n} reason(s) the gate cannot decide; see below"
        started = [u for u in c.undecidable if u in c.suite_problems]
        if started:  # the team's own suite did not run: the first thing to fix
            why = f"{started[0]}; {why}"
    return f"**{report.verdict}** (exit {report.exit_code}): {upgrade}: {why}."


TEST_PREFIX = gc.test_finding_name("")  # what every user test's finding name starts with


def _split_cell(probe: str) -> tuple[str, str | None]:
    """A finding's group and its member: ``fp.binary.add[int8,lit_int]`` -> (``fp.binary.add``,
    ``int8,lit_int``), a fingerprint group and its cell; ``test t/x.py::test_a[2]`` ->
    (``test t/x.py``, ``test_a[2]``), a user test file and its test. Other probes have none."""
    if probe.startswith(TEST_PREFIX) and "::" in probe:
        group, _, test = probe.partition("::")
        return group, test
    group, bracket, cell = probe.partition("[")
    return (group, cell[:-1]) if bracket and cell.endswith("]") else (probe, None)


def _group_key(f: gc.GateFinding) -> tuple[Any, ...]:
    """Findings that differ only in column, fingerprint cell (and, for API uses, location)
    read as one entry: a group whose 40 cells changed the same way is one change, said once."""
    return (f.kind, _split_cell(f.probe)[0], f.baseline, f.candidate, f.fix, f.reason)


CELLS_SHOWN = 12  # cells listed per grouped fingerprint entry; gate.json keeps them all
# Entries listed per section of gate.md (a PR comment must stay readable: 100,000 results of one
# cell made it 8 MB); gate.json keeps them all.
ENTRIES_SHOWN = 100


def _toml_ack(f: gc.GateFinding, where: str, probe: str) -> str:
    return (
        f'[[change]]\nprobe = "{probe}"\nwhere = "{where}"\n'
        f'from = "{f.baseline}"\nto = "{f.candidate}"\nreason = "..."  # why this is fine for you'
    )


def _toml_scope(members: Sequence[gc.GateFinding], roots: Sequence[str] = ()) -> str:
    """The code a team's acknowledgement is justified for: the files and kernels it names,
    each file as the profile names it (``shown_path``: never a path only this machine has)."""
    paths: dict[str, None] = {}
    kernels: dict[str, None] = {}
    for m in members:
        for use in m.uses:
            head = use.split(": ", 1)[0]
            path = head.split(":", 1)[0]
            if path:
                paths[shown_path(path, roots)] = None
            if " in " in head:
                kernels[head.split(" in ", 1)[1].split(" ", 1)[0]] = None
    out = "\npaths = [" + ", ".join(f'"{p}"' for p in paths) + "]"
    if kernels:
        out += "\nkernels = [" + ", ".join(f'"{k}"' for k in kernels) + "]"
    return out


def _profile_sections(report: GateReport) -> list[str]:
    """What the profile read, what the candidate fixed in used code, and what changed that
    the code does not use (counts per group, never blocking)."""
    profile = report.profile
    assert profile is not None
    lines = ["", "### Your code", ""]
    kernels = sorted(profile.kernels.items())
    lines.append(
        f"- {len(kernels)} kernel(s) read, {len(profile.uses)} uses profiled from "
        + (", ".join(f"`{s}`" for s in profile.sources[:6]) or "nothing")
        + (f" and {len(profile.sources) - 6} more" if len(profile.sources) > 6 else "")
    )
    for name, where in kernels[:20]:
        lines.append(f"  - `{name}` at `{where}`")
    if len(kernels) > 20:
        lines.append(f"  - ... and {len(kernels) - 20} more")
    lines += [f"- {n}" for n in profile.notes[:10]]
    split = summary.may_affect_kernels(report.blocking(), profile.uses)
    if split["launched"] or split["not_launched"]:
        ran, other = split["launched"], split["not_launched"]
        lines.append(
            f'- "may affect" entries are in {len(ran) + len(other)} kernel(s): {len(ran)} '
            f"launched by a test{': ' + _few(ran) if ran else ''}; {len(other)} that no test "
            f"launched (typed from the source only){': ' + _few(other) if other else ''}"
        )
    coverage = _coverage(report)
    if coverage:
        lines.append(f"- {coverage}")
    if report.fixed:
        groups = Counter(_split_cell(f.probe)[0] for f in report.fixed)
        lines += ["", f"### Fixed in the candidate, used by your code ({len(groups)})", ""]
        lines.append(
            "A value your code computes was wrong against its reference on the baseline and is "
            "right on the candidate (never blocking):"
        )
        for group, n in sorted(groups.items()):
            first = next(f for f in report.fixed if _split_cell(f.probe)[0] == group)
            lines.append(f"- **{group}**: {n} cell(s), e.g. {first.uses[0] if first.uses else ''}")
    groups = Counter(_split_cell(f.probe)[0] for f in report.unused)
    groups.update(
        _split_cell(report.comparison.undecidable_probe.get(u, "?"))[0]
        for u in report.unused_undecidable
    )
    lines += ["", f"### Changed, not used by your code ({sum(groups.values())})", ""]
    if not groups:
        lines.append("- nothing")
    else:
        lines.append(
            "Changes and unobserved cells between the two releases that no use in your code "
            "maps onto (matrix/data/usage_map.toml); they never block. Per group, in cell x "
            "column results:"
        )
        lines.append("")
        for group, n in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"- `{group}`: {n}")
    return lines


def _few(names: Sequence[str], n: int = 6) -> str:
    shown = ", ".join(f"`{x}`" for x in names[:n])
    return shown + (f" and {len(names) - n} more" if len(names) > n else "")


def _relaxations(groups: dict[tuple[Any, ...], list[gc.GateFinding]]) -> list[str]:
    """One line per relaxation group: refused on the baseline, so no code that runs there
    uses it (never blocking)."""
    lines = [
        "Refused (or absent) on the baseline, something else on the candidate: code that runs "
        "on the baseline cannot be using it."
    ]
    for members in groups.values():
        f = members[0]
        wheres = ", ".join(dict.fromkeys(m.where for m in members))
        cells = list(dict.fromkeys(filter(None, (_split_cell(m.probe)[1] for m in members))))
        shown = f" ({len(cells)} cell(s), e.g. `{cells[0]}`)" if cells else ""
        uses = list(dict.fromkeys(u for m in members for u in m.uses))
        named = f"; your code names it at `{uses[0]}`" if uses else ""
        more = f" and {len(uses) - 1} more" if len(uses) > 1 else ""
        lines.append(
            f"- `{_split_cell(f.probe)[0]}`: `{f.baseline}` → `{f.candidate}` on "
            f"{wheres}{shown}{named}{more}"
        )
    return lines


def _off_target_section(report: GateReport) -> list[str]:
    """What changed only in columns the team does not run on: counts per group and column."""
    groups = Counter((_split_cell(f.probe)[0], f.where, f.kind) for f in report.off_target)
    n = len(report.off_target) + len(report.off_target_undecidable)
    decl = report.declaration
    if decl.targets is None and decl.inferred is not None:
        why = f"not run on: {', '.join(decl.inferred.not_run)}; {decl.inferred.why}"
    else:
        why = f"the declared targets {', '.join(decl.targets or ())}, from " + (
            f"`{_display_path(decl.source)}`"
        )
    lines = ["", f"### Not on your targets ({n})", ""]
    lines.append(
        f"Changes in columns outside your targets ({why}); they never block. Per group, "
        "column and kind, in findings:"
    )
    lines.append("")
    for (group, where, kind), k in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"- `{group}` on {where} ({kind}): {k}")
    if report.off_target_undecidable:
        lines.append(
            f"- undecidable items about those columns: {len(report.off_target_undecidable)}"
        )
    return lines


def _notices_section(report: GateReport) -> list[str]:
    """New warnings on the candidate: per group, cell and change (never blocking)."""
    groups = Counter((f.probe, f.baseline, f.candidate) for f in report.notices)
    lines = ["", f"### New warnings on the candidate ({len(groups)})", ""]
    lines.append(
        "The code compiles and computes the same; the candidate only warns (never blocking; "
        "tests run with warnings as errors fail in the --tests column, which blocks):"
    )
    lines.append("")
    for (probe, before, after), k in sorted(groups.items(), key=lambda kv: str(kv[0])):
        uses = list(dict.fromkeys(u for f in report.notices if f.probe == probe for u in f.uses))
        at = f", e.g. `{uses[0]}`" + (f" and {len(uses) - 1} more" if len(uses) > 1 else "")
        lines.append(f"- `{probe}`: `{before}` → `{after}` ({k} finding(s){at if uses else ''})")
    return lines


def _folded_section(report: GateReport) -> list[str]:
    """What follows from a removal: per removal and group, how many findings (never a reason
    of its own; the removal blocks)."""
    groups = Counter(
        (root.probe, root.candidate, _split_cell(f.probe)[0], f.baseline, f.candidate)
        for f, root in report.folded
    )
    lines = ["", f"### Follows from a removed API ({len(report.folded)})", ""]
    lines.append(
        "How an API the candidate removed would behave, at lines the removal already names: "
        "the removal is the one reason (above); these are not counted again."
    )
    lines.append("")
    for (root, gone, group, before, after), k in sorted(groups.items()):
        lines.append(
            f"- `{group}` `{before}` → `{after}`: {k} finding(s), follow from `{root}` ({gone})"
        )
    return lines


def _coverage(report: GateReport) -> str:
    return report.coverage


def _display_path(path: str) -> str:
    try:
        return str(cli.resolved(path).relative_to(cli.resolved(Path.cwd())))
    except ValueError:
        return path


def render_markdown(report: GateReport) -> str:
    """The PR-comment summary: verdict first, then each finding with evidence and fix."""
    c = report.comparison
    lines = [_headline(report), ""]
    if report.errors:
        lines += ["### Cannot decide", ""]
        lines += [f"- {e}" for e in report.errors]
        lines.append("")
    lines += summary.first_screen(report, report.blocking())
    if c.suite_problems:
        lines += ([] if lines[-1] == "" else [""]) + [f"- {p}" for p in c.suite_problems]
    lines += ["", "## Details", ""]
    lines.append(f"- results: `{report.results}`")
    if c.compared:
        lines.append(f"- compared: {', '.join(c.compared)}")
    if report.scanned:
        shown = ", ".join(f"`{p}`" for p in report.scanned[:8])
        more = f" and {len(report.scanned) - 8} more" if len(report.scanned) > 8 else ""
        lines.append(
            f"- scanned for API uses: {shown}{more} ({len(report.scan_findings)} hazard(s))"
        )
    else:
        lines.append(
            "- scanned for API uses: nothing (no kernels/ folder or --no-project-scan, and no"
            " --scan), so no breaking-API check"
        )
    if report.declaration.source:
        targets = ", ".join(report.declaration.targets or ()) or "not declared (every column)"
        lines.append(
            f"- declaration: `{_display_path(report.declaration.source)}`; targets: {targets}"
        )
    for kind, title in SECTIONS:
        groups: dict[tuple[Any, ...], list[gc.GateFinding]] = {}
        for f in c.findings:
            if f.kind == kind:
                groups.setdefault(_group_key(f), []).append(f)
        if not groups:
            continue
        lines += ["", f"### {title} ({len(groups)})", ""]
        if kind == gc.RELAXATION:
            lines += _relaxations(groups)
            continue
        if len(groups) > ENTRIES_SHOWN:
            lines += [f"The first {ENTRIES_SHOWN}; gate.json lists all {len(groups)}.", ""]
        for members in list(groups.values())[:ENTRIES_SHOWN]:
            f = members[0]
            wheres = list(dict.fromkeys(m.where for m in members))
            uses = list(dict.fromkeys(u for m in members for u in m.uses))
            change = f"`{f.baseline}` → `{f.candidate}`" if f.baseline else f"`{f.candidate}`"
            group, _ = _split_cell(f.probe)
            cells = list(dict.fromkeys(filter(None, (_split_cell(m.probe)[1] for m in members))))
            lines.append(f"- **{group}**: {change} on {', '.join(wheres)}")
            if cells:
                shown = "; ".join(f"`{c}`" for c in cells[:CELLS_SHOWN])
                more = f" and {len(cells) - CELLS_SHOWN} more" if len(cells) > CELLS_SHOWN else ""
                label = "tests" if group.startswith(TEST_PREFIX) else "cells"
                lines.append(f"  - {label} ({len(cells)}): {shown}{more}")
            verb = "may affect" if f.relevance == MAY_AFFECT else "used at"
            for use in uses[:USES_SHOWN]:
                lines.append(f"  - {verb} `{use}`")
            if len(uses) > USES_SHOWN:
                lines.append(f"  - ... and {len(uses) - USES_SHOWN} more uses")
            lines.append(f"  - evidence ({f.where}): " + "; ".join(f.evidence))
            if f.fix:
                lines.append(f"  - fix: {f.fix}")
            if kind == gc.ACCEPTED:
                lines.append(f"  - accepted because: {f.reason}")
            if kind == gc.REGRESSION and f.probe.startswith(timing.SLOWDOWN_PREFIX):
                accepted = _display_path(report.accepted_file)
                lines.append(f"  - if this slowdown is fine for you, add to `{accepted}`:")
                lines += ["", "    ```toml"]
                lines += [f"    {t}" for t in timing.toml_ack(f).splitlines()]
                lines.append("    ```")
            if kind == gc.BEHAVIOUR:
                accepted = _display_path(report.accepted_file)
                lines.append(f"  - to acknowledge it, add to `{accepted}`:")
                lines.append("")
                lines.append("    ```toml")
                where = wheres[0] if len(wheres) == 1 else "*"
                # Several cells: one entry for the group's cells ("[[]" is fnmatch's literal "[").
                probe = f.probe if len(cells) < 2 else f"{group}[[]*"
                ack = _toml_ack(f, where, probe)
                if report.profile is not None:
                    ack += _toml_scope(members, report.scanned)
                lines += [f"    {t}" for t in ack.splitlines()]
                lines.append("    ```")
    if report.folded:
        lines += _folded_section(report)
    if report.notices:
        lines += _notices_section(report)
    if report.profile is not None:
        lines += _profile_sections(report)
    if report.off_target or report.off_target_undecidable:
        lines += _off_target_section(report)
    if c.undecidable:
        lines += ["", f"### Undecidable ({len(c.undecidable)})", ""]
        lines += [f"- {u}" for u in c.undecidable[:ENTRIES_SHOWN]]
        if len(c.undecidable) > ENTRIES_SHOWN:
            lines.append(f"- ... and {len(c.undecidable) - ENTRIES_SHOWN} more (gate.json)")
    if report.stale_accepted:
        lines += ["", f"### Acknowledgements that match nothing ({len(report.stale_accepted)})",
                  "", f"In `{_display_path(report.accepted_file)}` (never blocking; remove or "
                  "fix them):", ""]  # fmt: skip
        lines += [f"- {s}" for s in report.stale_accepted]
    if c.notes:
        lines += ["", f"<details><summary>Notes ({len(c.notes)})</summary>", ""]
        lines += [f"- {n}" for n in c.notes[:ENTRIES_SHOWN]]
        if len(c.notes) > ENTRIES_SHOWN:
            lines.append(f"- ... and {len(c.notes) - ENTRIES_SHOWN} more (gate.json)")
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ CLI


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(
            EXIT_UNDECIDABLE, f"{self.prog}: bad arguments: {message} (exit 2: undecidable)\n"
        )


def parser(session: bool = False) -> argparse.ArgumentParser:
    """The gate's one argument parser: abbreviations refused (``--cand`` is no ``--candidate``),
    unknown options refused. ``session``: ``nox -s gate``'s (``matrix.gate.session``), where
    ``--candidate`` and ``--results`` have defaults it resolves."""
    p = _Parser(
        prog="nox -s gate --" if session else "python -m matrix gate",
        description="Compare recorded matrix results of a baseline and a candidate Triton release.",
        epilog="Exit status: 0 safe, 1 unsafe, 2 undecidable (missing/failed data, bad arguments).",
        allow_abbrev=False,
    )
    p.add_argument("--baseline", help=f"release to upgrade from (default: {PINNED_PATH.name})")
    p.add_argument(
        "--candidate",
        required=not session,
        help="release to upgrade to (nox -s gate: default the newest on the package index)",
    )
    p.add_argument(
        "--results",
        required=not session,
        help="raw results folder or a merged matrix.json (nox -s gate: default, run the two "
        "releases' cells into reports/raw)",
    )
    p.add_argument(
        "--scan", action="append", default=[], metavar="PATH", help="more sources to scan"
    )
    p.add_argument(
        "--tests",
        action="append",
        default=[],
        metavar="DIR",
        help="the team's test suite (as given to the matrix): its sources are read and the "
        "kernels its tests launched (captured in the results) are typed by those launches",
    )
    p.add_argument(
        "--tests-device",
        choices=test_device.MODES,
        help="with nox -s gate and no --results: where the cells run the --tests suite "
        "(cpu, cuda-on-cpu, auto; the matrix's option); the gate reads what they recorded",
    )
    p.add_argument(
        "--no-project-scan",
        action="store_true",
        help="do not scan the project's kernels/ folder (with --scan/--tests it is not scanned)",
    )
    p.add_argument(
        "--accepted",
        default=None,
        help=f"accepted behaviour changes (default: {ACCEPTED_PATH.name}, this project's, "
        "without --scan/--tests; with them only the file given here, whose entries name the "
        "paths or kernels they were justified for)",
    )
    p.add_argument("--pinned", default=str(PINNED_PATH), help="file with the pinned release")
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="the team's declaration: a pyproject.toml with [tool.triton-compat] (targets, "
        "dtypes), or a TOML file that is that table (default: the nearest pyproject.toml above "
        "the --scan/--tests paths that has one; none: every column counts)",
    )
    p.add_argument(
        "--out",
        default=None,
        help=f"folder for gate.md and gate.json (default: {DEFAULT_OUT}/ in the current "
        "directory; never inside the --results folder)",
    )
    p.add_argument(
        "--bench",
        help="folder of GPU benchmark files (default: bench/ beside the --results folder or file)",
    )
    p.add_argument(
        "--slowdown-threshold",
        type=float,
        default=timing.DEFAULT_THRESHOLD,
        help="GPU slowdown (vs cuBLAS in the same run) that is a regression, beyond measured "
        f"noise (default {timing.DEFAULT_THRESHOLD})",
    )
    return p


def bench_folder(args: argparse.Namespace) -> Path | None:
    """``--bench``, or ``bench/`` beside the results (reports/raw -> reports/bench)."""
    if args.bench:
        path = Path(args.bench)
        if not path.is_dir():
            raise UsageError(f"--bench {args.bench!r}: no such folder")
        return path
    return default_bench_folder(args.results)


def default_bench_folder(results: str | Path) -> Path | None:
    """``bench/`` beside a results folder or file, where it exists."""
    path = cli.resolved(results).parent / "bench"
    return path if path.is_dir() else None


def gpu_timings(results: str | Path, accepted: str | Path) -> GpuTimings:
    """What the gate compares of GPU timings by default for ``results``."""
    folder = default_bench_folder(results)
    docs = timing.read_bench(folder) if folder else []
    return GpuTimings(docs, timing.load_slowdowns(accepted), timing.DEFAULT_THRESHOLD, folder)


def _release(arg: str, value: str | Release) -> Release:
    """The release an argument names (``3.8`` is exactly ``3.8.0``)."""
    try:
        return Release.parse(value, arg)
    except ReleaseError as e:
        raise UsageError(str(e)) from None


def run_gate(args: argparse.Namespace) -> GateReport:
    """Everything but argument parsing and output; errors are recorded, never raised."""
    report = GateReport(baseline=args.baseline, candidate=args.candidate, results=args.results)
    team = bool(args.scan or args.tests)
    # This project's acknowledgements were written for its own kernels/: they decide only its
    # own verdict. A team's code is judged against the team's file alone.
    accepted_path = args.accepted or ("" if team else str(ACCEPTED_PATH))
    report.accepted_file = accepted_path or "accepted_changes.toml (yours: pass --accepted FILE)"
    try:
        baseline = _release("--baseline", args.baseline or pinned_release(args.pinned))
        report.baseline = str(baseline)
        candidate = _release("--candidate", args.candidate)
        report.candidate = str(candidate)
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
                    f"--results {args.results!r}; recorded releases: "
                    + ", ".join(map(str, recorded))
                )
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
        config = getattr(args, "config", None)
        own_dir = _own_dir(args, scan_targets)
        own = own_dir is not None
        if config is None and own_dir is not None and (own_dir / OWN_CONFIG).is_file():
            config = str(own_dir / OWN_CONFIG)  # the project's own targets, its own verdict
        report.declaration = load_declaration(config, [*args.scan, *args.tests] if team else ())
        if team and report.declaration.targets is None:
            # nothing declared: the repository says whether the interpreter is a target
            inferred = targets.infer(
                [*args.scan, *args.tests], {"tests_device": getattr(args, "tests_device", None)}
            )
            report.declaration = replace(report.declaration, inferred=inferred)
        profile = None
        if team:
            profile = build_profile(
                args.scan,
                args.tests,
                runs,
                report.declaration,
                baseline=args.baseline,
                candidate=str(candidate),
                launches_elsewhere=not own,
            )
        elif own:
            # the project's verdict is about what kernels/ does, as a team's is about its code
            profile = build_profile(
                [PROJECT_KERNELS],
                [],
                runs,
                report.declaration,
                baseline=args.baseline,
                candidate=str(candidate),
                launches_elsewhere=False,
            )
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
        apply_profile(report, profile, accepted, baseline, candidate, own=own)
        report.coverage = coverage_text(sel.sides)
    # one blocking reason per root: what only says how a removed API behaves follows from it
    report.folded += roots.fold(
        report.comparison.findings, report.tied, load_map().probes, report.scanned
    )
    # a change that only adds a warning: after the profile, so that only used ones are listed
    report.notices += policy.split_notices(report.comparison)
    if profile is not None:
        # a file of the team's code that could not be read may use anything that changed
        report.comparison.undecidable += [
            f"your code: a file was not read, so its uses are unknown: {u}" for u in profile.unread
        ]
    return report


def stale_acknowledgements(
    report: GateReport, accepted: Sequence[AcceptedChange], baseline: Release, candidate: Release
) -> list[str]:
    """The acknowledgements for this upgrade that match no change (a probe renamed, a change
    that went away, a path from another machine): named, so that a dead entry is noticed
    before it hides a later change nobody looked at. Never blocking."""
    found = [*report.comparison.findings, *report.unused, *report.fixed]
    files = {u.path for u in report.profile.uses} if report.profile is not None else set()
    out = []
    for ack in accepted:
        if not ack.for_upgrade(baseline, candidate):
            continue
        hit = any(ack.matches(f.probe, f.where, f.baseline or "", f.candidate or "", baseline,
                              candidate) for f in found)  # fmt: skip
        if not hit:
            out.append(f"{ack.describe()}: matches no change of this upgrade")
        elif ack.paths and not any(matches_path(p, ack.path_globs()) for p in files):
            out.append(f"{ack.describe()}: its paths match no file of the scanned code")
    return out


USES_SHOWN = 10  # profile uses listed per finding in gate.md; gate.json keeps them all


def apply_profile(
    report: GateReport,
    profile: Profile,
    accepted: Sequence[AcceptedChange],
    baseline: Release,
    candidate: Release,
    own: bool = False,
) -> None:
    """Make the verdict about the team's code (``own``: this project's kernels/, which the
    rows marked ``project`` in their probe.toml [usage] measure, so those always concern it): a
    finding its profile does not use moves to
    ``report.unused`` (never blocking); one it uses or may be affected by stays, naming each
    use (kernel, file:line, test); a fingerprint value the candidate fixed moves to
    ``report.fixed``; the team's acknowledgements apply where they cover every use."""
    report.profile = profile
    matcher = Matcher(profile)
    sites = Sites(report.scanned)
    memo: dict[str, Any] = {}

    def rel(f: gc.GateFinding) -> Any:
        key = f.probe if not f.uses else f"{f.probe}\0{f.where}\0{f.uses}"
        if key not in memo:
            memo[key] = relevance(f, matcher, sites)
        return memo[key]

    c = report.comparison
    kept: list[gc.GateFinding] = []
    for f in c.findings:
        # (a resource change that does not block still concerns only code that runs the kernel)
        if f.kind not in (*gc.UNSAFE_KINDS, gc.ACCEPTED, gc.MAY_SLOW):
            kept.append(f)
            continue
        # (a finding the scanner or the census tied to the code's own sites is about them)
        project_row = own and bool(matcher.map.probes.get(f.probe, {}).get("project"))
        if (
            not f.uses
            and not project_row
            and policy.never_team_relevant(f.probe, matcher.map.probes)
        ):
            report.unused.append(f)
            continue
        m = Match(USED, [], "measures this project's own kernels") if project_row else rel(f)
        if f.ruled_out and m.status != NOT_USED:
            # lines whose own case did not change, or that a guard keeps off the candidate
            # (the scanner's reading, matrix.gate.compare.concerned_uses), are not its uses
            off = {_shown_line(t, report.scanned) for t in f.ruled_out}
            kept_uses = [u for u in m.uses if f"{u.path}:{u.line}" not in off]
            m = Match(m.status, kept_uses, m.why) if kept_uses or not m.uses else Match(NOT_USED)
        if m.status == NOT_USED:
            report.unused.append(f)
            continue
        f.relevance = m.status
        report.tied.append((f, list(m.uses)))
        shown = list(dict.fromkeys(u.describe() for u in m.uses))
        f.uses = [*f.uses, *shown]
        if m.status == MAY_AFFECT:
            report.may_why[id(f)] = m.why
            f.evidence.append(
                f"may affect your code: {m.why or 'an operand kind is not inferable'}; "
                "type the value (e.g. `.to(tl.float16)`) or run the kernel through --tests"
            )
        if _fixed(f):
            report.fixed.append(f)
            continue
        if f.kind == gc.BEHAVIOUR:
            for ack in accepted:
                if ack.matches(
                    f.probe, f.where, f.baseline or "", f.candidate or "", baseline, candidate
                ) and matcher.covers(ack.path_globs(), ack.kernels, m.uses):
                    f.kind, f.reason = gc.ACCEPTED, ack.reason
                    break
        kept.append(f)
    c.findings = kept
    for text in list(c.undecidable):
        probe = c.undecidable_probe.get(text)
        if probe is not None and (
            policy.never_team_relevant(probe, matcher.map.probes)
            or rel(gc.GateFinding("", probe, "", None, None)).status == NOT_USED
        ):
            c.undecidable.remove(text)
            report.unused_undecidable.append(text)


def _shown_line(text: str, roots: Sequence[str]) -> str:
    """A scanner's ``path:line`` as the profile names the same line (``shown_path``)."""
    path, _, line = text.rpartition(":")
    return f"{shown_path(path, roots)}:{line}"


def _fixed(f: gc.GateFinding) -> bool:
    """A fingerprint value that was wrong (or never stored) on the baseline and is right on the
    candidate (or, for an observed cell, a value where nothing was stored before)."""
    return (
        f.probe.startswith(fingerprint.PREFIX)
        and f.baseline in fingerprint.BAD_VALUES
        and (f.candidate in fingerprint.RIGHT_STATUSES
             or (f.baseline == fingerprint.UNWRITTEN and f.candidate not in fingerprint.BAD_VALUES))
    )  # fmt: skip


def write_outputs(report: GateReport, out: str | Path) -> str:
    markdown = render_markdown(report)
    out = Path(out)
    atomic_write_text(out / "gate.md", markdown)
    atomic_write_text(out / "gate.json", json.dumps(report.to_dict(), indent=1) + "\n")
    return markdown


def split_device(argv: Sequence[str]) -> tuple[str, list[str]]:
    """``--device`` of the gate's arguments (``cpu`` when absent), read by argparse, and the
    other arguments: ``cuda`` runs the GPU legs (``matrix.gate.legs``, their own parser) instead
    of comparing recorded results, so the device picks the parser that reads the rest."""
    p = _Parser(prog="python -m matrix gate", add_help=False, allow_abbrev=False)
    p.add_argument("--device", default="cpu")
    known, rest = p.parse_known_args(list(argv))
    return known.device, rest


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


def finding_groups(report: GateReport) -> list[tuple[str, str, list[gc.GateFinding]]]:
    """The entries ``render_markdown`` lists, in its order: (kind, section title, the findings
    it reads as one entry), grouped by ``_group_key``. The report's pages call this so that an
    entry on a page is an entry of the gate."""
    out: list[tuple[str, str, list[gc.GateFinding]]] = []
    for kind, title in SECTIONS:
        groups: dict[tuple[Any, ...], list[gc.GateFinding]] = {}
        for f in report.comparison.findings:
            if f.kind == kind:
                groups.setdefault(_group_key(f), []).append(f)
        out += [(kind, title, members) for members in groups.values()]
    return out


def split_cell(probe: str) -> tuple[str, str | None]:
    """A finding's group and member (``_split_cell``): public for the report's pages."""
    return _split_cell(probe)


if __name__ == "__main__":
    cli.deprecated("python -m matrix.gate.verdict", "gate")
    sys.exit(cli.run(main, "matrix.gate"))
