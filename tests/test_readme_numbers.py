"""Numbers in README.md come from commands, and this checks the ones a command can give again.

The convention (for whoever writes README.md): a measured number or table sits between two
HTML comments that name the command it came from, run from the repository root::

    <!-- measured: python -m matrix timings reports/raw -->
    | release | cells | install s | runner s | total s | slowest probe |
    |---|---|---|---|---|---|
    | 3.0.0 | 3 | 0.0 | 63.7 | 63.7 | splitk [aot:cuda:80] 10.2 s |
    <!-- /measured -->

    `reports/` is <!-- measured: du -sb reports -->62.1 MB<!-- /measured -->

    raw files with both backends are
    <!-- measured: stat -c %s reports/raw/*-gpu-*.json -->1.07-1.21 MB<!-- /measured -->

Commands this file can check (``CHECKERS``): ``python -m matrix timings DIR`` (the block's
table rows are exactly the rows it prints), ``du -sb PATH`` (a size), ``stat -c %s PATH...``
(a size, or a range ``A-B UNIT`` over a glob). A size is checked to the digits shown, in SI
units (kB = 1000 B, MB = 10^6 B) or binary ones (KiB, MiB). A marker naming any other command
fails, and so does a README with no marker for the timing table or the size of ``reports/``:
nothing is skipped.
"""

from __future__ import annotations

import glob
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"<!--\s*measured:\s*(.+?)\s*-->(.*?)<!--\s*/measured\s*-->", re.S)
UNITS = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20,
         "GiB": 2**30}  # fmt: skip
SIZE = re.compile(r"^\s*([\d.]+)(?:\s*-\s*([\d.]+))?\s*(B|kB|MB|GB|KiB|MiB|GiB)\s*$")
# What the README must mark (the issue's stale numbers): the timing table and reports/'s size.
REQUIRED = ("python -m matrix timings reports/raw", "du -sb reports")


def blocks(text: str) -> list[tuple[str, str]]:
    """(command, marked text) of every measured block in ``text``."""
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(text)]


def _size_matches(shown: str, sizes: list[int], where: str) -> None:
    m = SIZE.match(shown)
    assert m, f"{where}: expected a size like '62.1 MB' or '1.07-1.21 MB', got {shown!r}"
    low, high, unit = m.group(1), m.group(2) or m.group(1), m.group(3)
    for text, actual in ((low, min(sizes)), (high, max(sizes))):
        digits = len(text.split(".")[1]) if "." in text else 0
        measured = round(actual / UNITS[unit], digits)
        assert float(text) == measured, (
            f"{where}: README says {text} {unit}, the command gives {actual} B = "
            f"{measured:.{digits}f} {unit}"
        )


def _run(argv: list[str]) -> str:
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{' '.join(argv)} exited {out.returncode}: {out.stderr[-500:]}"
    return out.stdout


def check_timings(args: list[str], marked: str, where: str) -> None:
    printed = _run([sys.executable, "-m", "matrix", "timings", *args])
    want = [ln.strip() for ln in printed.splitlines() if ln.strip().startswith("|")]
    have = [ln.strip() for ln in marked.splitlines() if ln.strip().startswith("|")]
    assert want, f"{where}: matrix timings printed no table"
    assert have == want, f"{where}: the README's table differs from the command's:\n" + "\n".join(
        [f"README:  {ln}" for ln in have if ln not in want]
        + [f"command: {ln}" for ln in want if ln not in have]
    )


def check_du(args: list[str], marked: str, where: str) -> None:
    assert args[:1] == ["-sb"] and len(args) == 2, f"{where}: expected 'du -sb PATH'"
    size = int(_run(["du", "-sb", args[1]]).split()[0])
    _size_matches(marked, [size], where)


def check_stat(args: list[str], marked: str, where: str) -> None:
    assert args[:2] == ["-c", "%s"] and len(args) > 2, f"{where}: expected 'stat -c %s PATH...'"
    paths = sorted(p for pattern in args[2:] for p in glob.glob(str(ROOT / pattern)))
    assert paths, f"{where}: {args[2:]} matches no file"
    sizes = [int(v) for v in _run(["stat", "-c", "%s", *paths]).split()]
    _size_matches(marked, sizes, where)


CHECKERS = {("python", "-m", "matrix", "timings"): check_timings, ("du",): check_du,
            ("stat",): check_stat}  # fmt: skip


def check(command: str, marked: str, where: str) -> None:
    words = command.split()
    for prefix, checker in CHECKERS.items():
        if tuple(words[: len(prefix)]) == prefix:
            checker(words[len(prefix) :], marked, where)
            return
    pytest.fail(f"{where}: no checker for {command!r}; known: {[' '.join(p) for p in CHECKERS]}")


# ------------------------------------------------------------------- the checker on fixtures


def test_a_size_is_checked_to_the_digits_shown_and_a_stale_one_fails():
    _size_matches("62.1 MB", [62_094_000], "x")
    _size_matches("1.07-1.21 MB", [1_070_400, 1_150_000, 1_209_999], "x")
    with pytest.raises(AssertionError, match="README says 61 MB, the command gives 62094000 B"):
        _size_matches("61 MB", [62_094_000], "x")
    with pytest.raises(AssertionError, match="README says 890 kB"):
        _size_matches("720-890 kB", [720_100, 1_210_000], "x")
    with pytest.raises(AssertionError, match="expected a size"):
        _size_matches("about 61 MB", [1], "x")


def test_blocks_are_found_and_an_unknown_command_fails():
    text = "a <!-- measured: du -sb reports -->1 MB<!-- /measured --> b\n" \
           "<!-- measured: wc -l x -->3<!-- /measured -->"  # fmt: skip
    assert blocks(text) == [("du -sb reports", "1 MB"), ("wc -l x", "3")]
    with pytest.raises(pytest.fail.Exception, match="no checker for 'wc -l x'"):
        check("wc -l x", "3", "README.md block 2")


def test_a_stale_timing_table_fails_naming_its_rows(tmp_path):
    raw = ROOT / "reports" / "raw"
    stale = "| release | cells | install s | runner s | total s | slowest probe |\n" \
            "| 3.0.0 | 3 | 0.0 | 60.0 | 60.0 | splitk [interpret] 8.9 s |"  # fmt: skip
    with pytest.raises(AssertionError, match=r"README:  \| 3\.0\.0 \| 3 \| 0\.0 \| 60\.0"):
        check_timings([str(raw)], stale, "fixture")


# ----------------------------------------------------------------------- the README itself


def test_the_readme_marks_its_measured_numbers():
    found = [cmd for cmd, _ in blocks(README.read_text(encoding="utf-8"))]
    missing = [cmd for cmd in REQUIRED if cmd not in found]
    assert not missing, (
        f"README.md has no measured block for {missing}; mark each number as "
        "'<!-- measured: COMMAND -->NUMBER<!-- /measured -->' (see this file's docstring)"
    )


def test_every_measured_number_in_the_readme_matches_its_command():
    found = blocks(README.read_text(encoding="utf-8"))
    assert found, "README.md has no measured blocks (see test_the_readme_marks_...)"
    for i, (command, marked) in enumerate(found, 1):
        check(command, marked, f"README.md measured block {i} ({command})")
