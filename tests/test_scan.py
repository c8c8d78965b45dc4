"""The upgrade-hazard scanner on fixture kernels: one file per rule, one clean kernel.

Each fixture marks the lines that must be reported with a trailing ``# expect: RULE-ID``
comment; the tests compare the scanner's (line, rule) pairs with those marks, so a missed
finding and a spurious one both fail.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from matrix import scan
from matrix.measure.results import Result, Run, write_raw

FIXTURES = Path(__file__).parent / "fixtures" / "scan"
RULE_FILES = sorted(FIXTURES.glob("tri*.py"))
EXPECT = re.compile(r"#\s*expect:\s*(TRI\d+)")
ROOT = Path(__file__).resolve().parents[1]


def expected(path: Path) -> set[tuple[int, str]]:
    out = set()
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        out.update((lineno, m) for m in EXPECT.findall(line))
    return out


def found(path: Path) -> set[tuple[int, str]]:
    report = scan.scan_paths([path])
    assert not report.errors
    return {(f.line, f.rule.id) for f in report.findings}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "matrix.scan", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_every_rule_has_a_fixture_and_every_fixture_expects_something() -> None:
    rules = {r.id for r in scan.load_rules()}
    covered = {rule for f in RULE_FILES for _, rule in expected(f)}
    assert rules == covered, f"rules without a fixture: {rules - covered}"
    assert len(rules) >= 7


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.stem)
def test_rule_fixture_findings_match_expect_marks(path: Path) -> None:
    assert found(path) == expected(path)


def test_clean_kernel_has_no_findings_and_exits_zero() -> None:
    assert found(FIXTURES / "clean.py") == set()
    proc = run_cli(str(FIXTURES / "clean.py"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ""


def test_text_output_is_file_line_col_rule_message_fix() -> None:
    path = FIXTURES / "tri001_block_ptr.py"
    proc = run_cli(str(path))
    assert proc.returncode == 1, proc.stderr
    first = proc.stdout.splitlines()[0]
    # `    block = tl.make_block_ptr(` on line 10: the call starts at column 13 (1-based).
    assert first.startswith(f"{path}:10:13: TRI001 tl.make_block_ptr(...) uses the block-pointer")
    assert "; fix: build a tensor descriptor" in first


def test_json_output_and_folder_scan() -> None:
    proc = run_cli("--format", "json", str(FIXTURES))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["errors"] == []
    got = {(Path(f["path"]).name, f["line"], f["rule"]) for f in doc["findings"]}
    want = {(p.name, line, rule) for p in RULE_FILES for line, rule in expected(p)}
    assert got == want
    assert all(f["fix"] and f["message"] for f in doc["findings"])


def test_unparsable_file_and_missing_path_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text("@triton.jit\ndef k(:\n")
    proc = run_cli(str(bad))
    assert proc.returncode == 2
    assert "broken.py:2" in proc.stderr and "not valid Python" in proc.stderr
    proc = run_cli(str(tmp_path / "nope.py"))
    assert proc.returncode == 2
    assert "nope.py" in proc.stderr and "no such file" in proc.stderr


def test_candidate_without_results_is_a_usage_error() -> None:
    proc = run_cli("--candidate", "3.9.0", str(FIXTURES / "clean.py"))
    assert proc.returncode == 2
    assert "--candidate needs --results" in proc.stderr


def test_releases_come_from_results_not_from_the_rules(tmp_path: Path) -> None:
    # Synthetic statuses, deliberately not what any real release does: the note must follow them.
    for release, status in [("1.0.0", "supported"), ("2.0.0", "deprecated"), ("3.0.0", "removed")]:
        run = Run(
            id=f"r{release}",
            env={"triton": release, "numpy": "2.0.0"},
            results=[Result("block_ptr", "interpret", None, status)],
        )
        write_raw(run, tmp_path / f"r{release}.json")
    path = str(FIXTURES / "tri001_block_ptr.py")
    proc = run_cli("--results", str(tmp_path), path)
    assert proc.returncode == 1
    assert "[block_ptr: deprecated on 2.0.0; removed on 3.0.0]" in proc.stdout
    proc = run_cli("--results", str(tmp_path), "--candidate", "1.0.0", path)
    assert "does not affect 1.0.0" in proc.stdout
    proc = run_cli("--results", str(tmp_path), "--candidate", "3.0.0", path)
    assert "block_ptr on 3.0.0: removed (interpret): affects 3.0.0" in proc.stdout


def test_aliases_and_jit_scope(tmp_path: Path) -> None:
    src = tmp_path / "aliases.py"
    src.write_text(
        "import triton as tr\n"
        "import triton.language as language\n"
        "from triton.language import make_block_ptr as mbp\n"
        "\n"
        "@tr.jit(do_not_specialize=['n'])\n"
        "def k(p, n):\n"
        "    q = mbp(p, (n,), (1,), (0,), (16,), (0,))\n"
        "    i = language.program_id(0)\n"
        "    return i / 2\n"
        "\n"
        "def not_a_kernel():\n"
        "    i = language.program_id(0)\n"
        "    return i / 2\n"
    )
    assert found(src) == {(7, "TRI001"), (9, "TRI006")}


def test_unrelated_names_are_not_triton(tmp_path: Path) -> None:
    src = tmp_path / "numpy_user.py"
    src.write_text("import numpy as tl\n\ndef f(a, b):\n    return tl.dot(a, b)\n")
    assert found(src) == set()


def test_splats_do_not_produce_guesses(tmp_path: Path) -> None:
    src = tmp_path / "splat.py"
    src.write_text(
        "import triton\nimport triton.language as tl\n\n"
        "@triton.jit\ndef k(a, b, kw):\n"
        "    c = tl.dot(a, b, **kw)\n"
        "    return tl.load(*a)\n"
    )
    assert found(src) == set()


def test_malformed_rules_are_rejected(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nid = "X1"\nname = "x"\nmessage = "m"\nfix = "f"\nscope = "jit"\n')
    with pytest.raises(scan.RuleError, match=r"X1\)\.match"):
        scan.load_rules(rules)
    rules.write_text(
        '[[rule]]\nid = "X1"\nname = "x"\nmessage = "m"\nfix = "f"\nscope = "jit"\n'
        'concerns = ["removed"]\n[rule.match]\nkind = "call"\ncalls = ["dot"]\n'
    )
    with pytest.raises(scan.RuleError, match="need a probe"):
        scan.load_rules(rules)


def test_scanner_imports_no_triton_torch_or_numpy() -> None:
    code = (
        "import sys, matrix.scan, matrix.gate\n"
        "bad = [m for m in ('triton', 'torch', 'numpy', 'jinja2') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_rule_probes_and_statuses_exist_in_the_catalog() -> None:
    from matrix.catalog import PROBES_BY_NAME

    for rule in scan.load_rules():
        if rule.probe is None:
            continue
        assert rule.probe in PROBES_BY_NAME, f"{rule.id}: unknown probe {rule.probe!r}"
        statuses = set(PROBES_BY_NAME[rule.probe].all_statuses)
        assert set(rule.concerns) <= statuses, f"{rule.id}: {set(rule.concerns) - statuses}"
        assert set(rule.breaking) <= statuses, f"{rule.id}: {set(rule.breaking) - statuses}"
