"""Every child process of the matrix: its own process group, and never outliving its parent.

One place starts children (``start``/``run``) so that one place can end them:

- each child leads its own process group (``start_new_session``), so a timeout, an interrupt or
  a stop kills the child *and* what it started (``kill_group``);
- each child asks the kernel to SIGKILL it when the thread that started it dies
  (``PR_SET_PDEATHSIG``, Linux): a ``kill -9`` of the orchestrator takes its runners with it,
  and each runner's death takes its probe children, so no orphan keeps writing into an
  environment or a raw file that the next run is using;
- ``stop_all`` (Ctrl-C, SIGTERM) kills every live group and makes every later ``run`` raise
  ``KeyboardInterrupt``, so a worker thread stops instead of recording the kill as a result;
- a grandchild can leave its group (``setsid``, a double fork) and outlive its parent, out of
  reach of both mechanisms above. The orchestrator and the runner are therefore subreapers
  (``owning_descendants``, ``PR_SET_CHILD_SUBREAPER``): such an orphan becomes their child, not
  init's, and ``kill_strays`` ends every descendant that is not under a child still being
  watched, after each child ends and on the way out. The runner dies with the orchestrator by
  SIGTERM, not SIGKILL (``death_signal``), so that it ends its own strays first; an alarm
  makes sure that it dies even if that cleanup hangs.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# Seconds a runner told to stop (its parent died) has to end its children before the kernel
# ends it (SIGALRM's default action).
STOP_GRACE_S = 20

# Every child being watched: started by a command (Popen) or forked (Forked).
_live: set[Any] = set()
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


def _die_with_parent(parent: int, death_signal: int) -> None:
    """Runs in the child between fork and exec."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def bytecode_kept(folder: Path | None = None) -> dict[str, str | None]:
    """Environment changes (``None``: unset) under which a Python child keeps its bytecode in
    ``folder`` (default: ``pycache`` in this environment's folder), unless the user chose a
    prefix. With PYTHONDONTWRITEBYTECODE set (this machine sets it) every child compiled
    torch's 2,285 modules afresh: importing torch took 3.3 s instead of 1.6 (3.9.0's cell
    environment). A prefix keeps the .pyc files out of the checkout and out of site-packages,
    whose files probes read (``fp.env_values``)."""
    folder = folder if folder is not None else Path(sys.prefix) / "pycache"
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or str(folder)
    return {"PYTHONDONTWRITEBYTECODE": None, "PYTHONPYCACHEPREFIX": prefix}


def use_bytecode_of(env: Mapping[str, str | None]) -> None:
    """This process's imports from now on keep bytecode as an interpreter started with ``env``
    would (it reads these variables at its start only)."""
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    sys.pycache_prefix = env.get("PYTHONPYCACHEPREFIX") or None


def start(
    cmd: Sequence[str], *, death_signal: int = signal.SIGKILL, **kwargs: Any
) -> subprocess.Popen:
    """``subprocess.Popen`` in a process group of its own that gets ``death_signal`` when its
    parent dies (SIGKILL; SIGTERM for a child that must end children of its own first)."""
    if STOPPING.is_set():
        raise KeyboardInterrupt("the matrix is stopping")
    parent = os.getpid()
    with _lock:  # kill_strays must never see a child that is started but not yet recorded
        proc = subprocess.Popen(
            list(cmd),
            start_new_session=True,
            preexec_fn=lambda: _die_with_parent(parent, death_signal),
            **kwargs,
        )
        _live.add(proc)
    return proc


class Forked:
    """A child forked from this process without an exec (``fork``), with what the runner uses
    of ``subprocess.Popen``: ``pid``, ``returncode`` (negative: the signal that ended it),
    ``poll`` and ``wait``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its status is lost, as Popen says 0
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        while self.poll() is None:
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


def can_fork() -> bool:
    """Whether ``fork`` is safe here: Linux, and this process has no other thread (a thread
    holding a lock at the fork would leave it held forever in the child)."""
    try:
        return sys.platform.startswith("linux") and len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def fork(work: Callable[[], int], *, output: int, death_signal: int = signal.SIGKILL) -> Forked:
    """Run ``work`` in a forked child with the promises of ``start``: a process group of its
    own, ``death_signal`` when its parent dies, stdout and stderr on the file descriptor
    ``output``, its exit status ``work``'s return value (1 and the traceback on output if it
    raised). It keeps what this process has imported: that is what it is for (``can_fork``
    says where it is safe)."""
    if STOPPING.is_set():
        raise KeyboardInterrupt("the matrix is stopping")
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # else the child would write this process's pending output again
    parent = os.getpid()
    with _lock:
        # What exists now is the child's to read, not its collector's to walk: a collection
        # in the child would touch every inherited object, copying the pages they lie on.
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the child: it never returns from here
            _run_forked(work, output, parent, death_signal)
        gc.unfreeze()
        proc = Forked(pid)
        _live.add(proc)
    return proc


def _run_forked(work: Callable[[], int], output: int, parent: int, death_signal: int) -> None:
    code = 1
    try:
        os.setsid()
        _die_with_parent(parent, death_signal)
        # Signals as a fresh interpreter has them: this process's handlers are not the child's.
        for signum in (signal.SIGTERM, signal.SIGALRM, signal.SIGHUP, signal.SIGCHLD):
            if callable(signal.getsignal(signum)):
                signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.dup2(output, 1)
        os.dup2(output, 2)
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(write_through=True)  # type: ignore[union-attr]
        code = work()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _forget_parent_state() -> None:
    """In any forked child (ours, or a probe's own): the children, the lock and the stop flag
    are the parent's, and the kernel does not pass on the subreaper attribute."""
    global _lock
    _lock = threading.Lock()
    _live.clear()
    STOPPING.clear()
    _SUBREAPER.clear()


def kill_group(proc: subprocess.Popen | Forked) -> None:
    """SIGKILL ``proc``'s whole process group (it leads one) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def forget(proc: subprocess.Popen | Forked) -> None:
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
        kill_strays()  # what it left behind outside its group (setsid, a double fork)
    if STOPPING.is_set():
        raise KeyboardInterrupt("the matrix is stopping")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stop_all() -> None:
    """Kill every live child group and every other descendant; later ``start``/``run`` calls
    raise KeyboardInterrupt."""
    STOPPING.set()
    with _lock:
        live = list(_live)
    for proc in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    kill_strays(everything=True)


_SUBREAPER = threading.Event()


@contextlib.contextmanager
def owning_descendants() -> Iterator[bool]:
    """Inside: orphaned descendants of this process become its children, not init's
    (``PR_SET_CHILD_SUBREAPER``), and ``kill_strays`` ends those no watched child holds; on
    the way out every descendant is ended. Only the matrix's own commands (orchestrator,
    runner) enter it: anywhere else (a test, a library) other children are someone else's.
    Yields False where the kernel offers no subreaper."""
    on = _prctl is not None and _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    if on:
        _SUBREAPER.set()
    try:
        yield on
    finally:
        kill_strays(everything=True)  # nothing the command started outlives it
        if on:
            _SUBREAPER.clear()
            _prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc (empty where there is no /proc)."""
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended meanwhile
            continue
        # The command name, in parentheses, may hold spaces and ')': fields follow the last ')'.
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 1:
            kids.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return kids


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` in the process tree."""
    kids, found, todo = _children(), [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cpu_seconds(pid: int, with_descendants: bool = True) -> float:
    """CPU time (user + system) used so far by ``pid``, its live descendants and the children
    they have reaped (``with_descendants=False``: ``pid`` and its reaped children only), read from
    /proc; a process already gone counts 0. Timeouts compare it
    with the monotonic clock: a probe that truly ran past its limit used CPU or sat blocked,
    while a forward clock jump (a paused VM) passes the limit with almost no CPU used."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in [pid, *(descendants(pid) if with_descendants else [])]:
        try:
            with open(f"/proc/{p}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return total / tick


def kill_strays(*, everything: bool = False) -> list[int]:
    """SIGKILL every descendant of this process that is not (below) a child still watched by
    ``start`` (with ``everything``: all of them), reap those that are our children, and return
    their pids. A stray is what a finished or killed child left running outside its group."""
    if not _SUBREAPER.is_set():
        return []
    me = os.getpid()
    with _lock:
        watched = set() if everything else {p.pid for p in _live}
        kids = _children()
        victims: list[int] = []
        todo = [c for c in kids.get(me, []) if c not in watched]
        while todo:
            pid = todo.pop()
            victims.append(pid)
            todo.extend(kids.get(pid, []))
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    _reap(victims)
    return victims


def _reap(pids: Sequence[int], within_s: float = 2.0) -> None:
    """Collect the exit status of those of ``pids`` that are, or become (a killed stray's own
    children are handed to us, the subreaper), our children: no zombie is left behind."""
    pending, deadline = set(pids), time.monotonic() + within_s
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    pending.discard(pid)
            except ChildProcessError:  # not ours: gone, or still to be handed over
                if not os.path.exists(f"/proc/{pid}"):
                    pending.discard(pid)
        if pending:
            time.sleep(0.02)


def die_soon() -> None:
    """Let the kernel end this process in ``STOP_GRACE_S`` seconds whatever it is doing then
    (SIGALRM's default action): a process told to stop ends its children first, and must not
    hang doing so."""
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(STOP_GRACE_S)


def interrupt_on_sigterm() -> None:
    """SIGTERM ends this process the way Ctrl-C does (children killed, one line said)."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, handler)


os.register_at_fork(after_in_child=_forget_parent_state)
