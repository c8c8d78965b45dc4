"""Fingerprint pages (matrix/report/fp_pages.py): one line per group, a page per group, built on
matrix.analyze.fingerprint's own compare. Runs once that module is in the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.report import fp_pages
from matrix.results import Result, Run

fingerprint = pytest.importorskip("matrix.analyze.fingerprint")


def _run(triton: str, cells: dict[str, str]) -> Run:
    return Run(
        f"triton-{triton}-numpy-2.4.6",
        {"triton": triton, "numpy": "2.4.6", "gpu": None},
        {"status": "ok", "seconds": 1.0, "detail": ""},
        [Result("fp.binary.add", "interpret", None, "observed", "", 0.1, {"cells": cells}),
         Result("fp.cast.to", "interpret", None, "observed", "", 0.1, {"cells": {"a": "x"}})],
    )  # fmt: skip


def test_one_line_per_group_with_its_changes(tmp_path: Path) -> None:
    runs = [
        _run("3.8.0", {"int8,int16": "int16", "int8,int8": "int8", "v": "right"}),
        _run("3.9.0", {"int8,int16": "int32", "int8,int8": "int8", "v": "wrong"}),
    ]
    groups = {g.name: g for g in fp_pages.build_groups(runs)}
    assert set(groups) == {"binary.add", "cast.to"}
    add = groups["binary.add"]
    assert add.changed == 2 and groups["cast.to"].changed == 0
    (pair,) = add.pairs
    assert (pair.before, pair.after, pair.where) == ("3.8.0", "3.9.0", "interpret (numpy 2.4.6)")
    assert pair.kinds == {"behaviour": 1, "regression": 1}
