"""The gate's census check: scanned uses of a removed name, a refused keyword, a changed default
the code relies on; on the two snapshots recorded from 3.8.0 and 3.9.0 runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from matrix.gate.api import ApiUse, check_uses
from matrix.gate.compare import ACCEPTED, BEHAVIOUR, BREAKING, Comparison
from matrix.gate.config import AcceptedChange
from matrix.results import Result, Run, raw_files, read_runs
from matrix.scan.findings import ApiUse as ScanApiUse

FIXTURES = Path(__file__).parent / "fixtures" / "census"


def runs(release: str) -> list[Run]:
    return read_runs(FIXTURES / f"triton-{release}.json")


def census_run(release: str, stages: str) -> Run:
    doc = {
        "format": 1,
        "version": release,
        "modules": {"triton": {"status": "ok", "file": "__init__.py", "names": {"Config": "C"}}},
        "defs": {"C": {"kind": "class", "file": "runtime/autotuner.py", "line": 7,
                       "params": ["kwargs", "num_warps=4", f"num_stages={stages}"]}},
        "env": {},
    }  # fmt: skip
    result = Result("api_surface", "aot", None, "recorded", data={"census": doc})
    return Run(id=f"triton-{release}", env={"triton": release}, results=[result])


def test_removed_name_and_refused_keyword_are_breaking_each_once() -> None:
    uses = [
        ApiUse("triton.language.advance", "k.py", 10, positional=2),
        ApiUse("triton.language.advance", "k.py", 30, positional=2),
        ApiUse("triton.language.load", "k.py", 12, keywords=("boundary_check",), positional=1),
        ApiUse("triton.language.load", "k.py", 14, keywords=("mask", "other"), positional=1),
        ApiUse("triton.language.dot", "k.py", 16, positional=2),
    ]
    out = Comparison()
    check_uses(runs("3.8.0"), runs("3.9.0"), "3.8.0", "3.9.0", uses, out)
    assert out.undecidable == []
    breaking = {f.where: f for f in out.findings if f.kind == BREAKING}
    assert sorted(breaking) == ["triton.language.advance", "triton.language.load"]
    advance = breaking["triton.language.advance"]
    assert advance.uses == ["k.py:10 triton.language.advance", "k.py:30 triton.language.advance"]
    assert any("3.8.0 language/core.py:" in e for e in advance.evidence)
    load = breaking["triton.language.load"]
    assert load.uses == ["k.py:12 triton.language.load"]
    assert "boundary_check" in load.candidate


def test_no_finding_when_the_candidate_accepts_the_use() -> None:
    out = Comparison()
    uses = [ApiUse("triton.language.load", "k.py", 14, keywords=("mask",), positional=1)]
    check_uses(runs("3.8.0"), runs("3.9.0"), "3.8.0", "3.9.0", uses, out)
    assert [f for f in out.findings if f.kind == BREAKING] == []


def test_changed_default_the_code_relies_on() -> None:
    uses = [ApiUse("triton.Config", "tune.py", 3, positional=1)]
    out = Comparison()
    check_uses([census_run("3.2.0", "2")], [census_run("3.3.1", "3")], "3.2.0", "3.3.1", uses, out)
    (f,) = out.findings
    assert (f.kind, f.where, f.baseline, f.candidate) == (
        BEHAVIOUR,
        "triton.Config:num_stages",
        "2",
        "3",
    )
    assert "runtime/autotuner.py:7" in f.evidence[0]
    # Passing it explicitly: nothing relies on the default.
    out = Comparison()
    passed = [ApiUse("triton.Config", "tune.py", 3, keywords=("num_stages",), positional=1)]
    check_uses([census_run("3.2.0", "2")], [census_run("3.3.1", "3")], "3.2.0", "3.3.1",
               passed, out)  # fmt: skip
    assert out.findings == []


def test_accepted_default_change() -> None:
    ack = AcceptedChange("api_surface", "triton.Config:num_stages", "2", "3", "we pass stages")
    out = Comparison()
    check_uses([census_run("3.2.0", "2")], [census_run("3.3.1", "3")], "3.2.0", "3.3.1",
               [ApiUse("triton.Config", "tune.py", 3, positional=1)], out, [ack])  # fmt: skip
    assert [(f.kind, f.reason) for f in out.findings] == [(ACCEPTED, "we pass stages")]


def test_a_default_that_behaves_the_same_for_the_use_is_a_note_not_a_change() -> None:
    # matrix/data/same_defaults.toml: softmax's keep_dims went False -> None at 3.9.0; with
    # `dim` left out both normalise along axis 0 the same way (measured), so only a use that
    # passes `dim` relies on the old default.
    left_out = ApiUse("triton.language.softmax", "k.py", 5, positional=1)
    dim_passed = ApiUse("triton.language.softmax", "k.py", 9, positional=2)
    dim_keyword = ApiUse("triton.language.softmax", "k.py", 11, keywords=("dim",), positional=1)
    out = Comparison()
    check_uses(runs("3.8.0"), runs("3.9.0"), "3.8.0", "3.9.0", [left_out], out)
    assert out.findings == []
    (note,) = out.notes
    assert "keep_dims" in note and "k.py:5" in note
    out = Comparison()
    check_uses(runs("3.8.0"), runs("3.9.0"), "3.8.0", "3.9.0",
               [left_out, dim_passed, dim_keyword], out)  # fmt: skip
    (f,) = out.findings
    assert (f.kind, f.where, f.baseline, f.candidate) == (
        BEHAVIOUR,
        "triton.language.softmax:keep_dims",
        "False",
        "None",
    )
    assert f.uses == ["k.py:9 triton.language.softmax", "k.py:11 triton.language.softmax"]


def test_a_passed_value_measured_to_behave_as_the_default_is_left_out() -> None:
    # lmdeploy v4_compressor.py: `tl.softmax(x, 0)`; dim 0 is the axis the default takes
    # (same_when, measured: notes/relevance/session16-defaults/dim0.py), dim 1 is not
    def use(line: int, source: str) -> ScanApiUse:
        call = ast.parse(source).body[0].value  # type: ignore[attr-defined]
        kws = tuple(k.arg for k in call.keywords if k.arg)
        return ScanApiUse("triton.language.softmax", "k.py", line, kws, len(call.args), call=call)

    out = Comparison()
    zero = [use(3, "tl.softmax(x, 0)"), use(4, "tl.softmax(x, dim=0)")]
    check_uses(runs("3.8.0"), runs("3.9.0"), "3.8.0", "3.9.0", zero, out)
    assert out.findings == [] and len(out.notes) == 1
    out = Comparison()
    other = [use(5, "tl.softmax(x, 1)"), use(6, "tl.softmax(x, dim=n)")]
    check_uses(runs("3.8.0"), runs("3.9.0"), "3.8.0", "3.9.0", [*zero, *other], out)
    (f,) = out.findings
    assert f.uses == ["k.py:5 triton.language.softmax", "k.py:6 triton.language.softmax"]


def dot_run(release: str, default: str, cells: dict[str, str]) -> Run:
    """A run of ``release`` whose census has ``tl.dot(..., out_dtype=<default>)`` and whose
    fingerprint row ``fp.dot`` holds ``cells``."""
    doc = {
        "format": 1,
        "version": release,
        "modules": {"triton.language": {"status": "ok", "file": "language/__init__.py",
                                        "names": {"dot": "D"}}},
        "defs": {"D": {"kind": "function", "file": "language/core.py", "line": 9,
                       "params": ["input", "other", "acc=None", f"out_dtype={default}"]}},
        "env": {},
    }  # fmt: skip
    census = Result("api_surface", "aot", None, "recorded", data={"census": doc})
    fp = Result("fp.dot", "interpret", None, "observed", data={"cells": cells})
    return Run(id=f"triton-{release}", env={"triton": release}, results=[census, fp])


def test_a_default_measured_by_fingerprint_cells_is_decided_by_them() -> None:
    # same_defaults.toml: tl.dot's out_dtype float32 -> None holds only where, on the
    # candidate, each `out=default` case gives what `out=float32` gives, or that is refused.
    use = ApiUse("triton.language.dot", "k.py", 3, positional=3)
    old = "triton.language.float32"
    agree = {"float16,acc=none,out=default,prec=default": "float32",
             "float16,acc=none,out=float32,prec=default": "float32",
             "float16,acc=float16,out=default,prec=default": "float16",
             "float16,acc=float16,out=float32,prec=default": "rejected"}  # fmt: skip
    out = Comparison()
    check_uses([dot_run("3.7.1", old, {})], [dot_run("3.8.0", "None", agree)],
               "3.7.1", "3.8.0", [use], out)  # fmt: skip
    assert out.findings == []
    assert any("out_dtype" in n and "the 2 cases" in n for n in out.notes)
    differs = {**agree, "float16,acc=none,out=default,prec=default": "float16"}
    out = Comparison()
    check_uses([dot_run("3.7.1", old, {})], [dot_run("3.8.0", "None", differs)],
               "3.7.1", "3.8.0", [use], out)  # fmt: skip
    assert [(f.kind, f.where) for f in out.findings] == [
        (BEHAVIOUR, "triton.language.dot:out_dtype")
    ]
    # nothing recorded to decide it: fail closed
    out = Comparison()
    check_uses([dot_run("3.7.1", old, {})], [dot_run("3.8.0", "None", {})],
               "3.7.1", "3.8.0", [use], out)  # fmt: skip
    assert [f.kind for f in out.findings] == [BEHAVIOUR]


def test_same_defaults_data_is_checked(tmp_path: Path) -> None:
    from matrix.core import DataFileError
    from matrix.gate.api import same_defaults

    bad = tmp_path / "same.toml"
    bad.write_text('[[same]]\nname = "triton.language.softmax"\nparam = "keep_dims"\n'
                   'from = "False"\nto = "None"\nunless_passed = "dim"\nwhy = "x"\n')  # fmt: skip
    with pytest.raises(DataFileError, match="unless_passed"):
        same_defaults.__wrapped__(bad)
    assert same_defaults(), "the shipped rules load"


def test_every_same_default_names_a_measurement_that_exists() -> None:
    """Each row was measured on both releases: the script and outputs it cites are committed."""
    import re
    import tomllib

    root = Path(__file__).resolve().parents[1]
    rows = tomllib.loads((root / "matrix/data/same_defaults.toml").read_text())["same"]
    cited = [p for row in rows for p in re.findall(r"notes/[\w./-]+\.(?:py|md|txt)", row["why"])]
    assert cited, "no row cites its measurement"
    assert [p for p in cited if not (root / p).is_file()] == []


def test_no_census_is_undecidable_only_with_uses() -> None:
    out = Comparison()
    check_uses(runs("3.8.0"), [], "3.8.0", "3.9.0", [], out)
    assert out.undecidable == [] and out.findings == []
    check_uses(runs("3.8.0"), [], "3.8.0", "3.9.0", [ApiUse("triton.jit", "k.py", 1)], out)
    assert len(out.undecidable) == 1 and "3.9.0" in out.undecidable[0]


# -- through the gate's command line --------------------------------------------------------
def test_gate_fails_on_a_scanned_use_the_candidate_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import shutil
    from dataclasses import replace

    from matrix.gate import verdict
    from matrix.results import read_raw, write_raw
    from matrix.scan import ScanReport

    raw = tmp_path / "raw"
    shutil.copytree(FIXTURES.parent / "gate" / "safe", raw)
    for path in raw_files(raw):
        run = read_raw(path)
        if run.triton in ("3.8.0", "3.9.0"):
            (row,) = runs(run.triton)[0].results
            run.results = [*run.results, replace(row)]
            write_raw(run, path)
    kernel = tmp_path / "k.py"
    kernel.write_text("import triton.language as tl\n")

    def scan_with_uses(targets: list[str], rules: object, **_: object) -> ScanReport:
        report = ScanReport()
        report.uses = [  # type: ignore[attr-defined]  # what the scanner lists (issue 16)
            ApiUse("triton.language.advance", str(kernel), 7, positional=2),
            ApiUse("triton.language.load", str(kernel), 9, positional=1),
        ]
        return report

    monkeypatch.setattr(verdict, "scan_paths", scan_with_uses)
    out = tmp_path / "out"
    code = verdict.main(
        ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw), "--out", str(out),
         "--accepted", str(FIXTURES.parent / "gate" / "accepted_none.toml"),
         "--no-project-scan", "--scan", str(kernel)]
    )  # fmt: skip
    doc = json.loads((out / "gate.json").read_text())
    found = [(f["kind"], f["probe"], f["where"]) for f in doc["findings"]]
    assert code == 1
    assert found == [(BREAKING, "api_surface", "triton.language.advance")]
    assert "triton.language.advance" in (out / "gate.md").read_text()


def test_gate_says_when_the_scanner_lists_no_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from matrix.gate import verdict
    from matrix.scan import ScanReport

    raw = tmp_path / "raw"
    shutil.copytree(FIXTURES.parent / "gate" / "safe", raw)
    kernel = tmp_path / "k.py"
    kernel.write_text("x = 1\n")

    class OldReport(ScanReport):
        def __getattribute__(self, name: str) -> object:
            if name == "uses":
                raise AttributeError(name)
            return super().__getattribute__(name)

    monkeypatch.setattr(verdict, "scan_paths", lambda targets, rules, **_: OldReport())
    out = tmp_path / "out"
    verdict.main(
        ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw), "--out", str(out),
         "--accepted", str(FIXTURES.parent / "gate" / "accepted_none.toml"),
         "--no-project-scan", "--scan", str(kernel)]
    )  # fmt: skip
    assert "API census not checked" in (out / "gate.md").read_text()
