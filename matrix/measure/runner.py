"""Run every probe on every applicable backend for the installed Triton; write one raw file.

    python -m matrix run --out reports/raw/triton-3.9.0-numpy-2.4.6.json [--backends interpret,aot]

The runner itself never imports Triton: probes run in child processes (``matrix.measure.child``),
one per backend and environment, each with a fresh ``TRITON_CACHE_DIR``. It imports torch once,
and forks its CPU children from itself (``matrix.measure.preload``), rather than have each
import it again.
A child that crashes (even by a signal) or hangs past ``--timeout`` costs the probe it was
running, which is recorded as ``crashed`` or ``timeout`` with the evidence; a new child picks up
the remaining probes. Results go to ``<out>.partial`` (``results.partial_path``), rewritten
atomically after every result; only the complete cell is renamed onto ``--out``. A kill leaves
a valid partial file that ``--resume`` (or the matrix) finishes later, and a redo that dies
(disk full, a kill) never replaces a complete raw file with less.

Children are started through ``matrix.measure.procs``: each in its own process group, killed
with its group on a timeout, and killed by the kernel if this runner dies. The events and log
files are read through handles opened before the child starts, so a probe that deletes the
runner's work folder costs nothing that was already observed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from matrix import cli
from matrix.backends import compile_cache
from matrix.backends.kernels import TARGETS as KERNEL_TARGETS
from matrix.core import BACKENDS, CRASHED, REPO_ROOT, TIMEOUT, Release
from matrix.exitcodes import ExitCode
from matrix.measure import preload, probe_hashes, procs, suite, test_device, triton_identity
from matrix.measure.cell_env import collect_env, default_run_id, detect_gpu, gpu_target_of
from matrix.measure.child import exit_now, probe_package
from matrix.measure.kernel_compiles import compile_captured, run_coverage
from matrix.measure.probe_clock import ProbeClock
from matrix.measure.supervise import death as _death
from matrix.measure.supervise import tail as _tail
from matrix.measure.tasks import Task, plan_tasks, registry
from matrix.probes.support.probe_limit import DEFAULT_LIMIT_S, limit_env
from matrix.results import (
    DETAIL_CAP,
    Result,
    Run,
    SchemaError,
    cap_text,
    partial_path,
    read_raw,
    write_raw,
)

DEFAULT_TIMEOUT_S = DEFAULT_LIMIT_S
# What --tests adds to a run (matrix.measure.suite, matrix.backends.kernels say the shapes).
SUITE_KEYS = ("suite", "tests", "launches", "kernel_sources", "kernel_compiles", "kernel_coverage")
POLL_S = 0.05
# With --phases, each step the runner takes is a line on stderr with this prefix: the matrix
# sends stderr to a log file, and if the runner dies, its last phase line says where.
PHASE = "[phase] "
# A phase line that started a child ends with its events file: what the child said last there
# (``crash_note``) is newer than what this process had read when it died.
EVENTS = "events: "
_say_phases = False
# Exit code and line prefix of a cell refused because a probe process imported another Triton
# than the one the cell is labelled with (``TritonCheck``); the matrix records the line as the
# cell's install failure.
EXIT_WRONG_TRITON = ExitCode.WRONG_TRITON
REFUSED = "matrix.measure.runner: refused: "


# The raw file's key for the Triton the cell's probe processes imported (``TritonCheck.record``).
TRITON_KEY = "triton_imported"

IDENTITY_QUERY = (
    "import json; from matrix.measure import triton_identity; "
    "print(json.dumps(triton_identity.imported().to_json()))"
)


class WrongTriton(Exception):
    """A probe process ran on another Triton than the cell's; the message names both."""


class TritonCheck:
    """Holds every probe process of a cell to the cell's Triton: each says which one it
    imported (a ``triton`` event, ``matrix.measure.child``) before its first result."""

    def __init__(self, release: str, dist: triton_identity.Distribution | None) -> None:
        self.release, self.dist = release, dist
        self.proven: triton_identity.Identity | None = None

    def __call__(self, identity: triton_identity.Identity) -> None:
        why = triton_identity.mismatch(identity, self.release, self.dist)
        if why is not None:
            raise WrongTriton(f"a probe process {why}")
        if identity.imported or self.proven is None:
            self.proven = identity

    def record(self) -> dict[str, Any]:
        """What the raw file keeps: the Triton the probes imported, where it was."""
        seen = self.proven or triton_identity.Identity(None, None, False)
        return {"distribution": self.dist.version if self.dist else None, **seen.portable()}


def phase(text: str) -> None:
    """Say on stderr what the runner does next, with --phases (``crash_note`` reads the last)."""
    if _say_phases:
        print(PHASE + text, file=sys.stderr, flush=True)


def runner_log_path(logs_dir: Path, cell_id: str) -> Path:
    """Where the matrix keeps the output of a runner that did not write its cell (``keep_log``;
    the matrix gives its environments folder: the raw folder holds raw files only)."""
    return logs_dir / f"{cell_id}.runner.log"


def keep_log(logs_dir: Path, cell_id: str, output: str) -> Path | None:
    """Write a failed runner's ``output`` to ``runner_log_path``; None where it cannot be
    written (a full disk), so that the note says so instead of naming a file that is not there."""
    log = runner_log_path(logs_dir, cell_id)
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(output, encoding="utf-8", errors="backslashreplace")
    except OSError:
        return None
    return log


def _last_started(events: Path) -> str | None:
    """The task a child started last and did not finish, from its events and tasks files
    (left behind in the runner's work folder when it was killed); None if unknown."""
    try:
        tasks = json.loads(events.with_suffix(".json").read_text(encoding="utf-8"))
        lines = events.read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, ValueError):
        return None
    last: int | None = None
    for line in lines:
        with contextlib.suppress(ValueError, TypeError, KeyError):
            event = json.loads(line)
            if event["event"] == "start":
                last = int(event["index"])
            elif event["event"] == "result" and int(event["index"]) == last:
                last = None
    if last is None or not 0 <= last < len(tasks):
        return None
    t = tasks[last]
    return str(Task(str(t.get("probe")), str(t.get("backend")), t.get("target")))


def crash_note(cell_id: str, returncode: int, output: str, log: Path | None) -> str:
    """The one note for a runner that did not write its cell: which cell, in which phase, how it
    ended (exit code or signal), and where its ``output`` was kept, with its last lines."""
    lines = output.splitlines()
    phases = [ln[len(PHASE) :] for ln in lines if ln.startswith(PHASE)]
    where = phases[-1] if phases else "starting up (before its first phase)"
    events = [p.rpartition(EVENTS)[2] for p in phases if EVENTS in p]
    started = _last_started(Path(events[-1])) if events else None
    if started is not None:
        where = f"probe {started} (the child's last event: its start)"
    how = _death(returncode) if returncode else "exited with code 0 but wrote no raw file"
    other = " | ".join(ln for ln in lines if not ln.startswith(PHASE))[-400:]
    note = f"runner of cell {cell_id} {how} during: {where}"
    note += f"; log: {log}" if log is not None else "; its log could not be written"
    return f"[{note}{': ' + other if other else ''}]"


def _stop(signum: int, frame: Any) -> None:
    # Children run in their own process groups and would not see a Ctrl-C: ``main`` ends them
    # once this has unwound (here, the signal may have come while procs held its lock).
    # SIGTERM is also what the runner gets when the matrix dies (procs.start's death_signal).
    procs.die_soon()
    raise KeyboardInterrupt(f"stopped by signal {signal.Signals(signum).name}")


def child_environment(backend: str, extra: Iterable[tuple[str, str]], cache_dir: str) -> dict:
    """The environment a child starts with: the backend is fixed here, before Triton loads."""
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if backend == "interpret":
        env["TRITON_INTERPRET"] = "1"
    env["TRITON_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    # One OpenMP thread: probes fork (fp traces each part in a forked child), and a child forked
    # after torch's OpenMP pool started waits forever at the pool's barrier (seen on 3.3.1: the fp
    # child stuck in gomp_team_barrier_wait_end inside a tensor index). The tensors are small.
    env["OMP_NUM_THREADS"] = preload.CHILD_OMP_THREADS
    # Bytecode is kept, in the cell's own environment folder (procs.bytecode_kept says why).
    for name, value in procs.bytecode_kept().items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    env.update(dict(extra))
    return env


# The order a cell's children run in: aot before the interpreter, because an interpreter process
# cannot compile, and what an aot child compiles for the run cache (fp's values semantics,
# ``matrix.probes.fp.values_semantics``) the interpreter cells of the release then read instead
# of spawning a fresh interpreter to compile it. Within a backend, the catalog's order.
BACKEND_ORDER = ("aot", "interpret", "gpu")


def _group_order(item: tuple[tuple, list[Task]]) -> int:
    backend = item[0][0]
    return BACKEND_ORDER.index(backend) if backend in BACKEND_ORDER else len(BACKEND_ORDER)


def run_group(
    tasks: Sequence[Task],
    backend: str,
    extra_env: tuple[tuple[str, str], ...],
    timeout_s: float,
    on_result: Callable[[Result], None],
    workdir: Path,
    compile_cache: Path | None = None,
    fork: bool = False,
    check_triton: TritonCheck | None = None,
) -> None:
    """Run ``tasks`` (one backend and environment) in children until each has a result;
    ``compile_cache``: the kept compile cache for the tasks that may use one; ``fork``: the
    children are forked from this process (``matrix.measure.preload``); ``check_triton``:
    refuses (``WrongTriton``) a child that imported another Triton than the cell's."""
    remaining = list(tasks)
    attempt_no = 0
    while remaining:
        attempt_no += 1
        # A probe may have deleted the work folder: make it again for the next child.
        workdir.mkdir(parents=True, exist_ok=True)
        base = workdir / f"{backend}-{tasks[0].probe}-{abs(hash(extra_env)) % 10**6}-{attempt_no}"
        tasks_file, events_file, log_file = (
            base.with_suffix(s) for s in (".json", ".jsonl", ".log")
        )
        told = [t.to_json(compile_cache) for t in remaining]
        tasks_file.write_text(json.dumps(told), encoding="utf-8")
        phase(f"probe {remaining[0]} (a new child for {len(remaining)} {backend} probe(s)) "
              f"{EVENTS}{events_file}")  # fmt: skip
        events_file.write_text("", encoding="utf-8")
        cache_dir = tempfile.mkdtemp(prefix="triton-cache-", dir=workdir)
        with (
            log_file.open("w+", encoding="utf-8") as log,
            events_file.open("rb") as events,
        ):
            env = child_environment(backend, extra_env, cache_dir) | limit_env(timeout_s)
            child_args = [str(tasks_file), str(events_file)]
            proc: subprocess.Popen | procs.Forked
            if fork:
                proc = preload.start(env, child_args, log.fileno())
            else:
                proc = procs.start(
                    [sys.executable, "-m", "matrix.measure.child", *child_args],
                    env=env,
                    cwd=REPO_ROOT,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            try:
                done = _watch(proc, remaining, events, log, timeout_s, on_result, check_triton)
            except BaseException:
                procs.kill_group(proc)
                raise
            finally:
                procs.forget(proc)
                procs.kill_strays()  # what a probe left running outside the child's group
        remaining = remaining[done:]


def _watch(
    proc: subprocess.Popen | procs.Forked,
    tasks: Sequence[Task],
    events: Any,
    log_file: Any,
    timeout_s: float,
    on_result: Callable[[Result], None],
    check_triton: Callable[[triton_identity.Identity], None] | None = None,
) -> int:
    """Follow one child's events; return how many of ``tasks`` got a result (incl. a failure).
    With ``check_triton``, a result is taken only after the child said which Triton it
    imported, and ``check_triton`` accepted it (it raises otherwise)."""
    finished = 0
    identified = False
    started_at: float | None = None
    pending = b""
    spawned = time.monotonic()
    clock = ProbeClock.start(proc.pid)
    while True:
        # The exit status is read before the events: whatever the child wrote before it exited
        # is in the file by then, so the read below sees its last result. Read after, an exit
        # between the read and the check would turn a finished probe into a crash.
        returncode = proc.poll()
        pending += events.read()
        complete, _, pending = pending.rpartition(b"\n")
        for line in complete.decode("utf-8").splitlines():
            event = json.loads(line)
            if event["event"] == "start":
                started_at = time.monotonic()
                clock = ProbeClock.start(proc.pid)
            elif event["event"] == "triton":
                if check_triton is not None:
                    check_triton(triton_identity.Identity.from_json(event))
                identified = True
            elif check_triton is not None and not identified:
                raise WrongTriton(f"a probe process gave a {event['event']} without saying "
                                  "which triton it imported")  # fmt: skip
            elif event["event"] == "row":  # one of a probe's many rows: the probe still runs
                on_result(Result.from_dict(event["result"]))
            elif event["event"] == "result":
                on_result(clock.annotate(Result.from_dict(event["result"])))
                finished = event["index"] + 1
                started_at = None
                if finished < len(tasks):  # what runs next, as far as this process can tell
                    phase(f"probe {tasks[finished]} ({finished} of {len(tasks)} done by child "
                          f"pid {proc.pid})")  # fmt: skip
        if finished == len(tasks):
            proc.wait()
            return finished
        running = tasks[finished]
        if returncode is not None:  # it exited
            if started_at is None and finished == 0:
                # Died before the first probe started: the import itself fails here, so every
                # remaining task would die the same way.
                why = f"child process {_death(returncode)} before any probe started"
                for task in tasks:
                    on_result(_failure(task, CRASHED, why, _tail(log_file), 0.0))
                return len(tasks)
            elapsed = time.monotonic() - (started_at or spawned)
            why = f"child process {_death(returncode)} while running {running}"
            on_result(_failure(running, CRASHED, why, _tail(log_file), elapsed))
            return finished + 1
        if started_at is not None and clock.past_limit(timeout_s):
            procs.kill_group(proc)
            why = f"{running} ran past the {timeout_s:g} s limit and was killed ({clock})"
            failure = _failure(running, TIMEOUT, why, _tail(log_file), timeout_s)
            on_result(clock.annotate(failure))
            return finished + 1
        time.sleep(POLL_S)


def _failure(task: Task, status: str, why: str, log_tail: str, seconds: float) -> Result:
    detail = why + (f"\n--- child output (tail) ---\n{log_tail}" if log_tail.strip() else "")
    detail = cap_text(detail, DETAIL_CAP)
    return Result(task.probe, task.backend, task.target, status, detail, round(seconds, 3), {})


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix run",
        description=__doc__.split("\n")[0],
    )
    p.add_argument("--out", required=True, type=Path, help="raw results file to write")
    p.add_argument("--id", help="run id (default: triton-<ver>-numpy-<ver>[-gpu-<name>])")
    p.add_argument(
        "--backends",
        default="interpret,aot,gpu",
        help="comma-separated subset of interpret,aot,gpu (gpu only runs where a GPU is found)",
    )
    p.add_argument("--probes", help="comma-separated probe names (default: all)")
    p.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S,
        help="seconds per probe, per user test and per kernel compile",
    )  # fmt: skip
    p.add_argument("--resume", action="store_true", help="keep results of an unfinished --out")
    p.add_argument(
        "--redo",
        help="with --resume: comma-separated probes whose earlier results are dropped and "
        "measured again (the others are kept; the matrix's --probes and changed probes)",
    )
    p.add_argument(
        "--fresh-compiles", action="store_true",
        help="empty the cell's kept compile cache first: every aot compile is done anew",
    )  # fmt: skip
    p.add_argument("--tests", type=Path, help="also run this pytest suite; record each test")
    p.add_argument(
        "--tests-args", default="", help="options for pytest on the suite (one string, shell words)"
    )
    p.add_argument(
        "--release",
        help="the Triton release this cell is labelled with (the matrix passes it): the "
        "environment's distribution and every probe process's import must be it; default: the "
        "installed distribution's version",
    )
    p.add_argument(
        "--tests-device", default=test_device.AUTO, type=test_device.check_mode,
        help="cpu (the interpreter), cuda-on-cpu (CUDA redirected to the CPU) or auto "
        "(matrix.measure.test_device)",
    )  # fmt: skip
    p.add_argument("--install", help="install record as JSON (status, seconds, detail)")
    p.add_argument("--env", help="JSON object of extra env fields (e.g. the torch pairing)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument(
        "--phases", action="store_true",
        help=f"say each step on stderr ({PHASE.strip()} lines: the matrix's crash note reads them)",
    )  # fmt: skip
    args = p.parse_args(argv)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in args.backends:
        if b not in BACKENDS:
            p.error(f"--backends: unknown backend {b!r}; expected some of {', '.join(BACKENDS)}")
    if args.probes:
        known = [spec.name for spec in registry()]
        names = [n.strip() for n in args.probes.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if unknown:
            p.error(f"--probes: unknown {unknown}; known: {', '.join(known)}")
        args.probes = names
    args.redo = _probe_names(p, "--redo", args.redo) if args.redo else ()
    if args.redo and not args.resume:
        p.error("--redo: only with --resume (it names which of the kept results to measure again)")
    if args.timeout <= 0:
        p.error(f"--timeout: expected seconds > 0, got {args.timeout}")
    if args.tests is not None and not args.tests.exists():
        p.error(f"--tests: {args.tests} does not exist")
    if args.release is not None:
        try:
            args.release = str(Release.parse(args.release, "--release"))
        except ValueError as e:
            p.error(str(e))
    return args


def _probe_names(p: argparse.ArgumentParser, flag: str, value: str) -> tuple[str, ...]:
    known = [spec.name for spec in registry()]
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        p.error(f"{flag}: unknown {unknown or value!r}; known: {', '.join(known)}")
    return names


def _kept_seconds(previous: Run, kept: list[Result]) -> float:
    """The seconds the ``kept`` results of ``previous`` cost: a cell completed in place counts
    the earlier run's time less that of the results it redoes (a cell's ``seconds`` is what
    its results cost, so ``matrix.timings`` adds up after an incremental run), or, where the
    earlier run never finished (no total), its kept probes' own seconds."""
    kept_ids = {id(r) for r in kept}
    tasks = [r for r in previous.results if not r.is_row]
    total = previous.extra.get("seconds")
    if isinstance(total, int | float):
        dropped = sum(r.seconds for r in tasks if id(r) not in kept_ids)
        return max(0.0, float(total) - dropped)
    return sum(r.seconds for r in tasks if id(r) in kept_ids)


def add_team_suite(run: Run, args: argparse.Namespace, workdir: Path, out: Path) -> None:
    """The team's suite (``--tests``), then, in a cell with the aot backend, every kernel it
    launched compiled for every aot target. Progress lines always print (even with --quiet):
    a suite can take long, and its lines are the only sign that it moves."""

    def say(*parts: object) -> None:
        print(f"[{run.id}]", *parts, flush=True)

    pytest_args = shlex.split(args.tests_args)
    phase(f"the team's suite {args.tests}")
    device, why = test_device.resolve(args.tests_device, args.tests)
    say(f"tests device: {device} ({why})")
    run.extra["suite"] = suite.suite_identity(args.tests, pytest_args, args.timeout, device)
    got = suite.run_suite_recorded(
        args.tests, workdir, say, args.timeout, pytest_args, device=device
    )
    run.extra["tests"], run.extra["launches"] = got.tests, got.launches
    run.extra["kernel_sources"] = got.kernel_sources
    write_raw(run, out, partial=True)
    if "aot" in args.backends:
        phase(f"compiling the suite's {len(got.launches)} launch(es) for the aot targets")
        run.extra["kernel_compiles"] = compile_captured(
            got.launches,
            KERNEL_TARGETS,
            workdir / "kernel-compiles",
            say,
            args.timeout,
            suite.suite_root(args.tests),
            got.kernel_sources,
        )
        run.extra["kernel_coverage"] = run_coverage(run)


def _previous_run(args: argparse.Namespace, env: dict[str, Any]) -> Run | None:
    """What an earlier run of this cell left (``--resume``): the partial file, else ``--out``
    (incomplete, or complete when only the team's suite is to be redone). An unreadable one is
    kept aside by the caller (the matrix) and simply not resumed here."""
    for path in (partial_path(args.out), args.out):
        if not path.exists():
            continue
        try:
            previous = read_raw(path)
        except SchemaError as e:
            print(f"matrix.measure.runner: not resuming from {e}", file=sys.stderr)
            continue
        same = previous.env.get("triton") == env["triton"] and (
            previous.env.get("numpy") == env["numpy"]
        )
        if same:
            return previous
    return None


def unsupported(triton: str) -> str | None:
    """Why the harness cannot measure ``triton``, or None (the matrix data's ``supported_from``)."""
    from matrix.measure.cells import load_matrix

    floor = load_matrix().supported_from
    if Release.parse(triton, "installed triton") < floor:
        return (
            f"triton {triton} is older than {floor}, the oldest release the harness supports "
            "(matrix/data/matrix.toml: supported_from); its probes would record the harness's "
            "own failures as Triton behaviour"
        )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    global _say_phases
    args = parse_args(argv)
    _say_phases = args.phases
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    with procs.owning_descendants():  # a probe's orphaned grandchildren are ours to end
        return _run_main(args)


def _run_main(args: argparse.Namespace) -> int:
    try:
        return _main(args)
    except WrongTriton as e:
        return refuse(args, str(e))
    except KeyboardInterrupt as e:
        procs.stop_all()
        why = str(e) or "interrupted"
        print(
            f"matrix.measure.runner: {why}; results so far are in {partial_path(args.out)} "
            "(--resume finishes them)",
            file=sys.stderr,
        )
        return ExitCode.INTERRUPTED


def triton_identity_of_children(check: TritonCheck) -> triton_identity.Identity:
    """The Triton a probe process of this cell would import, asked of a process started as
    the children are (for a cell whose every child died before it could say)."""
    with tempfile.TemporaryDirectory(prefix="matrix-identity-") as cache:
        env = child_environment("aot", (), cache)
        try:
            out = procs.run([sys.executable, "-c", IDENTITY_QUERY], env=env, cwd=REPO_ROOT,
                            timeout=120)  # fmt: skip
            said = json.loads(out.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as e:
            raise WrongTriton(f"no probe process could say which triton it imports ({e})") from e
    return triton_identity.Identity.from_json(said)


def refuse(args: argparse.Namespace, why: str) -> int:
    """End a cell whose Triton is not the one it is labelled with: nothing it measured is kept
    (its partial file goes, or a resume would keep another release's results), one line names
    both Tritons, and the matrix records the cell as not measured (``EXIT_WRONG_TRITON``)."""
    partial_path(args.out).unlink(missing_ok=True)
    label = args.release or "its installed release"
    hint = "; remove the other triton from PYTHONPATH (or the environment), then rerun"
    print(f"{REFUSED}cell labelled triton {label}: {why}{hint}", file=sys.stderr, flush=True)
    return EXIT_WRONG_TRITON


def _keep_earlier(
    args: argparse.Namespace, env: dict[str, Any], tasks: Sequence[Task], run: Run
) -> tuple[Run | None, float]:
    """With ``--resume``, put into ``run`` the results (and an earlier suite) of the cell's
    partial or raw file that need not be observed again; the earlier run, or None, and what
    the kept results cost it in seconds."""
    if not args.resume:
        return None, 0.0
    previous = _previous_run(args, env)
    if previous is None:
        return None, 0.0
    wanted = {t.key for t in tasks}
    # A task's rows count only with its own result: a kill mid-task redoes the task.
    finished = {r.key for r in previous.results if r.key in wanted and r.probe not in args.redo}
    run.results = [r for r in previous.results if r.task in finished]
    if args.tests is None:  # a suite recorded earlier stays until another replaces it
        run.extra.update({k: previous.extra[k] for k in SUITE_KEYS if k in previous.extra})
    return previous, _kept_seconds(previous, run.results)


def _run_tasks(
    todo: Sequence[Task],
    args: argparse.Namespace,
    record: Callable[[Result], None],
    workdir: Path,
    kept: Path,
    check: TritonCheck,
) -> None:
    """Observe ``todo``: one child per backend and environment (an isolated probe gets a child
    of its own), each result handed to ``record``."""
    groups: dict[tuple, list[Task]] = {}
    for task in todo:
        key = (task.backend, task.env, task.key if task.isolated else None)
        groups.setdefault(key, []).append(task)
    # Children forked from this process, which imports torch once for them (preload): worth
    # it where two or more would each import it (an aot cell). An isolated probe's child is
    # a fresh process, as isolation means.
    forkable = {key for key in groups if key[0] in preload.FORKED_BACKENDS and key[2] is None}
    fork = len(forkable) > 1 and preload.preload()
    for key, group in sorted(groups.items(), key=_group_order):
        backend, extra_env, _ = key
        forked = fork and key in forkable
        run_group(group, backend, extra_env, args.timeout, record, workdir, kept, forked, check)


def _main(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    phase("reading the environment" + (" and looking for a GPU" if "gpu" in args.backends else ""))
    gpu = detect_gpu() if "gpu" in args.backends else None
    env = {**collect_env(gpu), **(json.loads(args.env) if args.env else {})}
    if env["triton"] is None:
        print("matrix.measure.runner: triton is not installed in this environment", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    refused = unsupported(env["triton"])
    if refused:
        print(f"matrix.measure.runner: {refused}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    dist = triton_identity.distribution()
    wrong = triton_identity.distribution_mismatch(dist, args.release or env["triton"])
    if wrong:
        raise WrongTriton(wrong)
    check = TritonCheck(args.release or env["triton"], dist)
    install = json.loads(args.install) if args.install else {"status": "ok", "seconds": 0.0,
                                                               "detail": ""}  # fmt: skip
    run = Run(
        id=args.id or default_run_id(env), env=env, install=install, extra={"complete": False}
    )
    specs = [s for s in registry() if not args.probes or s.name in args.probes]
    tasks = plan_tasks(specs, args.backends, gpu_target_of(gpu))
    previous, earlier_seconds = _keep_earlier(args, env, tasks, run)
    done = {r.key for r in run.results}
    todo = [t for t in tasks if t.key not in done]
    # Hashed before anything runs: the source that is measured (matrix.measure.probe_hashes).
    measured = {t.probe for t in todo}
    run.extra[probe_hashes.HASHES_KEY] = probe_hashes.hashes_after(
        probe_hashes.recorded_hashes(previous) if previous is not None else {},
        probe_hashes.catalog_hashes([s for s in specs if s.name in measured], probe_package()),
        kept={r.task[0] for r in run.results},
    )
    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    log(f"[{run.id}] {len(todo)} of {len(tasks)} probe results to observe")
    partial = partial_path(args.out)

    def record(result: Result) -> None:
        run.results.append(result)
        if result.is_row:
            return  # a row: written with its task's own result, which comes last
        write_raw(run, partial, partial=True)
        log(f"[{run.id}] {result.probe} {result.backend} {result.target or ''} -> "
            f"{result.status} ({result.seconds:.1f} s)")  # fmt: skip

    write_raw(run, partial, partial=True)
    kept = compile_cache.base_of(sys.prefix)  # in the cell's environment, like its bytecode
    if args.fresh_compiles:
        compile_cache.empty(kept)
    elif compile_cache.prune(kept):
        log(f"[{run.id}] the compile cache held over {compile_cache.MAX_ENTRIES} entries: "
            "emptied")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="matrix-run-", ignore_cleanup_errors=True) as workdir:
        _run_tasks(todo, args, record, Path(workdir), kept, check)
        if args.tests is not None:
            Path(workdir).mkdir(parents=True, exist_ok=True)  # a probe may have deleted it
            add_team_suite(run, args, Path(workdir), partial)
    if todo and check.proven is None:  # every child died before its first result
        check(triton_identity_of_children(check))
    if check.proven is not None:
        run.extra[TRITON_KEY] = check.record()
    order = {t.key: i for i, t in enumerate(tasks)}
    run.results.sort(key=lambda r: order.get(r.task, len(order)))
    run.extra["complete"] = True
    run.extra["seconds"] = round(earlier_seconds + time.monotonic() - t0, 1)
    phase(f"writing the complete cell to {args.out}")
    write_raw(run, partial)
    os.replace(partial, args.out)  # the complete cell replaces the old file in one step
    counts: dict[str, int] = {}
    for r in run.results:
        counts[r.status] = counts.get(r.status, 0) + 1
    log(f"[{run.id}] done in {run.extra['seconds']} s: "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))  # fmt: skip
    return ExitCode.OK


if __name__ == "__main__":
    # Without the interpreter's teardown: the raw file is in place, and tearing down a
    # preloaded torch (matrix.measure.preload) took 0.5 s a cell.
    exit_now(cli.run(main, "matrix.run"))
