"""The exit codes of every ``python -m matrix`` command: one meaning per value, whatever the
command (issue 43). docs/commands.md has the table of what each command means by each.

The gate's contract is the model: 0 it did its job and found nothing wrong (safe), 1 it did
its job and found something wrong (unsafe), 2 it could not do its job (undecidable: bad
arguments, an unreadable input, an environment that failed), so a caller that only knows
"0 passes" never reads "could not tell" as a pass. argparse's own usage errors exit 2, which
is ``UNDECIDABLE`` too.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """How a command ended. Its value is the process's exit status."""

    # Done, and nothing wrong found: the gate's "safe", a complete verify, a clean scan.
    OK = 0
    # Done, and something wrong found and listed: the gate's "unsafe", a failing scan finding,
    # an incomplete raw file (verify), a failed measurement (run, matrix), a claim check that
    # raised (report).
    FAILED = 1
    # Could not do the job: bad arguments, an unreadable or malformed input, a full disk, a
    # missing release; the gate's "undecidable". Never a pass.
    UNDECIDABLE = 2
    # A cell whose environment imports another Triton than the one it is labelled with:
    # nothing it measured is kept (``matrix run``; ``matrix matrix`` records it as not measured).
    WRONG_TRITON = 3
    # Ctrl-C or SIGTERM (as a shell reports SIGINT: 128 + 2).
    INTERRUPTED = 130
    # stdout closed under the command (``... | head``), as a shell reports SIGPIPE: 128 + 13.
    BROKEN_PIPE = 141
