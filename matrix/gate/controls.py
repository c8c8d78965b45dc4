"""Fingerprint cells measured beside a control: a change that any compile shows is not a
change of what a cell's kernel spells.

The ``warnings`` group compiles a few kernels that use older spellings (``allow_tf32=``,
``tl.math``) and one that uses none (``plain_kernel``). When a release starts warning at every
compile (3.9.0: "TRITON_DEFAULT_FP_FUSION is unset ..."), every kernel's cell changes the same
way as the control's; tying that change to a team's ``allow_tf32=`` line would blame a spelling
for what every compile does. ``usage_map.toml``'s ``[controls]`` names each group's control; a
cell whose two sides equal the control's two sides (statuses and recorded texts) is explained
by the control and listed as a note, while a cell that differs from its control (its own
warning, a refusal) stays a change of its own.

    >>> control_probe("fp.warnings[allow_tf32_kw|none]", {"warnings": "plain_kernel"})
    'fp.warnings[plain_kernel|none]'
    >>> control_probe("fp.warnings[plain_kernel|none]", {"warnings": "plain_kernel"}) is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from matrix.analyze import fingerprint
from matrix.core import MATRIX_DIR, load_toml
from matrix.results import Result

MAP_PATH = MATRIX_DIR / "data" / "usage_map.toml"
# What a cell's evidence holds beyond its status that must also agree with the control's.
COMPARED_EVIDENCE = ("warnings", "details")


@lru_cache(maxsize=1)
def controls() -> dict[str, str]:
    """``{group: control kernel}`` from usage_map.toml's ``[controls]``."""
    raw = load_toml(MAP_PATH).get("controls", {})
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ValueError(f"{MAP_PATH}: controls: expected a table of strings, got {raw!r}")
    return dict(raw)


def control_probe(probe: str, table: Mapping[str, str] | None = None) -> str | None:
    """The control cell of the fingerprint cell ``probe`` (same setting after ``|``), or None
    where its group has no control or ``probe`` is the control itself."""
    table = controls() if table is None else table
    group, bracket, case = probe.partition("[")
    if not bracket or not case.endswith("]") or not group.startswith(fingerprint.PREFIX):
        return None
    control = table.get(fingerprint.group_name(group))
    kernel, bar, setting = case[:-1].partition("|")
    if control is None or not bar or kernel == control:
        return None
    return f"{group}[{control}|{setting}]"


def _same(cell: Result, control: Result) -> bool:
    return cell.status == control.status and all(
        cell.data.get(k) == control.data.get(k) for k in COMPARED_EVIDENCE
    )


def explained(base: Result, cand: Result, base_control: Result | None,
              cand_control: Result | None) -> bool:  # fmt: skip
    """Whether a cell's change from ``base`` to ``cand`` is its control's change: the control
    was observed on both sides and equals the cell on each (status and texts)."""
    if base_control is None or cand_control is None:
        return False
    return _same(base, base_control) and _same(cand, cand_control)
