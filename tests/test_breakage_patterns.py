"""Real Triton-upgrade breakages, each modelled in a few lines of our own
(tests/fixtures/scan/breakages/<case>/: case.toml cites the public issue or fix; before.py is the
pattern that broke, after.py the fix pattern), replayed release-aware on the committed results:

- the scanner flags the expected rule on the expected line on the release that broke it;
- on the last good release it says "breaks" nowhere (an unrecorded last good release, older
  than 3.0.0: the command must fail closed, exit 2);
- the fixed file fails nothing on the breaking release;
- the gate (census check and scan together) exits 1 on the original and 0 on the fix, for the
  cases whose mechanism is on the gate's own path.

Every case must pass: these are the mechanisms this suite guards (a kernel's members reached
through a helper's parameter, a hook read off a launch result's class, ``_builder=`` judged
against the builtins' own plumbing, a None sentinel of a guarded import, a moved utility
imported under try/except ImportError).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from matrix import scan
from matrix.analyze.census import censuses_from_runs
from matrix.gate.verdict import parser, run_gate
from matrix.results import read_runs
from matrix.scan.rules import AFFECTS, BREAKS

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "tests" / "fixtures" / "scan" / "breakages"
CASES = sorted(p.parent.name for p in CASES_DIR.glob("*/case.toml"))
RAW = ROOT / "reports" / "raw"


@pytest.fixture(scope="module")
def recorded():
    runs = read_runs(RAW)
    return runs, censuses_from_runs(runs)


def _meta(case: str) -> dict:
    return tomllib.loads((CASES_DIR / case / "case.toml").read_text())


def _findings(recorded, path: Path, candidate: str) -> list[scan.Finding]:
    runs, censuses = recorded
    report = scan.scan_paths([path], censuses=censuses)
    scan.judge(report.findings, runs, candidate, censuses)
    return report.findings


def test_the_cases_are_cited() -> None:
    assert len(CASES) >= 10, CASES
    for case in CASES:
        meta = _meta(case)
        assert meta["source"].startswith("https://github.com/"), case
        assert meta["expect"] and meta["class"], case


@pytest.mark.parametrize("case", CASES)
def test_flagged_on_the_breaking_release(recorded, case: str) -> None:
    meta = _meta(case)
    got = _findings(recorded, CASES_DIR / case / "before.py", meta["breaking"])
    for want in meta["expect"]:
        hits = [
            f
            for f in got
            if f.rule.id == want["rule"]
            and want["line"] in (f.line, *f.also)
            and f.effect in AFFECTS
            and f.fails
        ]
        seen = sorted((f.line, f.rule.id, f.effect) for f in got)
        where = f"{case} on {meta['breaking']}"
        assert hits, f"{where}: no failing {want['rule']} on line {want['line']}: {seen}"


@pytest.mark.parametrize("case", CASES)
def test_no_breaks_on_the_last_good_release(recorded, case: str) -> None:
    meta = _meta(case)
    before = CASES_DIR / case / "before.py"
    if meta["last_good"] in recorded[1]:
        got = _findings(recorded, before, meta["last_good"])
        broke = sorted((f.line, f.rule.id) for f in got if f.effect == BREAKS)
        assert not broke, f"{case}: 'breaks' on the last good {meta['last_good']}: {broke}"
        return
    cli = subprocess.run(
        [sys.executable, "-m", "matrix.scan", str(before), "--results", str(RAW),
         "--candidate", meta["last_good"]],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 2, f"{case}: unrecorded {meta['last_good']}, exit {cli.returncode}"


@pytest.mark.parametrize("case", CASES)
def test_the_fix_is_clean_on_the_breaking_release(recorded, case: str) -> None:
    meta = _meta(case)
    got = _findings(recorded, CASES_DIR / case / "after.py", meta["breaking"])
    failing = sorted((f.line, f.rule.id, f.effect) for f in got if f.fails)
    assert not failing, f"{case} fixed, on {meta['breaking']}: {failing}"


def _gate(case: str, which: str, tmp_path: Path) -> int:
    """The gate's exit (in process, as ``python -m matrix gate``) on ``which`` (before/after)
    alone, last good -> breaking."""
    meta = _meta(case)
    folder = tmp_path / which
    folder.mkdir()
    (folder / "k.py").write_text((CASES_DIR / case / f"{which}.py").read_text())
    args = parser().parse_args(
        ["--baseline", meta["last_good"], "--candidate", meta["breaking"], "--results", str(RAW),
         "--scan", str(folder), "--out", str(tmp_path / f"out-{which}")]
    )  # fmt: skip
    report = run_gate(args)
    report.decide()
    return report.exit_code


# The gate runs its own census check on the uses the scanner lists (about 10 s a run here): it
# is exercised on the cases whose mechanism lives on that path (derived uses of runtime members
# and of a hook read off a launch result's class; the `_builder=` keyword judged against the
# builtins' plumbing). The gate's verdict on every case is in notes/relevance/
# session14-breakages.md.
GATE_CASES = [
    "attrsdesc",
    "binary-class-hook",
    "builder-kw",
    "hook-class",
    "jit-cache",
    "knobs-cache",
]


@pytest.mark.parametrize("case", GATE_CASES)
def test_the_gate_blocks_the_original_and_passes_the_fix(case: str, tmp_path: Path) -> None:
    assert _gate(case, "before", tmp_path) == 1, f"{case}: the original is not blocked"
    assert _gate(case, "after", tmp_path) == 0, f"{case}: the fix is not safe"
