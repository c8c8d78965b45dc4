"""Ordered rules that give a test record a class: one reader for every rules file of that shape.

A rules file is an array of tables ``[[TABLE]]``, each with ``class``, ``why``, optional
``outcome`` (a list of test outcomes; any, when absent) and optional ``match`` (a regular
expression over the record's text; anything, when absent). The first rule that applies decides,
so the last must apply to everything. ``matrix/data/test_outcomes.toml`` (the gate's classes of a
failed team test) and ``matrix/data/redirect.toml`` (failure classes under the CUDA-to-CPU
redirect) are both read here.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from matrix.core import DataFileError, load_toml, table_keys, text_at


@dataclass(frozen=True)
class OutcomeRule:
    """One row: tests with ``outcomes`` (any, when empty) whose text matches ``match``
    (anything, when None) are of class ``cls``."""

    cls: str
    why: str
    outcomes: tuple[str, ...] = ()
    match: re.Pattern[str] | None = None

    def applies(self, outcome: str, text: str) -> bool:
        if self.outcomes and outcome not in self.outcomes:
            return False
        return self.match is None or bool(self.match.search(text))


def read_rules(
    path: Path, table: str, classes: Collection[str] | None = None
) -> tuple[OutcomeRule, ...]:
    """The ordered ``[[table]]`` rules of ``path`` (each class one of ``classes`` when given);
    a malformed row is a DataFileError naming it."""
    rows = load_toml(path).get(table)
    if not isinstance(rows, list) or not rows:
        raise DataFileError(path, table, f"a non-empty array of [[{table}]] tables", rows)
    rules = []
    for i, row in enumerate(rows):
        where = f"{table}[{i}]"
        row = table_keys(path, where, row, {"class", "why", "outcome", "match"})
        cls = text_at(path, where, row, "class")
        if classes is not None and cls not in classes:
            raise DataFileError(path, f"{where}.class", f"one of {', '.join(classes)}", cls)
        outcomes = row.get("outcome", [])
        if not isinstance(outcomes, list) or not all(isinstance(o, str) for o in outcomes):
            raise DataFileError(path, f"{where}.outcome", "a list of test outcomes", outcomes)
        match = row.get("match")
        try:
            pattern = re.compile(match) if match is not None else None
        except (re.error, TypeError) as e:
            raise DataFileError(path, f"{where}.match", f"a regular expression ({e})", match) from e
        rules.append(OutcomeRule(cls, text_at(path, where, row, "why"), tuple(outcomes), pattern))
    if rules[-1].outcomes or rules[-1].match is not None:
        raise DataFileError(path, f"{table}[{len(rules) - 1}]", "a last rule that matches all")
    return tuple(rules)
