"""A probe's time limit in its child, judged on two clocks, so that a clock jump (a paused VM)
or a child that sat blocked is not taken for a probe that hung."""

from __future__ import annotations

import time
from dataclasses import dataclass

from matrix.measure import procs
from matrix.results import Result

# A "timeout" whose child used less CPU than this share of the limit is doubted: the monotonic
# clock jumped (a paused VM) or the child sat blocked. It gets one more full limit first.
DOUBTED_CPU_SHARE = 0.1


@dataclass
class ProbeClock:
    """One probe's time in the child, on two clocks: monotonic seconds and the CPU seconds the
    child (and what it started) used. ``past_limit`` is True only for a timeout both clocks
    support, or for the second limit in a row; every window is kept for the record."""

    pid: int
    wall0: float
    cpu0: float
    windows: list[dict[str, float]]

    @classmethod
    def start(cls, pid: int) -> ProbeClock:
        # The child alone: what it started for earlier probes has ended, and reading the whole
        # process tree here would slow the loop that follows its events.
        return cls(pid, time.monotonic(), procs.cpu_seconds(pid, with_descendants=False), [])

    def past_limit(self, timeout_s: float) -> bool:
        wall = time.monotonic() - self.wall0
        if wall <= timeout_s:
            return False
        cpu = procs.cpu_seconds(self.pid) - self.cpu0
        self.windows.append({"monotonic_s": round(wall, 3), "cpu_s": round(cpu, 3)})
        if cpu >= DOUBTED_CPU_SHARE * timeout_s or len(self.windows) > 1:
            return True
        self.wall0, self.cpu0 = time.monotonic(), procs.cpu_seconds(self.pid)  # once more
        return False

    def annotate(self, result: Result) -> Result:
        """``result`` with ``data.clock`` when a limit was reached: each window's monotonic and
        CPU seconds, so a doubted timeout is on record whichever way it ended."""
        if self.windows:
            result.data["clock"] = {"windows": list(self.windows),
                                    "doubted_cpu_share": DOUBTED_CPU_SHARE}  # fmt: skip
        return result

    def __str__(self) -> str:
        return "; ".join(f"{w['monotonic_s']:g} s monotonic, {w['cpu_s']:g} s CPU"
                         for w in self.windows)  # fmt: skip
