"""The gate's Markdown summary (gate.md, fit for a pull-request comment): the verdict line
first, then each finding grouped (a group whose 40 cells changed the same way is one entry),
with evidence, fix and the acknowledgement to paste."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matrix import cli
from matrix.analyze.profile import MAY_AFFECT
from matrix.gate import compare as gc
from matrix.gate import summary, timing
from matrix.gate.gate_report import EXIT_SAFE, EXIT_UNSAFE, SECTIONS, GateReport
from matrix.gate.usage import shown_path

USES_SHOWN = 10  # profile uses listed per finding in gate.md; gate.json keeps them all


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
    if profile.assumption:  # the open element types it stands for (gate.json: all)
        lines.append(f"- {profile.assumption}: {_few(profile.assumed)}")
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
            "right on the candidate, or refused instead of computed wrong (a GPU launch measured: "
            "`matrix/data/gpu_launches.toml`); never blocking:"
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


def _folded_dtype_section(report: GateReport) -> list[str]:
    """Lowering changes that follow from a result-dtype change: per dtype change and group,
    how many findings (never a reason of their own; the dtype change blocks)."""
    groups = Counter(
        (root.probe, root.baseline, root.candidate, _split_cell(f.probe)[0], f.baseline,
         f.candidate)
        for f, root in report.folded_dtype
    )  # fmt: skip
    lines = ["", f"### Follows from a result-dtype change ({len(report.folded_dtype)})", ""]
    lines.append(
        "A values case's TTIR lowering that differs only by conversions where the result dtype "
        "of the same operation on the same operands changed, at lines that change already "
        "names (matrix/gate/lowering.py): the dtype change is the one reason (above); these "
        "are not counted again."
    )
    lines.append("")
    for (root, r_before, r_after, group, before, after), k in sorted(groups.items()):
        lines.append(
            f"- `{group}` `{before}` → `{after}`: {k} finding(s), follow from `{root}` "
            f"`{r_before}` → `{r_after}`"
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
        lines += _findings_section(report, kind, title)
    if report.folded:
        lines += _folded_section(report)
    if report.folded_dtype:
        lines += _folded_dtype_section(report)
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


def _findings_section(report: GateReport, kind: str, title: str) -> list[str]:
    """One section of gate.md's details: its findings of ``kind``, grouped (``_group_key``)."""
    groups: dict[tuple[Any, ...], list[gc.GateFinding]] = {}
    for f in report.comparison.findings:
        if f.kind == kind:
            groups.setdefault(_group_key(f), []).append(f)
    if not groups:
        return []
    lines = ["", f"### {title} ({len(groups)})", ""]
    if kind == gc.RELAXATION:
        return lines + _relaxations(groups)
    if kind == gc.LOWERING_EQUAL:
        lines += [
            "The TTIR ops of a values case changed on an aot column, and the GPU column of the "
            "same target measured every value of that case equal on both releases "
            "(matrix/gate/lowering.py): another lowering of the same values.",
            "",
        ]
    if len(groups) > ENTRIES_SHOWN:
        lines += [f"The first {ENTRIES_SHOWN}; gate.json lists all {len(groups)}.", ""]
    for members in list(groups.values())[:ENTRIES_SHOWN]:
        lines += _entry(report, kind, members)
    return lines


def _entry(report: GateReport, kind: str, members: Sequence[gc.GateFinding]) -> list[str]:
    """One grouped entry: the change, where, its cells or tests, uses, evidence and fix, and
    the acknowledgement to paste where one can accept it."""
    f = members[0]
    wheres = list(dict.fromkeys(m.where for m in members))
    uses = list(dict.fromkeys(u for m in members for u in m.uses))
    change = f"`{f.baseline}` → `{f.candidate}`" if f.baseline else f"`{f.candidate}`"
    group, _ = _split_cell(f.probe)
    cells = list(dict.fromkeys(filter(None, (_split_cell(m.probe)[1] for m in members))))
    lines = [f"- **{group}**: {change} on {', '.join(wheres)}"]
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
    return lines


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
