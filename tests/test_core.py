"""matrix.core: the shared words, and that every stage takes a release the same way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from matrix.core import (
    AotUnavailable,
    Column,
    DataFileError,
    Release,
    ReleaseError,
    load_toml,
    pair_numpy,
    release_at,
    release_key,
    run_id,
)
from matrix.gate import verdict as gate
from matrix.gate.config import AcceptedChange, load_accepted, pinned_release
from matrix.measure import migrate
from matrix.probes.support.base import Outcome, refusal
from matrix.results import SchemaError, raw_files, read_json, read_raw, read_runs
from matrix.scan import main as scan_main

REPO = Path(__file__).resolve().parent.parent
RAW = REPO / "reports" / "raw"
FIXTURES = Path(__file__).parent / "fixtures"

# ------------------------------------------------------------------------------------- Release


def test_a_short_release_means_exactly_its_zero_patch() -> None:
    assert str(Release.parse("3.8")) == "3.8.0"
    assert Release.parse("3.8") == Release.parse("3.8.0") != Release.parse("3.8.1")
    assert hash(Release.parse("3")) == hash(Release.parse("3.0.0"))
    assert str(Release.parse(" 3.9.0rc1 ")) == "3.9.0rc1"
    assert str(Release.parse("3.9rc1").final) == "3.9.0"


def test_releases_sort_by_version_not_text() -> None:
    texts = ["3.10.0", "3.9.0", "3.9.0rc1", "3.2.0"]
    assert [str(r) for r in sorted(map(Release.parse, texts))] == [
        "3.2.0", "3.9.0rc1", "3.9.0", "3.10.0"
    ]  # fmt: skip
    assert sorted(["3.10.0", None, "main", "3.9"], key=release_key) == [
        "3.9", "3.10.0", "main", None
    ]  # fmt: skip


@pytest.mark.parametrize("text", ["main", "", "3.x", "v"])
def test_a_non_release_is_refused_naming_where_and_the_form(text: str) -> None:
    with pytest.raises(ReleaseError, match=r"^--candidate: .* is not a release; expected X\.Y\.Z"):
        Release.parse(text, "--candidate")
    with pytest.raises(ReleaseError, match=r"^--candidate: expected a release string"):
        Release.parse(3.9, "--candidate")


def test_release_globs_match_the_one_spelling() -> None:
    assert Release.parse("3.8").matches("3.8.*")
    assert not Release.parse("3.80").matches("3.8.*")
    change = AcceptedChange("p", "*", "a", "b", "why", baseline="3.8.*", candidate="3.9.0")
    assert change.matches("p", "interpret", "a", "b", Release.parse("3.8"), Release.parse("3.9"))


# ------------------------------------------------------------------------- ids, columns, pairs


def test_run_id_is_built_from_releases() -> None:
    assert run_id("3.9", "2.4.6") == "triton-3.9.0-numpy-2.4.6"
    assert (
        run_id(Release.parse("3.6.0"), "2.5.2", "gpu-h200") == "triton-3.6.0-numpy-2.5.2-gpu-h200"
    )
    with pytest.raises(ReleaseError):
        run_id("main", "2.4.6")


def test_column_has_one_spelling_and_parses_it_back() -> None:
    for col in (Column("aot", "cuda:90"), Column("gpu", "cuda:90"), Column("interpret")):
        assert Column.parse(str(col)) == col
    assert str(Column("aot", "hip:gfx942")) == "aot:hip:gfx942"
    with pytest.raises(ValueError, match="expected one of"):
        Column.parse("cpu:x86")


def test_numpy_pairing() -> None:
    assert pair_numpy(["1.26.4", "2.4.6"], ["2.4.6", "1.26.4"]) == [
        ("1.26.4", "1.26.4"), ("2.4.6", "2.4.6")
    ]  # fmt: skip
    assert pair_numpy(["1.26.4", "2.3.5"], ["2.4.6", "2.10.0"]) == [("2.3.5", "2.10.0")]
    assert pair_numpy([], ["2.4.6"]) == []


# ---------------------------------------------------------------------------------- data files


def test_data_file_errors_name_file_key_and_expectation(tmp_path: Path) -> None:
    bad = tmp_path / "pinned.toml"
    bad.write_text('[triton]\nrelease = "main"\n')
    with pytest.raises(DataFileError, match=r"pinned\.toml: triton\.release: expected a release"):
        pinned_release(bad)
    bad.write_text("[triton\n")
    with pytest.raises(DataFileError, match=r"pinned\.toml: expected valid TOML"):
        load_toml(bad)
    with pytest.raises(DataFileError, match=r"absent\.toml: expected a readable file"):
        load_accepted(tmp_path / "absent.toml")
    assert release_at({"a": {"b": "3.8"}}, "a.b", "x.toml") == Release.parse("3.8.0")


def test_read_runs_names_a_matrix_json_that_is_not_json(tmp_path: Path) -> None:
    bad = tmp_path / "matrix.json"
    bad.write_text('{"schema": 2, "runs": [')
    with pytest.raises(SchemaError, match=r"matrix\.json: not JSON"):
        read_runs(bad)


def test_a_raw_file_whose_release_is_not_one_is_refused(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "raw" / "triton-3.9.0-numpy-2.4.6.json").read_text())
    doc["runs"][0]["env"]["triton"] = "main"
    (tmp_path / "x.json").write_text(json.dumps(doc))
    with pytest.raises(SchemaError, match=r"env\.triton: 'main' is not a release"):
        read_raw(tmp_path / "x.json")


# ------------------------------------------------------------------------------------ schema 1


def _schema_1(tmp_path: Path) -> Path:
    doc = json.loads((FIXTURES / "raw" / "triton-3.5.1-numpy-2.4.6.json").read_text())
    doc["schema"] = 1
    for r in doc["runs"][0]["results"]:
        if r["probe"] == "dot_acc_out_dtype":
            r["status"] = "error"
    doc["runs"][0]["results"].append(
        {"probe": "dot_acc_out_dtype", "backend": "gpu", "target": "cuda:90", "status": "error",
         "detail": "Traceback (most recent call last): ...", "seconds": 0.1}
    )  # fmt: skip
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_schema_1_file_is_read_converted_and_named(tmp_path: Path, capsys) -> None:
    path = _schema_1(tmp_path)
    run = read_raw(path)
    assert f"{path}: results schema 1 (old)" in capsys.readouterr().err
    statuses = {
        (r.backend, r.target): r.status for r in run.results if r.probe == "dot_acc_out_dtype"
    }
    # The release's refusal is now "rejected"; a probe that broke (a traceback) stays "error".
    assert statuses.pop(("gpu", "cuda:90")) == "error"
    assert set(statuses.values()) == {"rejected"}


def test_migrate_rewrites_an_old_file_once(tmp_path: Path, capsys) -> None:
    path = _schema_1(tmp_path)
    assert migrate.main([str(path)]) == 0
    assert json.loads(path.read_text())["schema"] == 2
    before = path.read_bytes()
    capsys.readouterr()
    assert migrate.main([str(path)]) == 0
    assert path.read_bytes() == before and "0 of 1" in capsys.readouterr().out
    read_raw(path)
    assert "schema 1" not in capsys.readouterr().err


def test_committed_results_are_current() -> None:
    for path in [*raw_files(RAW), *raw_files(FIXTURES / "raw")]:
        assert read_json(path)["schema"] == 2, path


# ----------------------------------------------------------------------------------------- aot


def test_aot_unavailable_is_recognised_by_type_not_by_name() -> None:
    assert refusal(Outcome(exception=AotUnavailable("no ld.lld")), "rejected").status == "skipped"

    class AotUnavailable_(Exception):
        pass

    AotUnavailable_.__name__ = "AotUnavailable"
    assert refusal(Outcome(exception=AotUnavailable_("x")), "rejected").status == "rejected"


# ------------------------------------------------------------- one release, one verdict


def _gate(tmp_path: Path, baseline: str, candidate: str) -> tuple[int, dict]:
    out = tmp_path / f"gate-{baseline}-{candidate}"
    code = gate.main(
        ["--baseline", baseline, "--candidate", candidate, "--results", str(RAW), "--out", str(out)]
    )
    return code, json.loads((out / "gate.json").read_text())


def test_the_gate_gives_one_verdict_for_3_8_and_3_8_0(tmp_path: Path) -> None:
    short_code, short = _gate(tmp_path, "3.8", "3.9")
    full_code, full = _gate(tmp_path, "3.8.0", "3.9.0")
    # the same verdict either way (a real one: safe or unsafe, never undecidable)
    assert short_code == full_code in (0, 1)
    assert (short["baseline"], short["candidate"]) == ("3.8.0", "3.9.0")
    for key in ("findings", "undecidable", "compared", "errors"):
        assert short[key] == full[key], key


def test_scan_agrees_with_the_gate_on_a_short_candidate(tmp_path: Path, capsys) -> None:
    fixture = FIXTURES / "scan" / "tri001_block_ptr.py"
    shutil.copy(fixture, tmp_path / fixture.name)
    outs = []
    for candidate in ("3.9", "3.9.0"):
        argv = [str(tmp_path), "--results", str(RAW), "--candidate", candidate, "--format", "json"]
        assert scan_main(argv) == 1
        outs.append(json.loads(capsys.readouterr().out)["findings"])
    assert outs[0] == outs[1]
    notes = {f["releases"] for f in outs[0]}
    # The hand rule names the probe's verdict; the census adds the names 3.9.0 lacks.
    assert "block_ptr" in " ".join(notes) and all("3.9.0" in n for n in notes), notes
    assert any("block_ptr on 3.9.0: removed" in n for n in notes), notes


def test_the_examples_in_the_docstrings_hold() -> None:
    import doctest

    import matrix.core
    import matrix.gate.config
    import matrix.measure.cells
    import matrix.results
    import matrix.results.text

    modules = (matrix.core, matrix.gate.config, matrix.measure.cells, matrix.results)
    for module in (*modules, matrix.results.text):
        result = doctest.testmod(module)
        assert result.attempted and not result.failed, module.__name__


def test_runs_for_takes_a_release_in_any_spelling() -> None:
    from matrix.gate.compare import runs_for

    runs = read_runs(RAW)
    chosen = runs_for(runs, "3.8")
    assert chosen and chosen == runs_for(runs, Release.parse("3.8.0"))
    assert {r.triton for r in chosen} == {"3.8.0"}
