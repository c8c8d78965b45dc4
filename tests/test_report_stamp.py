"""A page build whose inputs did not change writes nothing (matrix.report.stamp), and any
change to what it reads (a raw file, a bench file, the code, a team suite, a written page)
builds again."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from matrix.report import __main__ as cli
from matrix.report import build, stamp
from matrix.results import read_raw, write_raw

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    raw, bench = tmp_path / "raw", tmp_path / "bench"
    shutil.copytree(FIXTURES / "raw", raw)
    shutil.copytree(FIXTURES / "bench", bench)
    return raw, bench, tmp_path / "out"


@pytest.fixture(scope="module")
def first_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture results built once (commit c0ffee0, 2026-12-02): a full page build is most of
    this module's time, and the tests that change something after a first build start from a
    copy of it."""
    root = tmp_path_factory.mktemp("first-build")
    shutil.copytree(FIXTURES / "raw", root / "raw")
    shutil.copytree(FIXTURES / "bench", root / "bench")
    build(root / "raw", root / "out", bench_dir=root / "bench", commit="c0ffee0", date="2026-12-02")
    return root


@pytest.fixture
def built(first_build: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of ``first_build`` at this test's own path: a build of the same inputs there keeps
    every page (``test_the_stamp_depends_on_nothing_a_clone_changes`` holds that a copy's stamp
    still vouches for its pages; this fixture checks it on each copy it hands out)."""
    root = tmp_path / "built"
    shutil.copytree(first_build, root)
    raw, bench, out = root / "raw", root / "bench", root / "out"
    assert build(raw, out, bench_dir=bench, commit="c0ffee0", date="2026-12-02").skipped
    return raw, bench, out


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
def test_any_changed_input_or_output_builds_again(built: tuple[Path, Path, Path], change) -> None:
    raw, bench, out = built
    change(raw, bench, out)
    again = build(raw, out, bench_dir=bench, commit="c0ffee0", date="2026-12-02")
    assert not again.skipped
    assert (out / "changes.html").is_file() and (out / "index.html").read_text() != "tampered"


def test_the_footer_commit_is_an_input(built: tuple[Path, Path, Path]) -> None:
    raw, bench, out = built
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


def _copy_as_a_clone_would(src: Path, dst: Path) -> None:
    """The same bytes at another path, every file with a new modification time."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)


def test_the_stamp_depends_on_nothing_a_clone_changes(tmp_path: Path) -> None:
    """Issue 40: a fresh clone rebuilt every page. A stamp of the same files at another path,
    with other modification times, still vouches for the pages: nothing is rebuilt."""
    first, clone = tmp_path / "first", tmp_path / "clone"
    shutil.copytree(FIXTURES / "raw", first / "raw")
    shutil.copytree(FIXTURES / "bench", first / "bench")
    build(first / "raw", first / "out", bench_dir=first / "bench", commit="c0ffee0", date="d")
    _copy_as_a_clone_would(first, clone)
    again = build(clone / "raw", clone / "out", bench_dir=clone / "bench", commit="c0ffee0",
                  date="d")  # fmt: skip
    assert again.skipped


def test_a_rebuild_says_what_changed() -> None:
    before = stamp.Inputs(
        {"code": {"matrix/a.py": "1", "matrix/b.py": "2"}, "raw": {"raw/x.json.gz": "3"}},
        {"freshness": "c0ffee0", "tools": "python 3.11, jinja2 3.1.6"},
    )
    last = stamp.Stamp(before.digest, {}, [], 1, "", before)
    now = stamp.Inputs(
        {"code": {"matrix/a.py": "1", "matrix/b.py": "9"}, "raw": {"raw/x.json.gz": "3",
         "raw/y.json.gz": "4"}},
        {"freshness": "badcafe", "tools": "python 3.11, jinja2 3.1.6"},
    )  # fmt: skip
    said = stamp.changes(last, now)
    assert "the code that builds the pages (matrix/b.py)" in said
    assert "the raw files (raw/y.json.gz)" in said
    assert "the commit the footers name (c0ffee0 -> badcafe)" in said
    assert "jinja2" not in said and "matrix/a.py" not in said
    assert stamp.changes(last, before) == ""
    assert "no usable build stamp" in stamp.changes(None, now)


def test_the_matrix_says_a_rebuild_for_changed_code_left_every_page_as_committed(
    built: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """A clone whose committed stamp predates a commit to matrix/: the pages are rebuilt into
    the same bytes. The matrix says it was that code and that no page changed; the stamp it
    rewrites is not a page (it said "rewrote 1 committed page(s) ... new measurements")."""
    import argparse

    import matrix.orchestrate as orchestrate
    import matrix.report.__main__ as report_main

    raw, bench, out = built
    doc = json.loads((out / stamp.STAMP_NAME).read_text())
    code = doc["read"]["files"]["code"]
    edited = sorted(code)[0]
    code[edited] = "0" * 64  # as the stamp of a build before that file's last commit
    doc["inputs"] = stamp.Inputs.from_json(doc["read"]).digest
    (out / stamp.STAMP_NAME).write_text(json.dumps(doc))
    pages = {p: p.read_bytes() for p in out.rglob("*.html")}

    real_main = report_main.main

    def report(argv: list[str]) -> int:
        return real_main([*argv, "--bench", str(bench), "--commit", "c0ffee0",
                                 "--date", "2026-12-02"])  # fmt: skip

    monkeypatch.setattr(report_main, "main", report)
    committed_stamp = f"reports/{stamp.STAMP_NAME}"
    monkeypatch.setattr(orchestrate, "changed_committed",
                        lambda folder: [committed_stamp] if folder == out else [])  # fmt: skip
    args = argparse.Namespace(raw_dir=raw, report_dir=out)
    assert orchestrate.report_step(args, set()) == 0
    said = capsys.readouterr().out
    assert f"because of the code that builds the pages ({edited})" in said, said
    assert "every committed page came out as committed" in said
    assert "rewrote" not in said and "new measurements" not in said
    assert {p: p.read_bytes() for p in out.rglob("*.html")} == pages
    # Built again now: the next run keeps every page and says nothing about a rebuild.
    assert orchestrate.report_step(args, set()) == 0
    assert "rebuilt" not in capsys.readouterr().out
