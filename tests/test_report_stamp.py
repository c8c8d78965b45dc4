"""A page build whose inputs did not change writes nothing (matrix.report.stamp), and any
change to what it reads (a raw file, a bench file, the code, a team suite, a written page)
builds again."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from matrix.measure.results import read_raw, write_raw
from matrix.report import __main__ as cli
from matrix.report import build, stamp

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    raw, bench = tmp_path / "raw", tmp_path / "bench"
    shutil.copytree(FIXTURES / "raw", raw)
    shutil.copytree(FIXTURES / "bench", bench)
    return raw, bench, tmp_path / "out"


def test_second_build_is_skipped_and_keeps_every_page(inputs: tuple[Path, Path, Path]) -> None:
    raw, bench, out = inputs
    first = build(raw, out, bench_dir=bench, commit="c0ffee0", date="2026-12-02")
    assert not first.skipped and len(first.pages) > 10
    before = {p: p.read_bytes() for p in first.pages}
    second = build(raw, out, bench_dir=bench, commit="c0ffee0", date="2026-12-02")
    assert second.skipped
    assert sorted(second.pages) == sorted(first.pages) and second.runs == first.runs
    assert {p: p.read_bytes() for p in second.pages} == before
    third = build(raw, out, bench_dir=bench, commit="c0ffee0", date="2026-12-02", rebuild=True)
    assert not third.skipped


def _change_raw(raw: Path) -> None:
    path = sorted(raw.glob("*.json"))[0]
    run = read_raw(path)
    first = run.results[0]
    run.results[0] = dataclasses.replace(first, detail=first.detail + " (changed)")
    write_raw(run, path)


def _change_bench(bench: Path) -> None:
    path = sorted(bench.glob("*.json"))[0]
    doc = json.loads(path.read_text())
    doc["changed_by_test"] = True
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda raw, bench, out: _change_raw(raw), id="raw file"),
        pytest.param(lambda raw, bench, out: _change_bench(bench), id="bench file"),
        pytest.param(
            lambda raw, bench, out: (out / "index.html").write_text("tampered"), id="page edited"
        ),
        pytest.param(lambda raw, bench, out: (out / "changes.html").unlink(), id="page deleted"),
        pytest.param(lambda raw, bench, out: (out / stamp.STAMP_NAME).write_text("{"), id="stamp"),
    ],
)
def test_any_changed_input_or_output_builds_again(inputs: tuple[Path, Path, Path], change) -> None:
    raw, bench, out = inputs
    build(raw, out, bench_dir=bench, commit="c0ffee0", date="2026-12-02")
    change(raw, bench, out)
    again = build(raw, out, bench_dir=bench, commit="c0ffee0", date="2026-12-02")
    assert not again.skipped
    assert (out / "changes.html").is_file() and (out / "index.html").read_text() != "tampered"


def test_the_footer_commit_is_an_input(inputs: tuple[Path, Path, Path]) -> None:
    raw, bench, out = inputs
    build(raw, out, bench_dir=bench, commit="c0ffee0", date="2026-12-02")
    again = build(raw, out, bench_dir=bench, commit="badcafe", date="2026-12-02")
    assert not again.skipped and "badcafe" in (out / "index.html").read_text()


def test_code_and_suites_are_inputs(tmp_path: Path) -> None:
    code, suite, raw = tmp_path / "code", tmp_path / "suite", tmp_path / "raw"
    for folder in (code, suite, raw):
        folder.mkdir()
    (code / "render.py").write_text("X = 1\n")
    (suite / "test_k.py").write_text("def test_k(): pass\n")
    (raw / ".matrix-run.lock").write_text("pid 1")  # hidden: the lock held while pages build

    def digest() -> str:
        return stamp.inputs_digest(
            raw_dir=raw,
            bench_dir=tmp_path / "no-bench",
            probes_dir=tmp_path / "no-probes",
            accepted_path=tmp_path / "accepted.toml",
            freshness="Freshness(commit='c0ffee0')",
            suites=[str(suite)],
            code_roots=[code],
        )

    first = digest()
    (raw / ".matrix-run.lock").write_text("pid 2")
    assert digest() == first, "a hidden file (the run lock) is nobody's input"
    (code / "render.py").write_text("X = 2\n")
    second = digest()
    assert second != first
    (suite / "test_k.py").write_text("def test_k(): assert 1\n")
    assert digest() != second


def test_command_line_says_it_kept_the_pages(
    inputs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    raw, bench, out = inputs
    args = ["--raw", str(raw), "--out", str(out), "--bench", str(bench), "--commit", "c0ffee0"]
    assert cli.main(args) == 0
    assert "runs ->" in capsys.readouterr().out
    assert cli.main(args) == 0
    assert "kept" in capsys.readouterr().out
    assert cli.main([*args, "--rebuild"]) == 0
    assert "runs ->" in capsys.readouterr().out
