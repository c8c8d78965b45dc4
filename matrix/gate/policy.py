"""What may block a verdict, beyond what changed: the gate's decision policy in one place.

- A *relaxation* (refused or absent on the baseline, anything else on the candidate) never
  blocks: code that runs on the baseline cannot be using it. The rule is
  ``matrix.analyze.fingerprint.relaxation``; ``matrix.gate.compare`` files such changes as
  ``RELAXATION`` findings ("new on the candidate").
- *Targets*: with declared targets (``[tool.triton-compat] targets``,
  ``matrix.analyze.profile.declaration``), a finding or an undecidable item about a column the
  team does not run on goes to "not on your targets", never blocking (``split_targets``). No
  declaration: the interpreter counts only where the team's repository shows it runs there
  (``matrix.gate.targets``, inferred); every compiled column counts (fail closed).
- *Notices*: a change that only adds a warning (``matrix/data/notices.toml``: ``silent`` ->
  ``UserWarning`` of ``fp.warnings``) is listed as a new warning, never blocking
  (``split_notices``): the code compiles and computes the same; a team that runs its tests
  with warnings as errors sees them fail in its ``--tests`` column, which blocks.
- *Never team-relevant probe rows*: a probe row that measures this project's own kernels
  (``project = true`` in its probe.toml ``[usage]``) or that its usage marks ``never`` never
  blocks a team's verdict (``never_team_relevant``); it still decides the project's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from matrix.analyze.profile.declaration import Declaration
from matrix.catalog import PROBES_BY_NAME
from matrix.core import MATRIX_DIR, Column, DataFileError, table_keys, tables_at, text_at
from matrix.gate import compare as gc

NOTICES_PATH = MATRIX_DIR / "data" / "notices.toml"


def column_of(where: str) -> str | None:
    """The measured column a finding's ``where`` names (``interpret``, ``aot:cuda:90``,
    ``gpu:cuda:90``), or None for anything else (an API name, the team's tests, a column with
    no target such as the census's bare ``aot``): those are about every target."""
    try:
        col = Column.parse(where)
    except ValueError:
        return None
    if col.backend != "interpret" and col.target is None:
        return None
    return str(col)


def off_target(where: str, declaration: Declaration) -> bool:
    """Whether ``where`` is a column outside the declared targets (never, undeclared)."""
    column = column_of(where)
    return column is not None and not declaration.runs_on(column)


def split_targets(
    comparison: gc.Comparison, declaration: Declaration
) -> tuple[list[gc.GateFinding], list[str]]:
    """Take out of ``comparison`` the findings that could block (and the acknowledged ones)
    and the undecidable items whose column the team does not run on; return them."""
    if not declaration.narrows:
        return [], []
    moved: list[gc.GateFinding] = []
    kept: list[gc.GateFinding] = []
    for f in comparison.findings:
        blocking = f.kind in (*gc.UNSAFE_KINDS, gc.ACCEPTED, gc.MAY_SLOW, gc.LOWERING_EQUAL)
        (moved if blocking and off_target(f.where, declaration) else kept).append(f)
    comparison.findings = kept
    items = [
        u
        for u in comparison.undecidable
        if off_target(comparison.undecidable_column.get(u, ""), declaration)
    ]
    comparison.undecidable = [u for u in comparison.undecidable if u not in items]
    return moved, items


def never_team_relevant(probe: str, rows: Mapping[str, Mapping[str, Any]]) -> str:
    """Why a probe row never decides a team's verdict ("" where it may): it measures this
    project's own kernels, the usage map says it is never team-relevant, or the map has no row
    for it (``load_map`` refuses that; a row nobody mapped must not block every team).
    ``rows`` is the usage map's ``probes`` table; names that are not catalog probes (cells,
    tests, timings) are not probe rows and get ""."""
    if probe not in PROBES_BY_NAME:
        return ""
    row = rows.get(probe)
    if row is None:
        return "no usage mapping (its probe.toml [usage])"
    if row.get("project"):
        return "measures this project's own kernels"
    never = row.get("never")
    return str(never) if never else ""


@dataclass(frozen=True)
class Notice:
    """One rule of matrix/data/notices.toml."""

    group: str
    before: tuple[str, ...]
    to_suffix: str
    why: str

    def matches(self, f: gc.GateFinding) -> bool:
        group = f.probe.partition("[")[0]
        return (
            group == self.group
            and (f.baseline or "") in self.before
            and (f.candidate or "").endswith(self.to_suffix)
        )


@lru_cache(maxsize=1)
def notices(path: Path = NOTICES_PATH) -> tuple[Notice, ...]:
    """matrix/data/notices.toml's rules, checked (a wrong key or value names it)."""
    rows = tables_at(path, "notice")
    out = []
    for i, raw in enumerate(rows):
        row = table_keys(path, f"notice[{i}]", raw, {"group", "from", "to_suffix", "why"})
        before = row.get("from")
        if not isinstance(before, list) or not all(isinstance(b, str) for b in before):
            raise DataFileError(path, f"notice[{i}] from", "a list of statuses", before)
        for key in ("group", "to_suffix", "why"):
            text_at(path, f"notice[{i}]", row, key)
        out.append(Notice(row["group"], tuple(before), row["to_suffix"], row["why"]))
    return tuple(out)


def split_notices(comparison: gc.Comparison) -> list[gc.GateFinding]:
    """Take out of ``comparison`` the blocking findings that are only notices (``notices``);
    return them."""
    rules = notices()
    moved: list[gc.GateFinding] = []
    kept: list[gc.GateFinding] = []
    for f in comparison.findings:
        notice = f.kind in gc.UNSAFE_KINDS and any(r.matches(f) for r in rules)
        (moved if notice else kept).append(f)
    comparison.findings = kept
    return moved
