"""What may block a verdict, beyond what changed: the gate's decision policy in one place.

- A *relaxation* (refused or absent on the baseline, anything else on the candidate) never
  blocks: code that runs on the baseline cannot be using it. The rule is
  ``matrix.analyze.fingerprint.relaxation``; ``matrix.gate.compare`` files such changes as
  ``RELAXATION`` findings ("new on the candidate").
- *Targets*: with declared targets (``[tool.triton-compat] targets``,
  ``matrix.analyze.profile.declaration``), a finding or an undecidable item about a column the
  team does not run on goes to "not on your targets", never blocking (``split_targets``). No
  declaration: every column counts (fail closed).
- *Never team-relevant probe rows*: a probe row that measures this project's own kernels
  (``project = true`` in its probe.toml ``[usage]``) or that its usage marks ``never`` never
  blocks a team's verdict (``never_team_relevant``); it still decides the project's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matrix.analyze.profile.declaration import Declaration
from matrix.catalog import PROBES_BY_NAME
from matrix.core import Column
from matrix.gate import compare as gc


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
    if declaration.targets is None:
        return [], []
    moved: list[gc.GateFinding] = []
    kept: list[gc.GateFinding] = []
    for f in comparison.findings:
        blocking = f.kind in (*gc.UNSAFE_KINDS, gc.ACCEPTED)
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
