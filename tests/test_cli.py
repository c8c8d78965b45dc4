"""Every entry point ends a fault of the machine or of its input in one line naming the path and
the exit code, never a traceback (issue 11: ``python -m matrix.report`` on a full disk died with
an uncaught OSError). The full disk itself is in test_orchestrate (a real tmpfs)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from matrix import cli
from matrix.results import SchemaError, atomic_write_text

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "reports" / "raw"


def _entry(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    """A file where a folder is wanted: every write below it fails (ENOTDIR), as root too."""
    path = tmp_path / "a-file"
    path.write_text("")
    return path


@pytest.mark.parametrize(
    "make_args, named",
    [
        (lambda b: ["matrix", "report", "--raw", str(RAW), "--out", f"{b}/pages"], "{b}/pages"),
        (lambda b: ["matrix", "verify", f"{b}/raw"], "{b}/raw"),
        (lambda b: ["matrix", "fingerprint", f"{b}/x.json", f"{b}/y.json"], "{b}/x.json"),
        (lambda b: ["matrix", "timings", f"{b}/raw"], "{b}/raw"),
        (lambda b: ["matrix", "migrate", f"{b}/raw"], "{b}/raw"),
    ],
    ids=["report-out", "verify-raw", "fingerprint", "timings", "migrate"],
)
def test_entry_points_say_one_line_naming_the_path(blocker, make_args, named):
    proc = _entry(*make_args(blocker))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and named.format(b=blocker) in lines[0], proc.stderr


def test_a_write_that_fails_on_a_file_object_is_named(tmp_path, monkeypatch):
    """A full disk shows on write/flush of a file object, whose OSError names no file."""
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fd, *a, **k):
            self.f = real_fdopen(fd, *a, **k)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fdopen", Full)
    target = tmp_path / "page.html"

    def main(argv):
        atomic_write_text(target, "x" * 10)
        return 0

    assert cli.run(main, "matrix.test", []) == cli.OS_ERROR_EXIT
    assert not list(tmp_path.iterdir()), "the temporary file is removed"


def test_run_says_one_line_and_lets_bugs_through(capsys):
    def missing(argv):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/nowhere/raw")

    assert cli.run(missing, "matrix.x", []) == 2
    assert capsys.readouterr().err.strip() == (
        "matrix.x: /nowhere/raw: No such file or directory (exit 2)"
    )

    def unreadable(argv):
        raise SchemaError("/raw/a.json: not JSON (bad byte)")

    assert cli.run(unreadable, "matrix.x", []) == 2
    assert capsys.readouterr().err.strip() == "matrix.x: /raw/a.json: not JSON (bad byte) (exit 2)"

    def interrupted(argv):
        raise KeyboardInterrupt

    assert cli.run(interrupted, "matrix.x", []) == cli.INTERRUPT_EXIT
    assert "interrupted" in capsys.readouterr().err

    def bug(argv):
        raise ZeroDivisionError("a bug keeps its traceback")

    with pytest.raises(ZeroDivisionError):
        cli.run(bug, "matrix.x", [])


def test_a_closed_stdout_ends_quietly(tmp_path):
    code = (
        "import sys\nfrom matrix import cli\n"
        "def main(argv):\n    for _ in range(100000):\n        print('x' * 100)\n    return 0\n"
        "sys.exit(cli.run(main, 'matrix.x'))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    proc.stdout.read(10)
    proc.stdout.close()  # what `| head` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == cli.BROKEN_PIPE_EXIT and "Traceback" not in err, err


# ----------------------------------------------- issue 23: output never decides the exit code

GATE_SAFE = ROOT / "tests" / "fixtures" / "gate" / "safe"


@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "latin-1"}, {"PYTHONIOENCODING": "ascii"},
     {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}],
    ids=["latin-1", "ascii", "LC_ALL=C"],
)  # fmt: skip
def test_the_gate_s_verdict_survives_a_terminal_that_cannot_print_the_arrow(tmp_path, env):
    args = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(GATE_SAFE),
            "--no-project-scan", "--out", str(tmp_path),
            "--accepted", str(GATE_SAFE.parent / "accepted_none.toml")]  # fmt: skip
    full = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LC_ALL")}
    proc = subprocess.run([sys.executable, "-m", "matrix.gate", *args], cwd=ROOT,
                          env={**full, **env}, capture_output=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr
    assert proc.stdout.startswith(b"**SAFE** (exit 0)")
    assert b"3.8.0 \\u2192 3.9.0" in proc.stdout or "→".encode() in proc.stdout
    assert "3.8.0 → 3.9.0" in (tmp_path / "gate.md").read_text(encoding="utf-8")


def test_a_surrogate_escaped_text_is_written_escaped(tmp_path):
    path = tmp_path / "page.html"
    atomic_write_text(path, "a byte \udcff the probe could not decode")
    assert path.read_text(encoding="utf-8") == "a byte \\udcff the probe could not decode"


def test_one_undecodable_byte_does_not_stop_the_report(tmp_path):
    from matrix.results import Result, Run, write_raw

    for release, detail in (("3.8.0", "works"), ("3.9.0", "bad byte \udcff here")):
        run = Run(id=f"triton-{release}-numpy-2.4.6", env={"triton": release, "numpy": "2.4.6"},
                  results=[Result("block_ptr", "interpret", None, "removed", detail)],
                  extra={"complete": True})  # fmt: skip
        write_raw(run, tmp_path / "raw" / f"{run.id}.json")
    proc = _entry("matrix.report", "--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "p" / "probes" / "block_ptr.html").read_text(encoding="utf-8")
    assert "\\udcff" in page


def test_an_inherited_sig_ign_does_not_disable_ctrl_c():
    code = (
        "import signal, os, sys\n"
        "from matrix import cli\n"
        "def main(argv):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    import time; time.sleep(30)\n"
        "    return 0\n"
        "sys.exit(cli.run(main, 'probe'))\n"
    )

    def ignore_sigint() -> None:  # what `trap '' INT` or a background job leaves
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, preexec_fn=ignore_sigint)  # fmt: skip
    assert proc.returncode == cli.INTERRUPT_EXIT, proc.stderr
    assert "probe: interrupted" in proc.stderr


def test_the_exit_code_is_written_where_nox_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv(cli.EXIT_CODE_FILE, str(tmp_path / "code"))
    assert cli.run(lambda argv: 2, "probe", []) == 2
    assert (tmp_path / "code").read_text() == "2\n"


def test_a_full_disk_that_names_no_file_says_where_temporary_files_go(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    line = cli.describe(OSError(errno.ENOSPC, "No space left on device"))
    assert str(tmp_path) in line and "No space left on device" in line
