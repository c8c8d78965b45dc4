"""The gate's GPU legs (``--device cuda``): a team's suite run natively on both releases, as
control (baseline) and canary (candidate), each test labelled, each captured kernel timed.

    python -m matrix gate --baseline 3.6.0 --candidate 3.5.1 --tests DIR --device cuda \\
        --candidate-pack .gpu/pack/triton-3.5.1-slim-sm90.tar.xz --out /tmp/legs
    nox -s gate -- --tests DIR --device cuda      # the same from the nox session

Per side (``matrix.measure.legs``): the release is proved (``gpu_preflight``), the suite runs
natively with every launch captured, and the union of both sides' launches is replayed and
timed on each side (``matrix.measure.kernel_timing``). Tests labelled ``regressed`` are run
again on both sides; one that does not regress again is ``spurious``.

Labels (crater's), per test and pair, in ``LABELS``. A ``regressed`` test blocks (exit 1);
``spurious`` and ``broken`` are named. A side that could not run at all (its release not
proved, its suite not started), or a pair with no test comparable, is undecidable (exit 2).

A kernel slowdown blocks (exit 1) only when the candidate's median is slower than the
baseline's by more than ``--slowdown-min`` (default 10%), more than the run-to-run noise
measured on both sides (``noise_of`` of each side's rounds, added), and by more than
``--slowdown-floor-us`` microseconds (default 0.1): ``slowdown_verdict``, ``SlowdownRule``.
Each is tied to its kernel, its shapes and the test that launched it, with the registers,
spills and shared memory of both compiles where the release exposes them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.core import (
    FAILED_TEST_OUTCOMES,
    TEST_PASSED,
    TEST_SKIPPED,
    TEST_XFAILED,
    TEST_XPASSED,
    Release,
)
from matrix.exitcodes import ExitCode
from matrix.gate.leg_timings import (
    DEFAULT_SLOWDOWN_FLOOR_US,
    DEFAULT_SLOWDOWN_MIN,
    NOT_TIMED,
    SLOWER,
    KernelTiming,
    SlowdownRule,
    compare_timings,
    confirm_slowdowns,
    pct,
)
from matrix.gate.leg_timings import FASTER as FASTER  # (``as``: their home before)
from matrix.gate.leg_timings import WITHIN_NOISE as WITHIN_NOISE
from matrix.gate.leg_timings import slowdown_verdict as slowdown_verdict
from matrix.gate.user_tests import collection_errors, module_of
from matrix.measure import suite as suite_mod
from matrix.measure.legs import LegLimits, LegRunner, RecordingRunner, Side, SubprocessRunner

EXIT_SAFE, EXIT_UNSAFE, EXIT_UNDECIDABLE = ExitCode.OK, ExitCode.FAILED, ExitCode.UNDECIDABLE


# Crater's outcome labels, per test and pair: what each means.
LABELS = {
    "regressed": "passed on the baseline, fails on the candidate, again on a re-run of both",
    "fixed": "failed on the baseline, passes on the candidate",
    "same-pass": "passes on both",
    "same-fail": "fails on both",
    "spurious": "regressed once, but not on a re-run of both sides (flaky): named, not blocking",
    "broken": "could not run on a side (not collected there, not run, or the side broken)",
    "skipped": "skipped on a side: nothing to compare",
}
REGRESSED, FIXED, SAME_PASS, SAME_FAIL, SPURIOUS, BROKEN, SKIPPED = LABELS
# A side's outcome, as the labels read it (``side_state``).
_PASS = {TEST_PASSED, TEST_XFAILED, TEST_XPASSED}
PASSES, FAILS, SKIPS, ABSENT = "passes", "fails", "skips", "absent"


def side_state(record: Mapping[str, Any] | None) -> str:
    """``passes``, ``fails``, ``skips`` or ``absent`` (no record, or not run)."""
    if record is None:
        return ABSENT
    outcome = record.get("outcome")
    if outcome == TEST_SKIPPED:
        detail = str(record.get("detail", ""))
        return ABSENT if detail.startswith(suite_mod.NOT_RUN) else SKIPS
    if outcome in _PASS:
        return PASSES
    if outcome in FAILED_TEST_OUTCOMES:
        return FAILS
    return ABSENT  # an outcome this gate does not know: not an observation


# (baseline state, candidate state) -> label; absent and skip are handled first.
_PAIR = {
    (PASSES, PASSES): SAME_PASS,
    (FAILS, FAILS): SAME_FAIL,
    (FAILS, PASSES): FIXED,
    (PASSES, FAILS): REGRESSED,
}


@dataclass
class TestPair:
    """One test's label and the evidence for it."""

    id: str
    label: str
    baseline: str  # outcome words, or "absent"
    candidate: str
    failure: str = ""  # the failing side's text (detail and last lines)
    rerun: str = ""  # what the re-run of a regression gave

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v != "" or k in ("id", "label")}


def _text(rec: Mapping[str, Any] | None) -> str:
    if not rec:
        return ""
    parts = [str(rec.get("detail") or ""), str(rec.get("failure") or "")]
    return "\n".join(p for p in parts if p).strip()[-2000:]


def _with_modules(records: Mapping[str, Mapping[str, Any]], ids: Sequence[str]) -> dict:
    """``records``, plus, for each test of a module that could not be collected on this side,
    that module's error record (a baseline test of such a module has regressed, not vanished:
    ``matrix.gate.user_tests.collection_errors``)."""
    errors = collection_errors(records)
    out = dict(records)
    for tid in ids:
        if tid not in out and module_of(tid) in errors:
            out[tid] = errors[module_of(tid)]
    return out


def _test_ids(records: Mapping[str, Any]) -> list[str]:
    return [t for t in records if "::" in t]


def label_tests(
    base: Sequence[Mapping[str, Any]], cand: Sequence[Mapping[str, Any]]
) -> list[TestPair]:
    """Every test of either side, labelled (``LABELS``); regressions not yet re-run."""
    b = {str(t.get("id")): t for t in base}
    c = {str(t.get("id")): t for t in cand}
    ids = list(dict.fromkeys([*_test_ids(b), *_test_ids(c)]))
    b, c = _with_modules(b, ids), _with_modules(c, ids)
    pairs = []
    for tid in ids:
        rb, rc = b.get(tid), c.get(tid)
        sb, sc = side_state(rb), side_state(rc)
        words = (
            str(rb.get("outcome")) if rb else ABSENT,
            str(rc.get("outcome")) if rc else ABSENT,
        )
        # A baseline that could not collect the test's module cannot be the control.
        base_uncollected = rb is not None and "::" not in str(rb.get("id"))
        if ABSENT in (sb, sc) or base_uncollected:
            which, rec = ("baseline", rb) if sb == ABSENT or base_uncollected else ("candidate", rc)
            why = _text(rec) or "no record (not collected, or not run)"
            pairs.append(TestPair(tid, BROKEN, *words, failure=f"{which}: {why}"))
        elif SKIPS in (sb, sc):
            pairs.append(TestPair(tid, SKIPPED, *words))
        else:
            label = _PAIR[(sb, sc)]
            failing = rc if sc == FAILS else rb if sb == FAILS else None
            pairs.append(TestPair(tid, label, *words, failure=_text(failing)))
    return pairs


def confirm_regressions(
    pairs: list[TestPair],
    rerun_base: Sequence[Mapping[str, Any]],
    rerun_cand: Sequence[Mapping[str, Any]],
) -> None:
    """Relabel each ``regressed`` test from its re-run on both sides: it stays ``regressed``
    only if it regresses again; otherwise it is ``spurious`` (a re-run that did not run is
    not a confirmation either: ``spurious``, named, with why)."""
    b = {str(t.get("id")): t for t in rerun_base}
    c = {str(t.get("id")): t for t in rerun_cand}
    for p in pairs:
        if p.label != REGRESSED:
            continue
        sb, sc = side_state(b.get(p.id)), side_state(c.get(p.id))
        p.rerun = f"re-run: baseline {sb}, candidate {sc}"
        if (sb, sc) != (PASSES, FAILS):
            p.label = SPURIOUS


# --------------------------------------------------------------------------------- the legs

DEFAULT_RULE = SlowdownRule()  # frozen: one shared default is safe


@dataclass
class LegsReport:
    baseline: str
    candidate: str
    sides: dict[str, dict[str, Any]] = field(default_factory=dict)  # role -> how it ran
    tests: list[TestPair] = field(default_factory=list)
    timings: list[KernelTiming] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what makes it undecidable
    # The step under way; "" once every step ran. A report saved before then (``save``) is
    # undecidable: its regressions are not yet re-run, its kernels not yet timed.
    running: str = "starting"

    @property
    def exit_code(self) -> int:
        if self.running:
            return EXIT_UNDECIDABLE
        if any(p.label == REGRESSED for p in self.tests):
            return EXIT_UNSAFE
        if any(t.verdict == SLOWER for t in self.timings):
            return EXIT_UNSAFE
        if self.problems:
            return EXIT_UNDECIDABLE
        return EXIT_SAFE

    def as_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "device": "cuda",
            "exit_code": self.exit_code,
            "incomplete": self.running,
            "sides": self.sides,
            "problems": self.problems,
            "labels": {k: sum(p.label == k for p in self.tests) for k in LABELS},
            "tests": [p.as_json() for p in self.tests],
            "timings": [t.as_json() for t in self.timings],
        }


def _union_launches(*docs: Mapping[str, Any]) -> dict[str, Any]:
    launches: dict[str, Any] = {}
    sources: dict[str, Any] = {}
    for doc in docs:
        for launch in doc.get("launches") or ():
            launches.setdefault(str(launch.get("key")), launch)
        sources.update(doc.get("kernel_sources") or {})
    return {"launches": list(launches.values()), "kernel_sources": sources}


def _suite_broken(doc: Mapping[str, Any]) -> str:
    """Why a side's suite run gave nothing to compare ("" when it did)."""
    if "error" in doc:
        return str(doc["error"])
    tests = doc.get("tests") or []
    if not any("::" in str(t.get("id")) for t in tests):
        return "; ".join(str(t.get("detail")) for t in tests)[:800] or "no test recorded"
    return ""


def run_legs(
    base: Side,
    cand: Side,
    runner: LegRunner,
    rule: SlowdownRule = DEFAULT_RULE,
    log: Callable[[str], None] = print,
    timings: bool = True,
    save: Callable[[LegsReport], Any] = lambda r: None,
) -> LegsReport:
    """Both legs, their labels and timings (module docstring). ``save`` is given the report
    after each step (a run cut short leaves what it had, marked incomplete)."""
    report = LegsReport(base.release, cand.release)
    try:
        _run_steps(report, base, cand, runner, rule, log, timings, save)
    finally:
        save(report)
    return report


def _run_steps(
    report: LegsReport,
    base: Side,
    cand: Side,
    runner: LegRunner,
    rule: SlowdownRule,
    log: Callable[[str], None],
    timings: bool,
    save: Callable[[LegsReport], Any],
) -> None:
    def step(what: str) -> None:
        report.running = what
        save(report)

    runs: dict[str, dict[str, Any]] = {}
    for role, side in (("baseline", base), ("candidate", cand)):
        step(f"proving the {role}, triton {side.release}")
        pre = runner.preflight(side)
        report.sides[role] = {"release": side.release, "source": side.source, "preflight": pre}
        if not pre.get("ok"):
            why = pre.get("error") or f"failed at {pre.get('stage')}"
            report.problems.append(f"triton {side.release} ({side.source}) not proved: {why}")
            continue
        log(f"[legs] triton {side.release}: running the suite natively ({side.source})")
        step(f"the suite on the {role}, triton {side.release}")
        runs[role] = runner.suite(side)
        broken = _suite_broken(runs[role])
        if broken:
            report.problems.append(f"the suite could not run on triton {side.release}: {broken}")
    if report.problems:
        report.running = ""
        return
    b, c = runs["baseline"], runs["candidate"]
    report.tests = label_tests(b.get("tests") or [], c.get("tests") or [])
    regressed = [p.id for p in report.tests if p.label == REGRESSED]
    if regressed:
        log(f"[legs] {len(regressed)} regression(s): running them again on both sides")
        step(f"re-running {len(regressed)} regression(s) on both sides")
        rb, rc = runner.suite(base, regressed), runner.suite(cand, regressed)
        confirm_regressions(report.tests, rb.get("tests") or [], rc.get("tests") or [])
    if not any(p.label not in (BROKEN, SKIPPED) for p in report.tests):
        report.problems.append("no test ran on both sides: nothing to compare")
    if timings:
        launches = _union_launches(b, c)
        log(f"[legs] timing {len(launches['launches'])} captured launch(es) on each side")
        if launches["launches"]:
            step(f"timing {len(launches['launches'])} launch(es) on both sides")
            tb, tc = runner.timings(base, launches), runner.timings(cand, launches)
            for side, doc in ((base, tb), (cand, tc)):
                if "error" in doc:
                    report.problems.append(f"timing on triton {side.release}: {doc['error']}")
            report.timings = compare_timings(tb.get("timings") or [], tc.get("timings") or [], rule)
            slower = {t.key for t in report.timings if t.verdict == SLOWER}
            if slower:
                # The two sides were timed in two processes, one after the other: a clock or
                # neighbour change between them is not in either side's rounds. A slowdown
                # counts only if a second timing of both sides shows it again.
                step(f"timing the {len(slower)} slower launch(es) again on both sides")
                again = {
                    **launches,
                    "launches": [lo for lo in launches["launches"] if str(lo.get("key")) in slower],
                }
                rb, rc = runner.timings(base, again), runner.timings(cand, again)
                confirm_slowdowns(
                    report.timings,
                    compare_timings(rb.get("timings") or [], rc.get("timings") or [], rule),
                )
    report.running = ""


# ------------------------------------------------------------------------------ rendering


def _res(pair: tuple[Any, Any]) -> str:
    b, c = pair
    return "-" if b is None and c is None else f"{b} -> {c}" if b != c else f"{b}"


def render_markdown(report: LegsReport) -> str:
    verdict = {0: "SAFE", 1: "UNSAFE", 2: "UNDECIDABLE"}[report.exit_code]
    if report.running:
        verdict += f" (incomplete: stopped during {report.running})"
    lines = [
        f"# GPU legs: triton {report.baseline} -> {report.candidate}: {verdict} "
        f"(exit {report.exit_code})",
        "",
    ]
    for role, info in report.sides.items():
        pre = info.get("preflight") or {}
        lines.append(
            f"- {role}: triton {info.get('release')}, {info.get('source')}; imported from "
            f"{pre.get('triton_file', '?')}; torch {pre.get('torch', '?')}"
        )
    for problem in report.problems:
        lines.append(f"- **undecidable**: {problem}")
    counts = {k: sum(p.label == k for p in report.tests) for k in LABELS}
    lines += ["", "## Tests", "", ", ".join(f"{k}: {n}" for k, n in counts.items()), ""]
    named = [p for p in report.tests if p.label in (REGRESSED, SPURIOUS, BROKEN, FIXED)]
    if named:
        lines += ["| test | label | baseline | candidate | evidence |", "|---|---|---|---|---|"]
        for p in named:
            ev = " ".join(f"{p.failure} {p.rerun}".split())[:400].replace("|", "\\|")
            lines.append(f"| `{p.id}` | {p.label} | {p.baseline} | {p.candidate} | {ev} |")
    lines += ["", "## Kernels timed on both sides", ""]
    if not report.timings:
        lines.append("no captured launch was timed")
    else:
        lines += [
            "| kernel | test | shapes | baseline us (noise) | candidate us (noise) | change "
            "| verdict | registers | spills | shared |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for t in sorted(report.timings, key=lambda t: -(t.change or 0)):
            b = "-" if t.base_us is None else f"{t.base_us:.2f} ({t.base_noise or 0:.1%})"
            c = "-" if t.cand_us is None else f"{t.cand_us:.2f} ({t.cand_noise or 0:.1%})"
            v = t.verdict if t.verdict != NOT_TIMED else f"not timed: {t.detail[:200]}"
            if "timed again" in t.detail:
                v += " (" + t.detail.split("; timed again: ", 1)[1] + ")"
            r = t.resources
            lines.append(
                f"| `{t.kernel}` | `{t.test}` | {json.dumps(t.shapes)} | {b} | {c} | "
                f"{pct(t.change)} | {v} | {_res(r.get('registers', (None, None)))} | "
                f"{_res(r.get('spills', (None, None)))} | "
                f"{_res(r.get('shared', (None, None)))} |"
            )
    return "\n".join(lines) + "\n"


def write_outputs(report: LegsReport, out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    md = render_markdown(report)
    (out / "gate.md").write_text(md, encoding="utf-8")
    (out / "gate.json").write_text(json.dumps(report.as_json(), indent=1), encoding="utf-8")
    return md


# ------------------------------------------------------------------------------------ CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m matrix gate --device cuda",
        allow_abbrev=False,
        description=__doc__.split("\n")[0],
    )
    p.add_argument("--device", choices=["cuda"], required=True)
    p.add_argument("--baseline", help="release to upgrade from (default: the pinned release)")
    p.add_argument("--pinned", default=None, help="file with the pinned release")
    p.add_argument("--candidate", required=True)
    p.add_argument("--tests", type=Path, required=True, help="the team's suite (a folder)")
    p.add_argument("--tests-args", default="", help="pytest options for the suite (shell words)")
    p.add_argument("--out", type=Path, required=True, help="folder for gate.md and gate.json")
    for side in ("baseline", "candidate"):
        p.add_argument(f"--{side}-pack", type=Path, help=f"slim pack of the {side} release")
        p.add_argument(f"--{side}-python", help=f"a Python whose environment has the {side}")
    p.add_argument(
        "--slowdown-min",
        type=float,
        default=DEFAULT_SLOWDOWN_MIN,
        help="a kernel slowdown below this never blocks (default 0.10)",
    )
    p.add_argument(
        "--slowdown-floor-us",
        type=float,
        default=DEFAULT_SLOWDOWN_FLOOR_US,
        help="nor one whose medians differ by this many microseconds or less (default 0.1)",
    )
    p.add_argument(
        "--min-round-us",
        type=float,
        default=LegLimits.min_round_us,
        help="a timed round lasts at least this long: more loops for a faster kernel",
    )
    p.add_argument("--test-timeout", type=float, default=suite_mod.DEFAULT_TEST_TIMEOUT_S)
    p.add_argument("--suite-timeout", type=float, default=suite_mod.DEFAULT_SUITE_TIMEOUT_S)
    p.add_argument("--timing-budget", type=float, default=None, help="seconds per side")
    p.add_argument("--loops", type=int, default=100)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--no-timings", action="store_true")
    p.add_argument(
        "--envs",
        type=Path,
        default=Path(".nox") / "gpu-legs",
        help="where a side's environment is built when the machine's triton is "
        "another release and no pack or python is given",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what each side would run (no GPU needed); exit 2",
    )
    return p


class SideError(RuntimeError):
    """A side that cannot be set up (the message names the option or the release)."""


def _side(args: argparse.Namespace, which: str, tmp: Path) -> Side:
    release = str(Release.parse(getattr(args, which), f"--{which}"))
    pack, python = getattr(args, f"{which}_pack"), getattr(args, f"{which}_python")
    if pack is not None and python is not None:
        raise SideError(f"--{which}-pack and --{which}-python: give one, not both")
    if pack is not None:
        if args.dry_run:
            return Side(
                release, site=f"<unpacked {pack}>", source=f"slim pack {pack.name}", role=which
            )
        from matrix.measure.gpu_run import unpack

        dest = tmp / f"pack-{release}"
        dest.mkdir(parents=True, exist_ok=True)
        site, _ = unpack(pack, dest)
        return Side(release, site=str(site), source=f"slim pack {pack.name}", role=which)
    if python is not None:
        return Side(release, python=python, source=f"the environment of {python}", role=which)
    if installed_triton() == release or args.dry_run:
        return Side(release, role=which)
    return built_side(release, args.envs, which)


def installed_triton() -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def built_side(release: str, envs: Path, role: str) -> Side:
    """A CI runner's side: an environment with the release's wheel from the package index
    (``matrix.measure.envs``, as the matrix's cells are built), the matrix's torch and numpy."""
    from matrix.measure.cells import load_matrix
    from matrix.measure.envs import EnvSpec, ensure_env

    config = load_matrix()
    spec = EnvSpec(
        config.python, release, config.numpy[-1], config.torch, (*EnvSpec.extras, "pytest")
    )
    install = ensure_env(spec, envs / f"triton-{release}")
    if install.python is None:
        raise SideError(f"no environment for triton {release} in {envs}: {install.detail}")
    return Side(release, python=str(install.python), source=f"pip wheel in {envs}", role=role)


def main(argv: Sequence[str] | None = None) -> int:
    import shlex

    args = _parser().parse_args(argv)
    if args.baseline is None:
        from matrix.gate.config import PINNED_PATH, pinned_release

        args.baseline = str(pinned_release(args.pinned or PINNED_PATH))
    if not args.tests.is_dir():
        print(f"matrix.gate: --tests {args.tests}: not a folder (exit 2)", file=sys.stderr)
        return EXIT_UNDECIDABLE
    for flag in ("slowdown_min", "slowdown_floor_us", "min_round_us"):
        value = getattr(args, flag)
        if not value >= 0:  # NaN too
            print(f"matrix.gate: --{flag.replace('_', '-')}: expected a number >= 0, got "
                  f"{value} (exit 2)", file=sys.stderr)  # fmt: skip
            return EXIT_UNDECIDABLE
    tmp = Path(tempfile.mkdtemp(prefix="gpu-legs-"))
    try:
        try:
            base, cand = _side(args, "baseline", tmp), _side(args, "candidate", tmp)
        except (SideError, RuntimeError, OSError, subprocess.CalledProcessError) as e:
            print(f"matrix.gate --device cuda: {e} (exit 2: undecidable)", file=sys.stderr)
            return EXIT_UNDECIDABLE
        limits = LegLimits(
            args.test_timeout,
            args.suite_timeout,
            args.timing_budget,
            args.warmup,
            args.loops,
            args.rounds,
            args.min_round_us,
        )
        runner: LegRunner
        if args.dry_run:
            runner = RecordingRunner()
        else:
            runner = SubprocessRunner(
                args.tests.resolve(), tmp / "work", limits, pytest_args=shlex.split(args.tests_args)
            )
        report = run_legs(
            base,
            cand,
            runner,
            SlowdownRule(args.slowdown_min, args.slowdown_floor_us),
            timings=not args.no_timings,
            save=lambda r: write_outputs(r, args.out),
        )
        if isinstance(runner, RecordingRunner):
            for what, release, detail in runner.calls:
                print(f"dry run: would run {what} on triton {release}: {detail}")
        md = write_outputs(report, args.out)
        print(md, flush=True)
        return report.exit_code
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
