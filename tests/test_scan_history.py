"""Replay real Triton-upgrade breakages collected from public repositories
(tests/fixtures/scan/history/<case>/: case.toml cites the repository, the fix commit, the file
and the excerpted lines; before.py is the pre-fix excerpt, after.py the fix).

Per case, against the committed recorded data (reports/raw, 3.0.0-3.9.0):
- on the release that broke it, a failing finding of the expected rule on each expected line;
- on the last good release, no finding that says "breaks" (where that release is recorded;
  where it is older than any recorded release, the command must fail closed: exit 2);
- the fixed file has no failing finding on the release that broke the original.
At least 90% of the cases must pass all three; every case's outcome is printed.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from matrix import scan
from matrix.analyze.census import censuses_from_runs
from matrix.results import read_runs
from matrix.scan.rules import AFFECTS, BREAKS

ROOT = Path(__file__).resolve().parent.parent
HISTORY = ROOT / "tests" / "fixtures" / "scan" / "history"
CASES = sorted(p.parent for p in HISTORY.glob("*/case.toml"))


@pytest.fixture(scope="module")
def recorded():
    runs = read_runs(ROOT / "reports" / "raw")
    return runs, censuses_from_runs(runs)


def _scan(recorded, path: Path, candidate: str) -> list[scan.Finding]:
    runs, censuses = recorded
    report = scan.scan_paths([path], censuses=censuses)
    scan.judge(report.findings, runs, candidate, censuses)
    return report.findings


def replay(recorded, case: Path) -> list[str]:
    """What is wrong with one case (empty: it passes)."""
    meta = tomllib.loads((case / "case.toml").read_text())
    wrong = []
    before = _scan(recorded, case / "before.py", meta["breaking"])
    for want in meta["expect"]:
        hits = [
            f
            for f in before
            if f.rule.id == want["rule"]
            and want["line"] in (f.line, *f.also)
            and f.effect in AFFECTS
            and f.fails
        ]
        if not hits:
            got = sorted((f.line, f.rule.id, f.effect) for f in before)
            rule, line = want["rule"], want["line"]
            wrong.append(f"{meta['breaking']}: no failing {rule} on line {line}: {got}")
    if meta["last_good_recorded"]:
        good = _scan(recorded, case / "before.py", meta["last_good"])
        broke = sorted((f.line, f.rule.id) for f in good if f.effect == BREAKS)
        if broke:
            wrong.append(f"{meta['last_good']} (last good): breaking findings {broke}")
    else:
        cli = subprocess.run(
            [sys.executable, "-m", "matrix.scan", str(case / "before.py"), "--results",
             str(ROOT / "reports" / "raw"), "--candidate", meta["last_good"]],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if cli.returncode != 2:
            wrong.append(f"{meta['last_good']} is not recorded, yet exit {cli.returncode}")
    after = _scan(recorded, case / "after.py", meta["breaking"])
    failing = sorted((f.line, f.rule.id, f.effect) for f in after if f.fails)
    if failing:
        wrong.append(f"{meta['breaking']}: the fixed file still fails: {failing}")
    return wrong


def test_the_replay_set_is_large_and_cited() -> None:
    assert len(CASES) >= 16, [c.name for c in CASES]
    for case in CASES:
        meta = tomllib.loads((case / "case.toml").read_text())
        assert meta["source"].startswith("https://github.com/") and len(meta["commit"]) == 40
        assert meta["expect"] and (case / "before.py").is_file() and (case / "after.py").is_file()


def test_real_breakages_replay(recorded, capsys) -> None:
    outcomes = {case.name: replay(recorded, case) for case in CASES}
    with capsys.disabled():
        for name, wrong in outcomes.items():
            print(f"\n{name}: {'ok' if not wrong else '; '.join(wrong)}")
    passed = sum(not w for w in outcomes.values())
    assert passed >= 0.9 * len(CASES), f"{passed} of {len(CASES)} cases pass"
