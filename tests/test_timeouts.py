"""A timeout is measured on two clocks: monotonic time and the child's CPU time.

The runner's watch loop is driven here with a scripted timeline (a stand-in child, its event
stream, the monotonic clock and the child's CPU seconds), so each case is deterministic: a
forward jump of the monotonic clock (what a paused VM sees) with no CPU used is not recorded as
``timeout``; a probe that used its CPU up to the limit is; a second limit in a row is, and the
record keeps both windows.
"""

import io
import json
import os
import sys
import types

from matrix.measure import probe_clock, procs, runner

TASK = runner.Task("splitk", "interpret", None)
LIMIT = 300.0


class Timeline:
    """Each read of the event stream is one step: (monotonic seconds to add, child CPU seconds
    to add, event lines to deliver)."""

    def __init__(self, steps):
        self.steps, self.now, self.cpu = list(steps), 1000.0, 5.0

    def read(self) -> bytes:
        if not self.steps:
            return b""
        wall, cpu, events = self.steps.pop(0)
        self.now += wall
        self.cpu += cpu
        return b"".join(json.dumps(e).encode() + b"\n" for e in events)


class StandInChild:
    pid = 4242
    returncode = None

    def poll(self):
        return None

    def wait(self):
        return 0


START = {"event": "start", "index": 0}
RESULT = {"event": "result", "index": 0,
          "result": {"probe": "splitk", "backend": "interpret", "target": None,
                     "status": "pass", "detail": "", "seconds": 2.0, "data": {}}}  # fmt: skip


def _watch(monkeypatch, steps):
    line = Timeline(steps)
    clock = types.SimpleNamespace(monotonic=lambda: line.now, sleep=lambda s: None)
    monkeypatch.setattr(runner, "time", clock)  # the watch loop
    monkeypatch.setattr(probe_clock, "time", clock)  # the probe's limit
    monkeypatch.setattr(procs, "cpu_seconds", lambda pid, with_descendants=True: line.cpu)
    killed = []
    monkeypatch.setattr(procs, "kill_group", lambda proc: killed.append(proc.pid))
    got = []
    done = runner._watch(StandInChild(), [TASK], line, io.StringIO(""), LIMIT, got.append)
    return done, got, killed


def test_a_forward_clock_jump_with_no_cpu_used_is_not_a_timeout(monkeypatch):
    # start; the monotonic clock jumps 3600 s with 0.02 s of CPU; the probe then finishes.
    steps = [(0.0, 0.0, [START]), (3600.0, 0.02, []), (1.0, 0.5, []), (1.0, 0.5, [RESULT])]
    done, got, killed = _watch(monkeypatch, steps)
    assert done == 1 and killed == []
    (result,) = got
    assert result.status == "pass"
    assert result.data["clock"]["windows"] == [{"monotonic_s": 3600.0, "cpu_s": 0.02}]


def test_a_probe_that_used_its_cpu_up_to_the_limit_is_a_timeout_at_once(monkeypatch):
    steps = [(0.0, 0.0, [START]), (301.0, 290.0, [])]
    done, got, killed = _watch(monkeypatch, steps)
    assert done == 1 and killed == [StandInChild.pid]
    (result,) = got
    assert result.status == "timeout"
    assert result.data["clock"]["windows"] == [{"monotonic_s": 301.0, "cpu_s": 290.0}]
    assert "301 s monotonic, 290 s CPU" in result.detail


def test_a_second_limit_in_a_row_is_a_timeout_and_the_record_says_both(monkeypatch):
    # A blocked child: no CPU in either window. One more limit, then recorded with both.
    steps = [(0.0, 0.0, [START]), (400.0, 0.0, []), (200.0, 0.0, []), (150.0, 0.01, [])]
    done, got, killed = _watch(monkeypatch, steps)
    assert done == 1 and killed == [StandInChild.pid]
    (result,) = got
    assert result.status == "timeout"
    assert result.data["clock"]["windows"] == [
        {"monotonic_s": 400.0, "cpu_s": 0.0}, {"monotonic_s": 350.0, "cpu_s": 0.01}]  # fmt: skip
    assert "400 s monotonic, 0 s CPU; 350 s monotonic, 0.01 s CPU" in result.detail


def test_cpu_seconds_counts_this_process_and_grows_with_work():
    me = os.getpid()
    before = procs.cpu_seconds(me)
    x = 0
    for i in range(3_000_000):
        x += i * i
    assert procs.cpu_seconds(me) > before
    assert procs.cpu_seconds(2**22 + 12345) == 0.0  # no such process: nothing used
    assert sys.platform.startswith("linux")  # /proc is where it reads; the matrix runs on Linux


def test_fingerprint_part_costs_are_read_from_the_fp_rows() -> None:
    """`python -m matrix.timings RAW --parts`: each part's seconds per column over the releases
    (a release's interpreter cells averaged first), from what the fp rows recorded."""
    from matrix.report.timings import parts_table
    from matrix.results import Result, Run

    def run(release: str, numpy: str, backend: str, target: str | None,
            spent: dict[str, float]) -> Run:  # fmt: skip
        row = Result("fp", backend, target, "observed", data={"part_seconds": spent})
        env = {"triton": release, "numpy": numpy}
        return Run(f"triton-{release}-numpy-{numpy}", env, results=[row])

    runs = [
        run("3.9.0", "1.26.4", "interpret", None, {"types": 2.0, "values": 4.0}),
        run("3.9.0", "2.4.6", "interpret", None, {"types": 4.0, "values": 6.0}),
        run("3.0.0", "2.4.6", "interpret", None, {"types": 1.0, "values": 1.0}),
        run("3.10.0", "2.4.6", "interpret", None, {"types": 8.0, "values": 1.0}),
        run("3.9.0", "2.4.6", "aot", "cuda:90", {"types": 9.0, "env_values": 1.5}),
    ]
    lines = parts_table(runs).splitlines()
    assert lines[0] == "| fingerprint part | column | releases | min s | median s | max s |"
    assert "| types | interpret | 3.0.0-3.10.0 | 1.0 | 3.0 | 8.0 |" in lines
    assert "| values | interpret | 3.0.0-3.10.0 | 1.0 | 1.0 | 5.0 |" in lines
    assert "| env_values | aot:cuda:90 | 3.9.0-3.9.0 | 1.5 | 1.5 | 1.5 |" in lines
    assert parts_table([]).startswith("no fp row")
