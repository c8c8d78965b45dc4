"""The closing note's ranked findings (matrix/report/discovery.py), from small synthetic runs:
each change of a recorded state with its first and last release, cells that changed together
folded into one finding, what got worse ranked before what was fixed."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core import DataFileError
from matrix.report import discovery
from matrix.results import Result, Run, raw_name, write_raw
from tests.test_gate_resources import _run as resource_run


def _run(release: str, cells: dict[str, str], abi: str = "float") -> Run:
    errors = {c: f"RuntimeError: refused on {release}" for c, s in cells.items() if s != "allowed"}
    launcher = {"fp32": {"c": abi, "storage": None}, "i32": {"c": "int32_t", "storage": None}}
    return Run(
        f"triton-{release}-numpy-2.4.6",
        {"triton": release, "numpy": "2.4.6"},
        results=[
            Result("python_in_kernel", "aot", "cuda:90", "restricted", "", 1.0,
                   {"cells": cells, "errors": errors}),
            Result("aot_launcher_abi", "aot", "cuda:90", "match" if abi == "float" else
                   "mismatch", f"x_fp32 declared {abi}", 1.0, {"jit_launcher": launcher}),
        ],
    )  # fmt: skip


def _runs() -> list[Run]:
    allowed = {"helper": "allowed", "math": "allowed", "cdiv": "rejected"}
    refused = {"helper": "rejected", "math": "rejected", "cdiv": "rejected"}
    fixed = {"helper": "rejected", "math": "rejected", "cdiv": "allowed"}
    return [
        _run("3.3.1", allowed),
        _run("3.4.0", allowed, abi="double"),
        _run("3.5.1", refused, abi="double"),
        _run("3.6.0", fixed, abi="double"),
    ]


def test_a_change_has_its_first_and_last_release_and_its_evidence() -> None:
    found = discovery.ranked(_runs())
    (refused,) = [f for f in found if f.subject == "python_in_kernel" and f.worse]
    assert (refused.previous, refused.changed_at, refused.last) == ("3.4.0", "3.5.1", "3.6.0")
    assert refused.current and refused.wheres == ["aot:cuda:90"]
    # the two cells that changed together are one finding
    assert refused.changes == [("helper", "allowed", "rejected"), ("math", "allowed", "rejected")]
    assert refused.evidence.startswith("RuntimeError: refused on 3.5.1 (raw triton-3.5.1")


def test_what_got_worse_ranks_before_what_was_fixed() -> None:
    found = discovery.ranked(_runs())
    worse = [f.worse for f in found]
    assert worse == sorted(worse, reverse=True) and worse[0] and not worse[-1]
    (fixed,) = [f for f in found if not f.worse]
    assert fixed.changes == [("cdiv", "rejected", "allowed")] and fixed.changed_at == "3.6.0"
    # the launcher's declared type and its status changed in one release: one finding
    (abi,) = [f for f in found if f.subject == "aot_launcher_abi"]
    assert ("C type of a fp32 scalar", "float", "double") in abi.changes
    assert ("", "match", "mismatch") in abi.changes and abi.changed_at == "3.4.0"


def test_a_resource_growth_is_a_finding_until_that_measure_moves_again() -> None:
    runs = [resource_run("3.8.0"), resource_run("3.9.0", local_bytes=800)]
    (f,) = discovery.ranked(runs)
    assert f.subject == "splitk (fused) resources" and f.changes == [("spills", "640", "800")]
    assert (f.changed_at, f.last, f.wheres) == ("3.9.0", "3.9.0", ["aot:cuda:90"])


def test_the_command_writes_the_note(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for run in _runs():
        write_raw(run, raw / raw_name(run.id))
    out = tmp_path / "notes" / "findings.md"
    assert discovery.main(["--raw", str(raw), "--out", str(out), "--top", "1"]) == 0
    text = out.read_text()
    assert "3 findings in all; the first 1:" in text and "## The other 2" in text
    assert text.count("Evidence:") == 1
    assert discovery.main(["--raw", str(tmp_path / "nowhere")]) == 2


def test_the_ranking_file_is_checked(tmp_path: Path) -> None:
    bad = tmp_path / "d.toml"
    text = discovery.RULES_PATH.read_text(encoding="utf-8")
    bad.write_text(text.replace("wrong = 5", 'wrong = "high"'), encoding="utf-8")
    with pytest.raises(DataFileError, match="cost"):
        discovery.load_ranking(bad)
    assert discovery.load_ranking().cost["wrong"] == 5
