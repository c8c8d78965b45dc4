"""One command, one exit-code contract (issue 43): ``python -m matrix COMMAND`` lists and runs
every command, every parser in the tree refuses abbreviations, exit codes come from
``matrix.exitcodes.ExitCode`` and docs/commands.md has one row per command and per code."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from matrix import commands
from matrix.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "commands.md"


def _python_m(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_help_lists_every_command() -> None:
    proc = _python_m("matrix", "--help")
    assert proc.returncode == ExitCode.OK, proc.stderr
    listed = re.findall(r"^ {4}(\S+)", proc.stdout, flags=re.M)
    assert listed == [c.name for c in commands.COMMANDS]


def test_an_unknown_command_or_option_is_exit_2() -> None:
    for argv in (["gat"], ["--cand"], []):
        with pytest.raises(SystemExit) as e:
            commands.main(argv)
        assert e.value.code == ExitCode.UNDECIDABLE, argv


@pytest.mark.parametrize("command", commands.COMMANDS, ids=[c.name for c in commands.COMMANDS])
def test_every_command_runs_a_main_that_refuses_abbreviations(command, capsys) -> None:
    """``--he`` would be ``--help`` (exit 0) to a parser that guesses abbreviations."""
    main = command.main()
    assert callable(main)
    with pytest.raises(SystemExit) as e:
        main(["--he"])
    assert e.value.code == ExitCode.UNDECIDABLE
    assert "usage:" not in capsys.readouterr().out  # no help printed: an error, on stderr


def test_cand_is_refused_not_read_as_candidate(tmp_path: Path) -> None:
    proc = _python_m("matrix", "gate", "--baseline", "3.8.0", "--cand", "3.9.0",
                     "--results", "reports/raw", "--out", str(tmp_path))  # fmt: skip
    assert proc.returncode == ExitCode.UNDECIDABLE, proc.stdout
    assert "required: --candidate" in proc.stderr  # --cand did not stand for it
    assert not (tmp_path / "gate.json").exists()


def test_nox_s_gate_refuses_cand_too(capsys) -> None:
    from matrix.gate import session

    with pytest.raises(SystemExit) as e:
        session.main(["--cand", "3.8.0", "--results", "reports/raw"])
    assert e.value.code == ExitCode.UNDECIDABLE
    assert "--cand" in capsys.readouterr().err


def test_an_old_name_says_it_is_deprecated_and_still_runs(tmp_path: Path) -> None:
    proc = _python_m("matrix.verify", str(tmp_path / "none"))
    first, *rest = proc.stderr.splitlines()
    assert first == ("python -m matrix.verify: deprecated name, use `python -m matrix verify` "
                     "(same arguments)")  # fmt: skip
    assert rest and proc.returncode == ExitCode.UNDECIDABLE  # the command ran: no such folder


def test_the_console_script_is_the_tree() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    module, _, function = pyproject["project"]["scripts"]["triton-compat"].partition(":")
    assert getattr(importlib.import_module(module), function) is commands.entry


# ------------------------------------------------------------------------- the exit-code table


def _table(title_row: str) -> list[list[str]]:
    """The rows of the Markdown table in docs/commands.md whose header starts ``title_row``."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title_row))
    rows = []
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip().strip("`") for c in re.split(r"(?<!\\)\|", ln)[1:-1]])
    return rows


def test_the_doc_table_has_every_exit_code_once() -> None:
    rows = _table("| Code |")
    assert [(int(code), name) for code, name, _ in rows] == [(c.value, c.name) for c in ExitCode]


def test_the_doc_table_has_one_row_per_command_and_a_column_per_code() -> None:
    header = _table("| Command |")
    assert [r[0] for r in header] == [c.name for c in commands.COMMANDS]
    columns = DOC.read_text(encoding="utf-8").split("| Command |", 1)[1].splitlines()[0]
    assert [int(c) for c in re.findall(r"\d+", columns)] == [0, 1, 2, 3]


# ------------------------------------------------------------------- no literal exit codes


def literal_returns(source: str) -> list[int]:
    """Lines that return an int literal (or a choice between two) instead of an ExitCode."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value]
            if isinstance(node.value, ast.IfExp):
                values = [node.value.body, node.value.orelse]
            if any(isinstance(v, ast.Constant) and type(v.value) is int for v in values):
                found.append(node.lineno)
    return sorted(found)


def test_no_command_returns_a_literal_exit_code() -> None:
    modules = {c.target.partition(":")[0] for c in commands.COMMANDS} | {
        "matrix.cli", "matrix.gate.legs", "matrix.measure.orchestrate"}  # fmt: skip
    found = {}
    for name in sorted(modules):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        lines = literal_returns(Path(spec.origin).read_text(encoding="utf-8"))
        if lines:
            found[name] = lines
    assert found == {}


def test_the_literal_check_finds_one() -> None:
    src = "def main():\n    if x:\n        return 2\n    return 1 if y else ExitCode.OK\n"
    assert literal_returns(src) == [3, 4]
