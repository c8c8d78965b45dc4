"""The stand-in parent a supervised child (a team's pytest, the kernel compiles) runs under, and
the one check the child makes against it. Both ends of the protocol live here; the module
imports the standard library only, since the capture plugin loads it in a team's pytest.

An item that kills its parent (``os.kill(os.getppid(), SIGKILL)``) kills the stand-in, not the
supervisor (``matrix.measure.supervise``), which records the item running at the stand-in's
death as ``crashed``. The child dies with the stand-in (PR_SET_PDEATHSIG), but that comes later
than the kill: an item that kills its parent and returns at once could be reported done (and
the next one started, then blamed) before the child is gone.

So before it reports an item done, the child asks the stand-in (``confirm_parent``): one byte
out, one byte back on a socket pair. A process that was sent SIGKILL never again runs its own
code (the kernel ends all its threads at their next return from the kernel), so a stand-in
killed by the item cannot answer, and the item is never reported done: the child then ends
itself. An answer proves the stand-in outlived the item.
"""

from __future__ import annotations

import os
import signal
import stat

# The child's end of the socket pair: its descriptor number, in the child's environment.
FD_ENV = "MATRIX_STAND_IN_FD"

STAND_IN = (
    "import ctypes, ctypes.util, os, signal, socket, subprocess, sys, threading\n"
    "prctl = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6').prctl\n"
    "mine, theirs = socket.socketpair()\n"
    "def answer():\n"
    "    while mine.recv(1):\n"
    "        mine.sendall(b'!')\n"
    "threading.Thread(target=answer, daemon=True).start()\n"
    f"env = {{**os.environ, {FD_ENV!r}: str(theirs.fileno())}}\n"
    # The child dies with the stand-in (PR_SET_PDEATHSIG, SIGKILL): nothing runs unsupervised.
    "rc = subprocess.call(sys.argv[1:], env=env, pass_fds=(theirs.fileno(),),\n"
    "                     preexec_fn=lambda: prctl(1, 9, 0, 0, 0))\n"
    # The stand-in dies of what its child died of, so the item is recorded with its signal.
    "if rc < 0:\n"
    "    signal.signal(-rc, signal.SIG_DFL)\n"
    "    os.kill(os.getpid(), -rc)\n"
    "sys.exit(rc)\n"
)

_fd: int | None = None


def take_fd() -> None:
    """In the child, at start: take the descriptor out of the environment, so that a process
    the child starts (a test running pytest) does not write to whatever that number is there."""
    global _fd
    text = os.environ.pop(FD_ENV, None)
    if text is None or not text.isdigit():
        return
    try:
        if stat.S_ISSOCK(os.fstat(int(text)).st_mode):
            _fd = int(text)
    except OSError:
        pass


def confirm_parent() -> None:
    """Return only if the stand-in is alive after what ran so far; else end this process at
    once (SIGKILL, as the stand-in's death would), before it reports anything more. Without a
    stand-in (the child run by hand) it returns."""
    if _fd is None:
        return
    try:
        os.write(_fd, b"?")
        answer = os.read(_fd, 1)
    except OSError:
        answer = b""
    if answer != b"!":
        os.kill(os.getpid(), signal.SIGKILL)
