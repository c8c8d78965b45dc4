"""How raw files are stored: gzip-compressed JSON (``<run-id>.json.gz``), plain ``.json`` from
before still read by every reader, converted by ``migrate --gzip`` and by the matrix itself;
``matrix.json`` stays plain JSON, one run per line."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from matrix import results
from matrix.measure import migrate
from matrix.results import Result, Run, SchemaError, read_raw, write_raw

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _run(release: str = "3.9.0", detail: str = "") -> Run:
    return Run(
        id=f"triton-{release}-numpy-2.4.6",
        env={"triton": release, "numpy": "2.4.6"},
        results=[Result("splitk", "interpret", None, "pass", detail, 0.5, {"cells": {"a": "b"}})],
        extra={"complete": True},
    )


def test_a_raw_file_is_gzip_and_the_same_bytes_for_the_same_run(tmp_path: Path) -> None:
    run = _run(detail="bad byte \udcff kept")
    a, b = tmp_path / "a" / results.raw_name(run.id), tmp_path / "b" / results.raw_name(run.id)
    write_raw(run, a)
    write_raw(run, b)
    assert a.name == "triton-3.9.0-numpy-2.4.6.json.gz"
    assert a.read_bytes()[:2] == results.GZIP_MAGIC and a.read_bytes() == b.read_bytes()
    # inside: the same text a plain raw file holds
    assert gzip.decompress(a.read_bytes()).decode() == results.dumps(results.document([run]))
    assert read_raw(a) == run


def test_a_partial_file_of_a_gzip_cell_is_gzip_too(tmp_path: Path) -> None:
    side = results.partial_path(tmp_path / "triton-3.9.0-numpy-2.4.6.json.gz")
    write_raw(_run(), side)
    assert side.name.endswith(".json.gz.partial") and side.read_bytes()[:2] == results.GZIP_MAGIC
    assert results.partial_files(tmp_path) == [side] and results.raw_files(tmp_path) == []
    assert read_raw(side) == _run()


def test_a_folder_of_plain_and_gzip_files_is_read_whole(tmp_path: Path) -> None:
    write_raw(_run("3.8.0"), tmp_path / "triton-3.8.0-numpy-2.4.6.json")  # a plain one from before
    write_raw(_run("3.9.0"), tmp_path / "triton-3.9.0-numpy-2.4.6.json.gz")
    (tmp_path / "triton-3.7.1-numpy-2.4.6.json.gz.unreadable-20261201T000000").write_text("x")
    runs, bad = results.read_folder(tmp_path)
    assert [r.triton for r in runs] == ["3.8.0", "3.9.0"] and bad == []
    assert [results.run_id_of(p) for p in results.raw_files(tmp_path)] == [
        "triton-3.8.0-numpy-2.4.6",
        "triton-3.9.0-numpy-2.4.6",
    ]


def test_the_schema_check_reads_through_gzip(tmp_path: Path) -> None:
    path = tmp_path / "triton-3.9.0-numpy-2.4.6.json.gz"
    doc = results.document([_run()])
    doc["runs"][0]["complete"] = "false"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    with pytest.raises(SchemaError, match=r"json\.gz: runs\[0\]\.complete: must be boolean"):
        read_raw(path)


def test_a_damaged_gzip_file_is_a_schema_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "triton-3.9.0-numpy-2.4.6.json.gz"
    write_raw(_run(), path)
    path.write_bytes(path.read_bytes()[:40])  # cut short
    with pytest.raises(SchemaError, match=r"numpy-2\.4\.6\.json\.gz: a damaged gzip file"):
        read_raw(path)
    write_raw(_run("3.8.0"), tmp_path / "good.json.gz")
    runs, bad = results.read_folder(tmp_path)
    assert [r.triton for r in runs] == ["3.8.0"] and len(bad) == 1 and "damaged" in bad[0]


def test_migrate_gzip_converts_a_folder_and_keeps_every_result(tmp_path: Path, capsys) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(FIXTURES / "raw", raw)
    before = {r.id: r for r in results.read_runs(raw)}
    plain = sorted(p.name for p in raw.glob("*.json"))
    assert plain, "the fixture folder holds plain raw files"
    write_raw(_run(), results.partial_path(raw / "triton-9.9.9-numpy-2.4.6.json"))
    assert migrate.main(["--gzip", str(raw)]) == 0
    assert f"{len(plain) + 1} raw files compressed" in capsys.readouterr().out
    assert list(raw.glob("*.json")) == [] and len(list(raw.glob("*.json.gz"))) == len(plain)
    assert (raw / "triton-9.9.9-numpy-2.4.6.json.gz.partial").exists()
    assert {r.id: r for r in results.read_runs(raw)} == before
    assert migrate.main(["--gzip", str(raw)]) == 0  # nothing left to do
    assert "0 raw files compressed" in capsys.readouterr().out
    assert migrate.main(["--gzip", str(raw / "nothing.json")]) == 2


def test_the_matrix_adopts_a_plain_file_of_its_cell(tmp_path: Path) -> None:
    gz = tmp_path / results.raw_name("triton-3.9.0-numpy-2.4.6")
    plain = tmp_path / "triton-3.9.0-numpy-2.4.6.json"
    write_raw(_run(), plain)
    said = migrate.adopt_legacy(gz)
    assert "converted to triton-3.9.0-numpy-2.4.6.json.gz" in said
    assert not plain.exists() and read_raw(gz) == _run()
    assert migrate.adopt_legacy(gz) == ""  # nothing more to do

    write_raw(_run(detail="older"), plain)  # both: the compressed one is the cell's
    said = migrate.adopt_legacy(gz)
    assert "kept as triton-3.9.0-numpy-2.4.6.json.superseded-" in said, said
    assert not plain.exists() and read_raw(gz) == _run()
    assert [p.name for p in results.raw_files(tmp_path)] == [gz.name]

    gz.unlink()
    plain.write_bytes(b'{"schema": 2, "runs": [\xff]}')
    said = migrate.adopt_legacy(gz)
    assert "not UTF-8" in said and "moved it aside" in said and not gz.exists()
    assert results.raw_files(tmp_path) == [] and len(list(tmp_path.glob("*.unreadable-*"))) == 1


def test_matrix_json_is_plain_json_one_run_a_line(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    for release in ("3.8.0", "3.9.0"):
        write_raw(_run(release), raw / results.raw_name(f"triton-{release}-numpy-2.4.6"))
    out = tmp_path / "matrix.json"
    runs = results.merge(raw, out)
    text = out.read_text()
    assert json.loads(text) == results.document(runs)
    assert len(text.splitlines()) == 2 + len(runs)  # head, a line per run, the close
    assert results.read_runs(out) == runs


def test_an_empty_run_list_is_still_json(tmp_path: Path) -> None:
    assert json.loads(results.dumps_merged({"schema": 2, "runs": []})) == {"schema": 2, "runs": []}
