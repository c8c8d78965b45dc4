"""Run a child that works through named items and reports each on an events file; survive it.

Both a team's pytest suite (items: tests) and the compiles of its captured kernels (items:
launch x target) run this way. The child appends JSON lines ``{"event": "start", "id": X}``
and ``{"event": "done", "id": X, "record": {...}}``; any other event is handed to
``on_event``. The child's output goes to a file, never a pipe, so a daemon the child leaves
behind holding its stdout cannot block us; the child runs in its own session and its whole
process group is killed when it ends, dies or hangs.

- An item that runs past ``item_timeout_s`` is recorded ``timeout``; one that is running when
  the child dies is recorded ``crashed`` with the child's exit (signal or code). The child is
  then restarted with every item that has a record in the skip file, so the items after it
  still run and every record already made is kept.
- The child runs in a session of its own under a stand-in parent (``matrix.measure.standin``):
  an item that kills its parent kills the stand-in and is recorded ``crashed`` (with the
  signal), even one that returns at once (the child asks the stand-in before it reports an
  item done); this process lives on and restarts the child past it.
- A child that dies again without finishing any item stops the loop (its output tail is given
  back), so a child that cannot start at all costs one attempt, not one per item.
- The child may report what an item did before it ended (``{"event": "partial", "id": X,
  "record": {...}}``: a test's call failed, its teardown is still to run). An item that then
  runs past its limit keeps that record (``timed_out_record``): a session fixture whose
  teardown never returns does not turn the last test's real failure into a bare ``timeout``.
- The child may say it is done with all its items (``{"event": "finished"}``); one that has
  not exited ``exit_grace_s`` later (a test left non-daemon threads or processes that the
  interpreter waits for at exit) is stopped, every record kept, and ``lingered`` says so.
  ``total_timeout_s`` bounds the whole run, restarts included.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from matrix.core import FAILED_TEST_OUTCOMES, TEST_CRASHED, TEST_TIMEOUT
from matrix.measure import procs
from matrix.measure.standin import STAND_IN

POLL_S = 0.05


@dataclass
class Supervised:
    """What a supervised child produced: one record per item, in the order they ended."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    attempts: int = 0
    last_exit: int | None = None
    output_tail: str = ""
    stopped: str = ""  # why the loop gave up early ("" when the child finished its items)
    # Why the child was stopped after it said it had finished ("" when it exited by itself).
    lingered: str = ""


def death(returncode: int) -> str:
    """``-11`` -> ``"killed by signal SIGSEGV"``; ``3`` -> ``"exited with code 3"``."""
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def tail(log: Path | IO[Any], limit: int = 1500) -> str:
    """The end of a child's output file: a path, or a handle opened before the child started,
    which still reads after the file (or its whole work folder) was deleted."""
    try:
        if isinstance(log, Path):
            return log.read_text(encoding="utf-8", errors="replace")[-limit:]
        log.flush()
        with open(log.fileno(), "rb", closefd=False) as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4 * limit))
            return f.read().decode("utf-8", errors="replace")[-limit:]
    except (OSError, ValueError):
        return ""


@dataclass
class _Attempt:
    """One child's way through its items so far, as its events file tells it."""

    events: Path
    offset: int = 0  # how far the file has been read: up to its last complete line
    running: str | None = None  # the item started and not yet done
    started_at: float = 0.0
    partial: dict[str, dict[str, Any]] = field(default_factory=dict)  # reported before it ended
    finished_at: float | None = None  # when the child said it was done with its items

    def read(
        self,
        record: Callable[[str, dict[str, Any]], None],
        on_event: Callable[[dict[str, Any]], None],
    ) -> None:
        """Take in the complete lines the child appended since the last read."""
        with self.events.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line from a child killed mid-write
            if event.get("event") == "start":
                self.running, self.started_at = str(event["id"]), time.monotonic()
            elif event.get("event") == "done":
                item = str(event["id"])
                record(item, dict(event.get("record") or {}))
                if item == self.running:
                    self.running = None
            elif event.get("event") == "partial":
                self.partial[str(event.get("id"))] = dict(event.get("record") or {})
            else:
                if event.get("event") == "finished" and self.finished_at is None:
                    self.finished_at = time.monotonic()
                on_event(event)


def supervise(
    cmd: Sequence[str],
    workdir: Path,
    env: Mapping[str, str],
    *,
    events_env: str,
    skip_env: str,
    item_timeout_s: float,
    on_record: Callable[[str, dict[str, Any]], None] = lambda i, r: None,
    on_event: Callable[[dict[str, Any]], None] = lambda e: None,
    cwd: str | os.PathLike[str] | None = None,
    total_timeout_s: float | None = None,
    max_attempts: int = 50,
    exit_grace_s: float = 30.0,
) -> Supervised:
    """Run ``cmd`` until it has worked through its items (module docstring). ``events_env`` and
    ``skip_env`` are the environment variables that tell the child its events and skip files."""
    out = Supervised()
    workdir.mkdir(parents=True, exist_ok=True)
    skip_file = workdir / "skip.txt"
    skip_file.write_text("", encoding="utf-8")
    t_start = time.monotonic()

    def record(item: str, rec: dict[str, Any]) -> None:
        out.records[item] = rec
        on_record(item, rec)
        with skip_file.open("a", encoding="utf-8") as f:
            f.write(item + "\n")

    while out.attempts < max_attempts:
        out.attempts += 1
        events = workdir / f"events-{out.attempts}.jsonl"
        log = workdir / f"output-{out.attempts}.log"
        events.write_text("", encoding="utf-8")
        child_env = {**env, events_env: str(events), skip_env: str(skip_file)}
        with log.open("wb") as log_f:
            # Its own group, dying with this process (procs: one place starts children).
            proc = procs.start(
                [sys.executable, "-c", STAND_IN, *cmd],
                env=child_env,
                cwd=cwd,
                stdout=log_f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        at = _Attempt(events)
        why_stopped = ""
        while True:
            exited = proc.poll() is not None
            at.read(record, on_event)
            if exited:
                break
            now = time.monotonic()
            running = at.running
            if running is not None and now - at.started_at > item_timeout_s:
                _kill_group(proc)
                proc.wait()
                record(
                    running,
                    timed_out_record(
                        running, at.partial.get(running), now - at.started_at, item_timeout_s
                    ),
                )
                at.running = None
                why_stopped = TEST_TIMEOUT
                break
            if total_timeout_s is not None and now - t_start > total_timeout_s:
                _kill_group(proc)
                proc.wait()
                out.stopped = f"the whole run passed its {total_timeout_s:g} s limit"
                break
            finished_at = at.finished_at
            if finished_at is not None and running is None and now - finished_at > exit_grace_s:
                _kill_group(proc)
                proc.wait()
                out.lingered = lingered_note(exit_grace_s)
                break
            time.sleep(POLL_S)
        _kill_group(proc)  # whatever the child left behind (a daemon holding its stdout)
        proc.wait()
        procs.forget(proc)
        procs.kill_strays()  # and what left its group (setsid, a double fork)
        out.last_exit = proc.returncode
        out.output_tail = tail(log)
        if out.stopped or out.lingered:
            return out
        if why_stopped == TEST_TIMEOUT:
            continue
        if at.running is not None:
            record(at.running, crashed_record(at, proc.returncode, out.output_tail))
            continue
        return out  # the child ended between items: it finished (or failed outside any item)
    out.stopped = f"gave up after {max_attempts} restarts"
    return out


def crashed_record(at: _Attempt, returncode: int, output_tail: str) -> dict[str, Any]:
    """The record of the item that was running when its child died: ``crashed``, with how the
    child ended and the tail of its output."""
    assert at.running is not None
    return {
        "id": at.running,
        "outcome": TEST_CRASHED,
        "seconds": round(time.monotonic() - at.started_at, 3),
        "detail": f"the process {death(returncode)} while this ran: {output_tail[-600:]}",
    }


def timed_out_record(
    item: str, partial: dict[str, Any] | None, seconds: float, limit_s: float
) -> dict[str, Any]:
    """The record of ``item``, killed after ``seconds`` past its ``limit_s``: ``timeout``, unless
    it had already reported a failure (``partial``: its call failed, then a teardown hung),
    which stays its outcome with its text, the hang added to its detail."""
    killed = f"ran past the {limit_s:g} s limit and was killed"
    base = {"id": item, "outcome": TEST_TIMEOUT, "seconds": round(seconds, 3), "detail": killed}
    if not partial:
        return base
    if partial.get("outcome") not in FAILED_TEST_OUTCOMES or partial.get("outcome") == TEST_TIMEOUT:
        # Its call was over and did not fail: what hung came after it (a fixture's teardown).
        base["detail"] = f"its call ended {partial.get('outcome')}, then its teardown {killed}"
        return base
    rec = {**partial, "id": item, "seconds": base["seconds"]}
    rec["detail"] = f"{partial.get('detail') or ''} (then its teardown {killed})".strip()
    return rec


def lingered_note(grace_s: float) -> str:
    """Why a child that said it had finished was stopped (``Supervised.lingered``)."""
    return (
        f"the child finished its items but had not exited {grace_s:g} s later (a test left "
        "threads or processes running that it waits for at exit): stopped, every outcome kept"
    )
