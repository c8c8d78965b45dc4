"""The gate, the scanner and the report on hostile inputs (issue 40): each case ends in one line
naming the thing, exit 2 where the verdict cannot be trusted, nothing else lost, in bounded time.

Big inputs are generated in ``tmp_path``; each test runs in a few seconds.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from matrix import results
from matrix.core import DataFileError
from matrix.gate import session
from matrix.gate import verdict as gate
from matrix.gate.config import MAX_ACCEPTED_BYTES, MAX_ACCEPTED_ENTRIES, load_accepted
from matrix.results import Result, Run, read_folder, write_raw
from matrix.scan import scan_paths
from matrix.scan.sources import MAX_AST_DEPTH, MAX_PARSED_BYTES
from tests.test_gate import GATE, mutate, set_status

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "reports" / "raw"
PAIR = ("triton-3.8.0-numpy-2.4.6.json.gz", "triton-3.9.0-numpy-2.4.6.json.gz")
REMOVED = "NotImplementedError: Block pointers have been removed (synthetic)"


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail (not hang) when the body runs longer than ``seconds``: a FIFO read blocks forever."""

    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    dst = tmp_path / "raw"
    shutil.copytree(GATE / "safe", dst)
    return dst


@pytest.fixture
def pair(tmp_path: Path) -> Path:
    """The committed 3.8.0 and 3.9.0 interpreter cells (numpy 2.4.6): real fingerprints."""
    dst = tmp_path / "pair"
    dst.mkdir()
    for name in PAIR:
        shutil.copy(RAW / name, dst / name)
    return dst


def gate_run(tmp_path: Path, raw: Path, *extra: str, accepted: Path | None = None,
             candidate: str = "3.9.0") -> tuple[int, str, dict]:  # fmt: skip
    out = tmp_path / "gate-out"
    args = ["--baseline", "3.8.0", "--candidate", candidate, "--results", str(raw)]
    args += ["--out", str(out), "--no-project-scan", *extra]
    args += ["--accepted", str(accepted or GATE / "accepted_none.toml")]
    code = gate.main(args)
    md = (out / "gate.md").read_text()
    doc = json.loads((out / "gate.json").read_text())
    assert "Traceback" not in md
    return code, md, doc


def reasons(doc: dict) -> str:
    return "\n".join([*doc["errors"], *doc["undecidable"]])


# ------------------------------------------------------------------------- 2. source encodings

BF16_MAXIMUM = """\
import triton
import triton.language as tl

# café: a comment with a letter outside ASCII


@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n).to(tl.bfloat16)
    y = tl.maximum(x, x * 2)
    tl.store(y_ptr + offs, y, mask=offs < n)
"""


@pytest.mark.parametrize(
    "data",
    [
        ("# -*- coding: latin-1 -*-\n" + BF16_MAXIMUM).encode("latin-1"),
        b"\xef\xbb\xbf" + BF16_MAXIMUM.encode("utf-8"),
    ],
    ids=["latin-1-cookie", "utf-8-bom"],
)
def test_a_kernel_in_another_encoding_is_read_as_python_reads_it(tmp_path, pair, data):
    """latin-1 with a coding line, or UTF-8 with a BOM, was SAFE where plain UTF-8 is UNSAFE:
    the profile read sources as plain UTF-8 and lost the file."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "k.py").write_bytes(data)
    code, md, doc = gate_run(tmp_path, pair, "--scan", str(team))
    assert code == 1, md
    # (the interpreter's bf16 regression is not on the inferred targets: no TRITON_INTERPRET
    # in this team's folder; the compiled result-dtype change of the same op blocks, and its
    # lowering change follows from it)
    blocking = [f for f in doc["findings"] if f["kind"] in ("regression", "behaviour-change")]
    assert any(f["probe"] == "fp.binary_fn.maximum[bfloat16,bfloat16]" for f in blocking), md
    assert "fp.values.maximum[bfloat16]" in {f["probe"] for f in doc["follows_from_dtype"]}, md
    assert doc["profile"]["unread"] == []
    # the acknowledgements gate.md offers name the file from its scanned root, not /tmp/...
    offered = [ln.strip() for ln in md.splitlines() if ln.strip().startswith("paths = [")]
    assert offered and all(ln == 'paths = ["team/k.py"]' for ln in offered), offered


def test_a_team_file_that_cannot_be_decoded_makes_the_gate_undecidable(tmp_path, pair):
    team = tmp_path / "team"
    team.mkdir()
    (team / "k.py").write_bytes(BF16_MAXIMUM.encode("latin-1"))  # no coding line: not UTF-8
    code, md, doc = gate_run(tmp_path, pair, "--scan", str(team))
    assert code == 2, md
    assert "k.py" in reasons(doc) and "not decodable" in reasons(doc)


def test_team_sources_that_are_symlink_loops_or_dangling_are_named(tmp_path, raw):
    """Path.resolve raises on a symlink loop (Python < 3.13): the gate said "internal error"."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "loop.py").symlink_to("loop.py")
    (team / "gone.py").symlink_to(tmp_path / "unmounted.py")
    (team / "ok.py").write_text("import triton\n")
    code, md, doc = gate_run(tmp_path, raw, "--scan", str(team))
    assert code == 2, md
    assert "internal error" not in md
    assert "loop.py" in reasons(doc) and "gone.py: a symlink to" in reasons(doc)


def test_a_recorded_kernel_source_past_the_limits_is_unread_not_a_crash(tmp_path):
    """A launch's recorded source comes from a results file: nested 5,000 deep it overflowed
    the parser (an "internal error" of the gate)."""
    from matrix.gate.usage import build_profile

    (tmp_path / "t").mkdir()
    launch = {"name": "deep_kernel", "file": "gone/k.py", "key": "k1", "test": "t::x",
              "signature": {}, "constexprs": {},
              "source": "def deep_kernel(x):\n    return " + "-" * 5000 + "x\n"}  # fmt: skip
    run = Run(id="r", env={"triton": "3.9.0", "numpy": "2.4.6"}, extra={"launches": [launch]})
    profile = build_profile([], [str(tmp_path / "t")], [run])
    assert profile.unread == [
        "kernel deep_kernel (gone/k.py): recorded source not read: nested too deeply for "
        "Python's own parser"
    ]


# ------------------------------------------------------ 3. raw entries that are no regular file


def test_raw_entries_that_are_no_regular_file_are_named_and_undecidable(tmp_path, raw):
    """Both sides' numpy-1.26.4 cells as a dangling symlink and a symlink loop, and a folder
    named like a raw file: the gate said SAFE over one column fewer."""
    (raw / "triton-3.8.0-numpy-1.26.4.json").unlink()
    (raw / "triton-3.8.0-numpy-1.26.4.json").symlink_to(tmp_path / "unmounted" / "x.json")
    (raw / "triton-3.9.0-numpy-1.26.4.json").unlink()
    (raw / "triton-3.9.0-numpy-1.26.4.json").symlink_to("triton-3.9.0-numpy-1.26.4.json")
    (raw / "triton-3.9.0-numpy-2.3.5.json.gz").mkdir()
    os.mkfifo(raw / "triton-3.8.0-numpy-2.3.5.json.gz")
    with within(20):
        code, md, doc = gate_run(tmp_path, raw)
    assert code == 2, md
    text = reasons(doc)
    assert "triton-3.8.0-numpy-1.26.4.json: a symlink to" in text and "which is missing" in text
    assert "triton-3.9.0-numpy-1.26.4.json: cannot read" in text  # the loop, named
    assert "triton-3.9.0-numpy-2.3.5.json.gz: not a regular file (a folder)" in text
    assert "triton-3.8.0-numpy-2.3.5.json.gz: not a regular file (a FIFO)" in text


def test_a_gate_json_in_a_raw_folder_is_not_a_raw_file(tmp_path, raw):
    (raw / "gate.json").write_text('{"verdict": "safe"}\n')
    (raw / "matrix.json").write_text('{"schema": 2, "runs": []}\n')
    assert {p.name for p in results.raw_files(raw)}.isdisjoint({"gate.json", "matrix.json"})
    code, md, _ = gate_run(tmp_path, raw)
    assert code == 0, md


def test_a_candidate_cell_saved_under_the_baselines_name_is_named(tmp_path, raw):
    (raw / "triton-3.8.0-numpy-2.4.6.json").write_bytes(
        (raw / "triton-3.9.0-numpy-2.4.6.json").read_bytes()
    )
    code, md, doc = gate_run(tmp_path, raw)
    assert code == 2, md
    assert (
        "triton-3.8.0-numpy-2.4.6.json: the name says run 'triton-3.8.0-numpy-2.4.6' but the "
        "file holds run 'triton-3.9.0-numpy-2.4.6' (triton 3.9.0); name and content disagree"
    ) in reasons(doc)


# ------------------------------------------------------------- results: size and count limits


def test_a_gzip_bomb_is_stopped_at_the_size_limit(tmp_path, raw):
    bomb = raw / "triton-3.9.0-numpy-2.3.5.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b'{"schema": 2, "runs": [{"id": "' + b" " * (results.MAX_DOCUMENT_BYTES + 10))
    assert bomb.stat().st_size < 200_000
    started = time.monotonic()
    code, md, doc = gate_run(tmp_path, raw)
    assert time.monotonic() - started < 5
    assert code == 2, md
    assert f"{bomb}: more than 64 MiB of JSON" in reasons(doc)


def test_a_cell_with_too_many_results_is_refused_naming_the_limit(tmp_path, raw):
    many = range(results.MAX_RESULTS + 1)
    run = Run(
        id="triton-3.9.0-numpy-2.3.5",
        env={"triton": "3.9.0", "numpy": "2.3.5"},
        results=[Result(f"p{i}", "interpret", None, "pass") for i in many],
    )
    write_raw(run, raw / "triton-3.9.0-numpy-2.3.5.json.gz")
    _, bad = read_folder(raw)
    assert any(f"results: {results.MAX_RESULTS + 1} entries, more than the" in b for b in bad)
    code, md, _ = gate_run(tmp_path, raw)
    assert code == 2, md


# ----------------------------------------------------- 5. --accepted: special files, big files


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
def test_accepted_must_be_a_regular_file(tmp_path, raw, kind):
    target = {"fifo": tmp_path / "fifo", "dev-zero": Path("/dev/zero"), "folder": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    with within(10):
        code, md, doc = gate_run(tmp_path, raw, accepted=target)
    assert code == 2, md
    assert f"{target}: expected a regular file" in reasons(doc)


def test_an_oversized_accepted_file_is_refused_without_reading_it_whole(tmp_path, raw):
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * (MAX_ACCEPTED_BYTES // 10 + 10))
    started = time.monotonic()
    code, md, doc = gate_run(tmp_path, raw, accepted=big)
    assert code == 2 and time.monotonic() - started < 5, md
    assert f"{big}: expected at most 1024 KiB" in reasons(doc)


def test_an_accepted_file_with_too_many_entries_is_refused(tmp_path):
    many = tmp_path / "many.toml"
    entry = '[[change]]\nprobe="p"\nfrom="a"\nto="b"\nreason="r"\n'
    many.write_text(entry * (MAX_ACCEPTED_ENTRIES + 1))
    with pytest.raises(DataFileError, match=f"at most {MAX_ACCEPTED_ENTRIES} entries"):
        load_accepted(many)


# ------------------------------------------------------------------- --accepted: the entries


def _accepted(tmp_path: Path, **fields: str) -> Path:
    entry = {"probe": "block_ptr", "where": "*", "from": "deprecated", "to": "removed",
             "reason": "fixture: no block pointers here", **fields}  # fmt: skip
    path = tmp_path / "accepted.toml"
    path.write_text("[[change]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in entry.items()))
    return path


@pytest.mark.parametrize("field", ["candidate", "baseline"])
def test_an_acknowledgement_for_a_release_that_is_no_release_is_refused(tmp_path, raw, field):
    code, md, doc = gate_run(tmp_path, raw, accepted=_accepted(tmp_path, **{field: "banana"}))
    assert code == 2, md
    assert f"change[0].{field}: expected a release X.Y.Z" in reasons(doc) and "banana" in md


def test_an_acknowledgement_for_3_9_matches_3_9_0(tmp_path, raw):
    mutate(raw, "3.9.0", set_status("block_ptr", "removed", REMOVED))
    code, md, doc = gate_run(tmp_path, raw, accepted=_accepted(tmp_path, candidate="3.9"))
    assert code == 0, md
    assert {f["kind"] for f in doc["findings"]} == {"accepted-change"}
    assert doc["stale_accepted"] == []


@pytest.mark.parametrize("reason", ["   ", "\u200b", "\u200b \u2060\ufeff"])
def test_a_reason_of_invisible_characters_is_no_reason(tmp_path, raw, reason):
    mutate(raw, "3.9.0", set_status("block_ptr", "removed", REMOVED))
    code, md, doc = gate_run(tmp_path, raw, accepted=_accepted(tmp_path, reason=reason))
    assert code == 2, md
    assert "change[0] (block_ptr).reason: expected a reason" in reasons(doc)


def test_a_stale_acknowledgement_is_listed_in_gate_md(tmp_path, raw):
    code, md, doc = gate_run(tmp_path, raw, accepted=_accepted(tmp_path, probe="no_such_probe"))
    assert code == 0, md  # listed, never blocking
    assert "### Acknowledgements that match nothing (1)" in md
    assert "probe='no_such_probe'" in md and len(doc["stale_accepted"]) == 1


# ------------------------------------------------------------ acknowledgements: relative paths


@pytest.mark.parametrize("spelling", ["relative", "absolute", "dot-relative"])
def test_an_acknowledgements_path_matches_however_it_is_spelt(tmp_path, raw, monkeypatch, spelling):
    """gate.md offers paths relative to the current folder (or to the scanned root's parent,
    never absolute); an entry written with the absolute path or ./ matches as well."""
    monkeypatch.chdir(tmp_path)
    team = tmp_path / "src"
    team.mkdir()
    (team / "k.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(p):\n"
        "    x = tl.load(p)\n"
    )
    mutate(raw, "3.9.0", set_status("block_ptr", "removed", REMOVED))
    path = {"relative": "src/k.py", "absolute": str(team / "k.py"),
            "dot-relative": "./src/k.py"}[spelling]  # fmt: skip
    accepted = _accepted(tmp_path)
    accepted.write_text(accepted.read_text() + f"paths = [{json.dumps(path)}]\n")
    _, md, doc = gate_run(tmp_path, raw, "--scan", "src", accepted=accepted)
    assert doc["stale_accepted"] == [], md


def test_a_file_outside_the_current_folder_is_named_from_its_scanned_root(tmp_path, monkeypatch):
    from matrix.gate.usage import shown_path

    monkeypatch.chdir(ROOT)
    root = tmp_path / "team" / "src"
    root.mkdir(parents=True)
    assert shown_path(root / "sub" / "k.py", [str(root)]) == "src/sub/k.py"
    assert shown_path(ROOT / "kernels" / "x.py", [str(root)]) == "kernels/x.py"


def test_an_acknowledgement_whose_paths_match_no_file_is_listed(tmp_path, raw):
    team = tmp_path / "src"
    team.mkdir()
    (team / "k.py").write_text("import triton\n")
    mutate(raw, "3.9.0", set_status("block_ptr", "removed", REMOVED))
    accepted = _accepted(tmp_path)
    accepted.write_text(accepted.read_text() + 'paths = ["/elsewhere/on/another/machine.py"]\n')
    _, md, doc = gate_run(tmp_path, raw, "--scan", str(team), accepted=accepted)
    assert "### Acknowledgements that match nothing (1)" in md
    assert "/elsewhere/on/another/machine.py" in doc["stale_accepted"][0]


# ---------------------------------------------------------- nox -s gate: one parser, no abbrev


@pytest.mark.parametrize("entry", ["gate", "session"])
def test_an_abbreviated_option_is_refused_not_guessed(tmp_path, capsys, entry):
    """``nox -s gate -- --cand 3.8.0`` gated 3.9.0: the session's own argv scanner missed the
    abbreviation and argparse took it."""
    main = gate.main if entry == "gate" else session.main
    argv = ["--cand", "3.8.0", "--baseline", "3.7.0", "--results", str(tmp_path)]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --cand 3.8.0" in err or "--cand" in err
    assert "Traceback" not in err


def test_the_session_reads_its_arguments_with_the_gates_parser(tmp_path, monkeypatch):
    """The candidate the session gates is the one argparse read: no second reading of argv."""
    seen = []
    monkeypatch.setattr(session, "gate", lambda args: seen.append(args) or 0)
    argv = ["--candidate=3.9", "--baseline", "3.8.0", "--results", "r"]
    assert session.main(argv) == 0
    assert (seen[0].candidate, seen[0].results) == ("3.9", "r")


# ------------------------------------------------------------------ unknown release: fail fast


def test_an_unknown_release_is_refused_before_reading_with_the_recorded_ones_listed(tmp_path):
    started = time.monotonic()
    code, md, doc = gate_run(tmp_path, RAW, candidate="3.10.0")
    assert time.monotonic() - started < 3
    assert code == 2, md
    recorded = ", ".join(f"3.{m}" for m in ("0.0", "1.0", "2.0", "3.1", "4.0", "5.1", "6.0",
                                            "7.1", "8.0", "9.0"))  # fmt: skip
    assert f"recorded releases: {recorded}" in reasons(doc)


# ----------------------------------------------------------------- the scanner: size and depth


def test_the_scanner_skips_a_huge_or_deeply_nested_file_naming_it_and_keeps_the_rest(tmp_path):
    (tmp_path / "big.py").write_text(
        "import triton\n" + "x = 1  # padding\n" * (MAX_PARSED_BYTES // 16 + 10)
    )
    (tmp_path / "deep.py").write_text("import triton\ny = " + "-" * 5000 + "1\n")
    (tmp_path / "chain.py").write_text(
        "import triton\ny = " + " + ".join(["1"] * (MAX_AST_DEPTH + 50)) + "\n"
    )
    (tmp_path / "ok.py").write_text(
        "import triton.language as tl\n\n\ndef f(p):\n    return tl.make_block_ptr(p, (1,),"
        " (1,), (0,), (1,), (0,))\n"
    )
    (tmp_path / "gone.py").symlink_to(tmp_path / "nowhere.py")
    started = time.monotonic()
    report = scan_paths([tmp_path])
    assert time.monotonic() - started < 5
    skipped = "\n".join(report.skipped)
    assert "big.py: not parsed (" in skipped and "the scanner parses in one file" in skipped
    assert "deep.py: not parsed (nested too deeply" in skipped
    assert f"chain.py: not parsed (nested more than {MAX_AST_DEPTH} levels" in skipped
    assert "gone.py: a symlink to" in skipped
    assert [f.rule.id for f in report.findings if f.path.endswith("ok.py")] == ["TRI001"]


def test_a_scanned_file_past_a_limit_makes_the_gate_undecidable(tmp_path, raw):
    team = tmp_path / "team"
    team.mkdir()
    (team / "deep.py").write_text("import triton\ny = " + "-" * 5000 + "1\n")
    code, md, doc = gate_run(tmp_path, raw, "--scan", str(team))
    assert code == 2, md
    assert "deep.py" in reasons(doc) and "nested too deeply" in reasons(doc)


# --------------------------------------------------------- 6. documented non-finite numbers


def _non_finite(raw: Path) -> list[Path]:
    """Every numeric field the readers take, set to each documented non-finite spelling."""
    paths = sorted(raw.iterdir())
    for i, path in enumerate(paths):
        doc = json.loads(path.read_text())
        run = doc["runs"][0]
        run["install"]["seconds"] = ("nan", "inf", "-inf")[i % 3]
        run["seconds"] = ("inf", "-inf", "nan")[i % 3]
        for res in run["results"][:5]:
            res["seconds"] = ("-inf", "nan", "inf")[i % 3]
        for res in run["results"]:
            if res["probe"] == "fp":
                res.setdefault("data", {})["part_seconds"] = {"values": "nan", "casts": 1.0}
        path.write_text(json.dumps(doc))
    return paths


def test_documented_non_finite_seconds_are_read_by_every_time_reader(tmp_path, raw):
    """``install.seconds = "nan"`` (valid per docs/raw-files.md) crashed matrix.report's time
    chart; a duration that is not known is left out of sums and shown as unknown."""
    from matrix.analyze import verify
    from matrix.report import charts, timings
    from matrix.report.model import fmt_seconds, run_seconds

    for other in ("triton-3.7.0-numpy-2.4.6.json", "triton-3.8.0-numpy-1.26.4.json",
                  "triton-3.9.0-numpy-1.26.4.json"):  # fmt: skip
        (raw / other).unlink()  # the pair the gate compares is enough
    _non_finite(raw)
    runs = results.read_runs(raw)
    assert "<svg" in charts.time_chart(runs)
    assert all(run_seconds(r) >= 0 for r in runs)
    assert fmt_seconds("nan") == fmt_seconds(float("inf")) == "unknown"
    for table in (timings.table, timings.parts_table, timings.probes_table):
        assert "nan" not in table(runs) and "inf" not in table(runs)
    assert verify.main([str(raw)]) in (0, 1)
    code, md, _ = gate_run(tmp_path, raw)
    assert code == 0, md


def test_the_report_builds_its_pages_from_non_finite_seconds(tmp_path, raw):
    from matrix.report.__main__ import main as report_main

    for path in sorted(raw.iterdir())[1:]:
        path.unlink()  # one cell keeps the pages few
    _non_finite(raw)
    out = tmp_path / "pages"
    assert report_main(["--raw", str(raw), "--out", str(out)]) == 0
    assert "unknown" in next((out / "releases").iterdir()).read_text()


# ------------------------------------------------------------- gate.md: bounded per section


def test_gate_md_lists_a_bounded_number_of_entries_per_section() -> None:
    """100,000 results in one cell made gate.md 8 MB; gate.json keeps every entry."""
    from matrix.gate import compare as gc

    report = gate.GateReport("3.8.0", "3.9.0", "raw")
    n = gate.ENTRIES_SHOWN + 50
    for i in range(n):
        report.comparison.findings.append(
            gc.GateFinding(gc.BEHAVIOUR, f"probe{i}", "interpret", "a", "b", ["evidence"])
        )
        report.comparison.undecidable.append(f"cell {i} not observed")
    md = gate.render_markdown(report)
    assert f"### Behaviour changes, not acknowledged ({n})" in md
    assert f"The first {gate.ENTRIES_SHOWN}; gate.json lists all {n}." in md
    assert md.split("## Details")[1].count("- **probe") == gate.ENTRIES_SHOWN  # first screen apart
    assert "- ... and 50 more (gate.json)" in md
    assert len(report.to_dict()["findings"]) == n


def test_a_fifo_in_the_bench_folder_is_named_not_waited_on(tmp_path, raw):
    bench = tmp_path / "bench"
    bench.mkdir()
    os.mkfifo(bench / "h200.json")
    with within(10):
        code, md, doc = gate_run(tmp_path, raw, "--bench", str(bench))
    assert code == 2, md
    assert "h200.json: not a regular file (a FIFO)" in reasons(doc)


def test_a_pinned_file_that_is_a_fifo_is_named_not_waited_on(tmp_path, raw):
    pinned = tmp_path / "pinned.toml"
    os.mkfifo(pinned)
    out = tmp_path / "o"
    with within(10):
        code = gate.main(["--candidate", "3.9.0", "--results", str(raw), "--out", str(out),
                          "--pinned", str(pinned), "--no-project-scan"])  # fmt: skip
    assert code == 2
    assert "pinned.toml: expected a regular file" in (out / "gate.md").read_text()


def test_an_offered_acknowledgement_names_a_scanner_use_from_its_scanned_root(tmp_path):
    """A use the scanner found (its path as --scan spelt it, here absolute) is offered relative
    to the scanned root, as the profile names it, so the entry matches on another machine."""
    from matrix.gate import compare as gc
    from matrix.gate.markdown import _toml_scope

    root = tmp_path / "team" / "src"
    root.mkdir(parents=True)
    use = f"{root}/k.py:3: tl.load(p, None, 0.0, '', '.ca')"
    f = gc.GateFinding(gc.BEHAVIOUR, "api.default", "census", "a", "b", [], uses=[use])
    scope = _toml_scope([f], [str(root)])
    assert 'paths = ["src/k.py"]' in scope and str(tmp_path) not in scope
