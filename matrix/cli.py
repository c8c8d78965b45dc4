"""How every ``python -m matrix COMMAND`` ends when the machine, not the code, stops it.

A full disk, an unwritable ``--out``, a missing ``--raw`` or a closed pipe is a fault of the
machine or of the command line: a traceback would bury the one fact that matters, which path
and why. ``run`` calls a command's ``main`` and turns what escapes it into one line on stderr
and a documented exit code (issue 11):

- ``OSError``: ``<prog>: reports/index.html: No space left on device (exit 2)``;
- a closed stdout (``python -m matrix scan ... | head``): silence, exit 141 as for SIGPIPE;
- ``matrix.core.InputError`` (a raw file that cannot be read, a malformed data file, a text
  that is not a release): ``<prog>: <its message> (exit 2)``;
- Ctrl-C: ``<prog>: interrupted (exit 130)``.

Every command runs through ``run`` (``matrix.commands``; an old module entry point ends with
``sys.exit(cli.run(main, "matrix.report"))``); the codes are ``matrix.exitcodes.ExitCode``.
Writers that fail on a file object (whose ``OSError`` names no file) attach the path first:
``named``.

Output never decides the exit code: ``run`` makes stdout and stderr write what their encoding
cannot hold as ``\\u2192`` escapes (``LC_ALL=C``, ``PYTHONIOENCODING=latin-1``) instead of
raising. It installs the Ctrl-C and SIGTERM handlers itself, so that a SIGINT ignored by the
shell that started it (``trap '' INT``, a background job) still interrupts. With
``MATRIX_EXIT_CODE_FILE`` set, it writes the exit code there: nox turns every failure into
1, and the noxfile reads the real one (0/1/2) back.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from matrix.core import InputError
from matrix.exitcodes import ExitCode

OS_ERROR_EXIT = ExitCode.UNDECIDABLE
BROKEN_PIPE_EXIT = ExitCode.BROKEN_PIPE  # what a shell reports for a process ended by SIGPIPE
INTERRUPT_EXIT = ExitCode.INTERRUPTED
EXIT_CODE_FILE = "MATRIX_EXIT_CODE_FILE"
# A full disk or a read-only file system that a call names no file for: say where temporary
# files go, the one folder every command writes to without being told.
_WHERE_UNNAMED = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def describe(e: OSError) -> str:
    """The path(s) and the reason, on one line.

    >>> describe(FileNotFoundError(2, "No such file or directory", "/raw"))
    '/raw: No such file or directory'
    >>> describe(OSError(28, "No space left on device", "/out/a.html"))
    '/out/a.html: No space left on device'
    """
    reason = e.strerror or str(e) or type(e).__name__
    paths = [os.fsdecode(p) for p in (e.filename, e.filename2) if p is not None]
    if not paths and e.errno in _WHERE_UNNAMED:
        return f"{reason} (the failing call named no file; temporary files go to {_tmp()})"
    if not paths:
        return f"{reason} (the failing call named no file)"
    return f"{' -> '.join(paths)}: {reason}"


def resolved(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute with its symlinks followed where they lead somewhere; a symlink
    loop (``Path.resolve`` raises RuntimeError on one before Python 3.13) stays as written,
    made absolute, so that whoever reads it next names the loop instead of a traceback."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


@contextmanager
def named(path: str | os.PathLike[str]) -> Iterator[None]:
    """Give an ``OSError`` raised inside without a file name (a write to a full disk through a
    file object) the name ``path``, so that the one line ``run`` prints can say where."""
    try:
        yield
    except OSError as e:
        if e.filename is None:
            e.filename = os.fspath(path)
        raise


def run(
    # A list, the narrowest argv: every entry point's main (list or Sequence) accepts it.
    main: Callable[[list[str] | None], int],
    prog: str,
    argv: list[str] | None = None,
) -> int:
    """``main(argv)``'s exit code; an OSError, a bad input, a closed pipe or Ctrl-C end in one
    line instead of a traceback (see the module's docstring for the codes)."""
    safe_output()
    handle_signals()
    code = _run(main, prog, argv)
    where = os.environ.get(EXIT_CODE_FILE)
    if where:
        with suppress(OSError):
            Path(where).write_text(f"{int(code)}\n", encoding="utf-8")
    return code


def deprecated(old: str, command: str) -> None:
    """One line on stderr for an old module entry point (``python -m matrix.gate``): it still
    runs the command, and says the name that replaces it (``python -m matrix gate``)."""
    _say(f"{old}: deprecated name, use `python -m matrix {command}` (same arguments)")


def safe_output() -> None:
    """stdout and stderr escape what their encoding cannot write (``→`` under latin-1)."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(AttributeError, ValueError, OSError):
            # TextIO has no reconfigure; a TextIOWrapper has, anything else raises AttributeError
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")


def handle_signals() -> None:
    """Ctrl-C and SIGTERM interrupt, whatever the parent left: an inherited SIG_IGN for
    SIGINT (a background job of a shell) would otherwise make Ctrl-C do nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, signal.SIG_IGN, None):
        signal.signal(signal.SIGTERM, _interrupt)


def _tmp() -> str:
    try:
        return tempfile.gettempdir()
    except OSError:
        return os.environ.get("TMPDIR") or "/tmp"


def _run(main: Callable[[list[str] | None], int], prog: str, argv: list[str] | None) -> int:
    try:
        return main(argv)
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE_EXIT
    except OSError as e:
        _say(f"{prog}: {describe(e)} (exit {OS_ERROR_EXIT:d})")
        return OS_ERROR_EXIT
    except InputError as e:
        _say(f"{prog}: {e} (exit {OS_ERROR_EXIT:d})")
        return OS_ERROR_EXIT
    except KeyboardInterrupt:
        _say(f"\n{prog}: interrupted (exit {INTERRUPT_EXIT:d})")
        return INTERRUPT_EXIT


def _say(line: str) -> None:
    # stderr itself may be gone (closed, or on the full disk): the exit code still says it.
    with suppress(OSError):
        print(line, file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail again."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
