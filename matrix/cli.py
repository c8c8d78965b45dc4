"""How every ``python -m matrix...`` command ends when the machine, not the code, stops it.

A full disk, an unwritable ``--out``, a missing ``--raw`` or a closed pipe is a fault of the
machine or of the command line: a traceback would bury the one fact that matters, which path
and why. ``run`` calls a command's ``main`` and turns what escapes it into one line on stderr
and a documented exit code (issue 11):

- ``OSError``: ``<prog>: reports/index.html: No space left on device (exit 2)``;
- a closed stdout (``python -m matrix.scan ... | head``): silence, exit 141 as for SIGPIPE;
- ``matrix.core.InputError`` (a raw file that cannot be read, a malformed data file, a text
  that is not a release): ``<prog>: <its message> (exit 2)``;
- Ctrl-C: ``<prog>: interrupted (exit 130)``.

Every entry point ends with ``sys.exit(cli.run(main, "matrix.report"))``. Writers that fail
on a file object (whose ``OSError`` names no file) attach the path first: ``named``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from matrix.core import InputError

OS_ERROR_EXIT = 2
BROKEN_PIPE_EXIT = 128 + 13  # what a shell reports for a process ended by SIGPIPE
INTERRUPT_EXIT = 130


def describe(e: OSError) -> str:
    """The path(s) and the reason, on one line.

    >>> describe(FileNotFoundError(2, "No such file or directory", "/raw"))
    '/raw: No such file or directory'
    >>> describe(OSError(28, "No space left on device", "/out/a.html"))
    '/out/a.html: No space left on device'
    """
    reason = e.strerror or str(e) or type(e).__name__
    paths = [os.fsdecode(p) for p in (e.filename, e.filename2) if p is not None]
    if not paths:
        return f"{reason} (the failing call named no file)"
    return f"{' -> '.join(paths)}: {reason}"


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
    try:
        return main(argv)
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE_EXIT
    except OSError as e:
        _say(f"{prog}: {describe(e)} (exit {OS_ERROR_EXIT})")
        return OS_ERROR_EXIT
    except InputError as e:
        _say(f"{prog}: {e} (exit {OS_ERROR_EXIT})")
        return OS_ERROR_EXIT
    except KeyboardInterrupt:
        _say(f"\n{prog}: interrupted (exit {INTERRUPT_EXIT})")
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
