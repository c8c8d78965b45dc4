"""Every child process of the matrix: its own process group, and never outliving its parent.

One place starts children (``start``/``run``) so that one place can end them:

- each child leads its own process group (``start_new_session``), so a timeout, an interrupt or
  a stop kills the child *and* what it started (``kill_group``);
- each child asks the kernel to SIGKILL it when the thread that started it dies
  (``PR_SET_PDEATHSIG``, Linux): a ``kill -9`` of the orchestrator takes its runners with it,
  and each runner's death takes its probe children, so no orphan keeps writing into an
  environment or a raw file that the next run is using;
- ``stop_all`` (Ctrl-C, SIGTERM) kills every live group and makes every later ``run`` raise
  ``KeyboardInterrupt``, so a worker thread stops instead of recording the kill as a result.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

PR_SET_PDEATHSIG = 1

_live: set[subprocess.Popen] = set()
_lock = threading.Lock()
STOPPING = threading.Event()


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


# Resolved before any fork: the child may only make the call, not load a library.
_prctl = _load_prctl()


def _die_with_parent(parent: int) -> None:
    """Runs in the child between fork and exec."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def start(cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen`` in a process group of its own that dies with its parent."""
    if STOPPING.is_set():
        raise KeyboardInterrupt("the matrix is stopping")
    parent = os.getpid()
    proc = subprocess.Popen(
        list(cmd), start_new_session=True, preexec_fn=lambda: _die_with_parent(parent), **kwargs
    )
    with _lock:
        _live.add(proc)
    return proc


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s whole process group (it leads one) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def forget(proc: subprocess.Popen) -> None:
    with _lock:
        _live.discard(proc)


def run(
    cmd: Sequence[str], *, timeout: float | None = None, **kwargs: Any
) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(..., capture_output=True, text=True)``; on a timeout the whole
    group is killed and ``subprocess.TimeoutExpired`` raised; after ``stop_all`` it raises
    ``KeyboardInterrupt`` rather than return the killed child's status as if it were a result."""
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    kwargs.setdefault("text", True)
    proc = start(cmd, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        kill_group(proc)
        raise
    finally:
        forget(proc)
    if STOPPING.is_set():
        raise KeyboardInterrupt("the matrix is stopping")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stop_all() -> None:
    """Kill every live child group; later ``start``/``run`` calls raise KeyboardInterrupt."""
    STOPPING.set()
    with _lock:
        live = list(_live)
    for proc in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def interrupt_on_sigterm() -> None:
    """SIGTERM ends this process the way Ctrl-C does (children killed, one line said)."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, handler)
