"""One matrix run at a time per folder it writes: the cell environments and the raw files.

Two runs over the same folders deleted each other's environments mid-run and interleaved raw
files (issue 11). A run holds an exclusive ``flock`` on ``.matrix-run.lock`` in each folder it
writes (by default both are in the checkout, so: one run per checkout). A second run waits,
saying for whom, or with ``wait=False`` refuses. The kernel drops the lock when its holder
dies, even by ``kill -9``: a stale lock cannot block the next run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

LOCK_NAME = ".matrix-run.lock"


class LockBusy(RuntimeError):
    """Another matrix run holds the lock; the message names the folder and its holder."""


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "another matrix run"
    return f"another matrix run ({text})" if text else "another matrix run"


@contextlib.contextmanager
def hold(
    folders: Sequence[Path], *, wait: bool = True, log: Callable[[str], None] = print
) -> Iterator[None]:
    """Hold the run lock of every folder in ``folders`` (in a fixed order: no deadlock)."""
    files = []
    try:
        for folder in sorted({Path(f).resolve() for f in folders}):
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / LOCK_NAME
            f = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held until the run ends)
            files.append(f)
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                who = _holder(path)
                if not wait:
                    raise LockBusy(
                        f"{who} is using {folder}; wait for it to finish (or stop it) and run again"
                    ) from None
                log(f"matrix: {who} is using {folder}; waiting for it to finish")
                t0 = time.monotonic()
                fcntl.flock(f, fcntl.LOCK_EX)
                log(f"matrix: {folder} is free after {time.monotonic() - t0:.0f} s; starting")
            started = time.strftime("%H:%M:%S UTC", time.gmtime())
            # Who holds it is only for a waiting run's message; the flock is what excludes. A
            # full disk must not stop the run here: its cells say what the disk costs them.
            # Unbuffered, so that nothing is left to fail again when the file is closed.
            with contextlib.suppress(OSError):
                os.ftruncate(f.fileno(), 0)
                os.write(f.fileno(), f"pid {os.getpid()}, started {started}\n".encode())
        yield
    finally:
        for f in files:
            f.close()  # closing drops the flock
