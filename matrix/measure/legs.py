"""GPU legs: a team's suite run natively on a GPU, once per release, each in its own environment
(the gate's ``--device cuda``: ``matrix.gate.legs`` pairs and labels what this records).

A **side** is one release and where it comes from (``Side``): a slim pack unpacked into a
folder put first on ``PYTHONPATH`` (``matrix.backends.gpu_pack``, the lent GPU), the
machine's installed Triton, or a Python whose environment holds the release (a CI runner's
pip-installed wheel). Everything a side runs is a child process in that side's environment,
started by a runner:

- ``SubprocessRunner``: the real one (GPU machine), three kinds of child per side:
  ``matrix.measure.gpu_preflight`` (the release is the one asked for, its launcher builds),
  ``python -m matrix.measure.legs suite`` (the suite, natively: ``matrix.measure.suite`` with
  ``interpret=False``, every launch captured; ``--only FILE``: just those tests, the re-run of
  regressions) and ``matrix.measure.kernel_timing`` (every captured launch replayed and timed);
- ``RecordingRunner``: records the commands it would run and answers from a script (tests,
  and ``--dry-run``: what a GPU machine would run, on a CPU).

A child that dies, hangs past its bound or writes nothing readable is an ``error`` answer
with its output's tail: the side is ``broken``, never a pass.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from matrix import cli
from matrix.core import REPO_ROOT
from matrix.measure import capture, suite

PREFLIGHT_TIMEOUT_S = 240.0  # import, then one vector add (its launcher built by gcc)


@dataclass(frozen=True)
class Side:
    """One release of a pair and the environment it runs in."""

    release: str
    python: str = sys.executable  # the environment's interpreter
    site: str | None = None  # an unpacked slim pack, first on PYTHONPATH
    source: str = "the installed triton"
    role: str = "side"  # baseline or candidate: names its folders (one release may be both)

    def env(self) -> dict[str, str]:
        """The child environment: the pack's folder first, then the matrix's checkout."""
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)
        env["PYTHONUNBUFFERED"] = "1"
        parts = [self.site] if self.site else []
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [*parts, str(REPO_ROOT), env.get("PYTHONPATH", "")])
        )
        return env


class LegRunner(Protocol):
    """What the gate asks of a side (``matrix.gate.legs``); every answer is a JSON object,
    ``{"error": WHY}`` when the child could not give one."""

    def preflight(self, side: Side) -> dict[str, Any]: ...

    def suite(self, side: Side, only: Sequence[str] | None = None) -> dict[str, Any]: ...

    def timings(self, side: Side, launches: Mapping[str, Any]) -> dict[str, Any]: ...


@dataclass
class LegLimits:
    """Bounds of one side's children (the integrator's run on the lent GPU has minutes)."""

    test_timeout_s: float = suite.DEFAULT_TEST_TIMEOUT_S
    suite_timeout_s: float = suite.DEFAULT_SUITE_TIMEOUT_S
    timing_budget_s: float | None = None
    warmup: int = 10
    loops: int = 100
    rounds: int = 5
    min_round_us: float = 1000.0  # matrix.measure.kernel_timing.TimingPlan


def _answer(
    cmd: Sequence[str],
    env: Mapping[str, str],
    out: Path | None,
    timeout_s: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Run one child; its JSON answer (the last stdout line, or the ``out`` file)."""
    try:
        proc = subprocess.run(
            list(cmd),
            env=dict(env),
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as e:
        tail = (e.stdout or "")[-800:] if isinstance(e.stdout, str) else ""
        return {"error": f"{' '.join(cmd[1:4])}: ran past {timeout_s:g} s: {tail}"}
    for line in proc.stdout.splitlines():
        log(line)
    try:
        if out is not None:
            return dict(json.loads(out.read_text(encoding="utf-8")))
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (OSError, ValueError, IndexError, TypeError):
        tail = " ".join((proc.stderr or proc.stdout).split())[-800:]
        return {"error": f"{' '.join(cmd[1:4])} exited {proc.returncode}: {tail}"}


@dataclass
class SubprocessRunner:
    """The real runner (module docstring): children in each side's environment."""

    tests: Path
    workdir: Path
    limits: LegLimits = field(default_factory=LegLimits)
    log: Callable[[str], None] = print
    pytest_args: Sequence[str] = ()

    def _env(self, side: Side) -> dict[str, str]:
        """The side's environment, with one Triton cache for its suite and its timings: a
        replay reuses the compile the suite made (the same compile is timed)."""
        return {**side.env(), "TRITON_CACHE_DIR": str(self._dir(side, "triton-cache"))}

    def _dir(self, side: Side, what: str) -> Path:
        d = self.workdir / f"{side.role}-triton-{side.release}" / what
        d.mkdir(parents=True, exist_ok=True)
        return d

    def preflight(self, side: Side) -> dict[str, Any]:
        cmd = [side.python, "-m", "matrix.measure.gpu_preflight", "--release", side.release]
        if side.site:
            cmd += ["--site", side.site]
        return _answer(cmd, self._env(side), None, PREFLIGHT_TIMEOUT_S, self.log)

    def suite(self, side: Side, only: Sequence[str] | None = None) -> dict[str, Any]:
        d = self._dir(side, "rerun" if only else "suite")
        out = d / "suite.json"
        cmd = [
            side.python,
            "-m",
            "matrix.measure.legs",
            "suite",
            "--tests",
            str(self.tests),
            "--workdir",
            str(d),
            "--out",
            str(out),
            "--test-timeout",
            str(self.limits.test_timeout_s),
            "--suite-timeout",
            str(self.limits.suite_timeout_s),
            "--tests-args",
            json.dumps(list(self.pytest_args)),
        ]
        if only:
            only_file = d / "only.txt"
            only_file.write_text("\n".join(only) + "\n", encoding="utf-8")
            cmd += ["--only", str(only_file)]
        bound = self.limits.suite_timeout_s + 120  # the suite's own bound, then its teardown
        return _answer(cmd, self._env(side), out, bound, self.log)

    def timings(self, side: Side, launches: Mapping[str, Any]) -> dict[str, Any]:
        d = self._dir(side, "timing")
        given, out = d / "launches.json", d / "timings.json"
        given.write_text(json.dumps(launches), encoding="utf-8")
        lim = self.limits
        cmd = [
            side.python,
            "-m",
            "matrix.measure.kernel_timing",
            "--launches",
            str(given),
            "--out",
            str(out),
            "--suite-root",
            str(suite.suite_root(self.tests)),
            "--warmup",
            str(lim.warmup),
            "--loops",
            str(lim.loops),
            "--rounds",
            str(lim.rounds),
            "--min-round-us",
            str(lim.min_round_us),
            "--release",
            side.release,
        ]
        if lim.timing_budget_s is not None:
            cmd += ["--budget-s", str(lim.timing_budget_s)]
        bound = (lim.timing_budget_s or 3600.0) + 300  # the last launch, and compiles
        return _answer(cmd, self._env(side), out, bound, self.log)


@dataclass
class RecordingRunner:
    """Records what it would run (``calls``: (what, release, detail)) and answers from
    ``answers[(what, release)]`` (a list: one answer per call, the last repeated), or an
    ``error`` answer where the script has none."""

    answers: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def _next(self, what: str, side: Side, detail: Any) -> dict[str, Any]:
        self.calls.append((what, side.release, detail))
        script = self.answers.get((what, side.release))
        if not script:
            return {"error": f"dry run: no {what} answer scripted for {side.release}"}
        return script.pop(0) if len(script) > 1 else script[0]

    def preflight(self, side: Side) -> dict[str, Any]:
        return self._next("preflight", side, side.site or side.python)

    def suite(self, side: Side, only: Sequence[str] | None = None) -> dict[str, Any]:
        return self._next("rerun" if only else "suite", side, list(only or ()))

    def timings(self, side: Side, launches: Mapping[str, Any]) -> dict[str, Any]:
        keys = [str(lo.get("key")) for lo in launches.get("launches") or ()]
        return self._next("timings", side, keys)


# --------------------------------------------------------------------- the side's suite child


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m matrix.measure.legs",
        description="one GPU leg's suite, natively (module docstring)",
    )
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("suite", help="run the suite natively; write tests, launches, sources")
    s.add_argument("--tests", type=Path, required=True)
    s.add_argument("--workdir", type=Path, required=True)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--test-timeout", type=float, default=suite.DEFAULT_TEST_TIMEOUT_S)
    s.add_argument("--suite-timeout", type=float, default=suite.DEFAULT_SUITE_TIMEOUT_S)
    s.add_argument("--tests-args", default="[]", help="pytest options, a JSON list")
    s.add_argument("--only", type=Path, help="file of node ids: run only those")
    args = ap.parse_args(argv)
    if args.only is not None:
        os.environ[capture.ONLY_ENV] = str(args.only)
    lines: list[str] = []

    def log(*parts: object) -> None:
        line = " ".join(map(str, parts))
        lines.append(line)
        print(line, flush=True)

    args.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        got = suite.run_suite_recorded(
            args.tests,
            Path(work),
            log,
            args.test_timeout,
            json.loads(args.tests_args),
            suite_timeout_s=args.suite_timeout,
            interpret=False,
        )
    args.out.write_text(
        json.dumps(
            {
                "tests": got.tests,
                "launches": got.launches,
                "kernel_sources": got.kernel_sources,
                "log": lines[-50:],
            }
        ),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.measure.legs"))
