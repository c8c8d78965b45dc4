"""Sessions only: which environments, what to install, what to run in each.

nox -s matrix [-- --releases 3.8.0,3.9.0 --discover --tests PATH --force]
nox -s matrix_cell                        # one cell; `nox -l --json` lists them for CI
nox -s report                             # rebuild the pages from reports/raw
nox -s gate -- [--baseline X] [--candidate Y] [--results DIR] [--scan PATH ...]
nox -s tests                              # the pytest suite on the newest release and an older one
nox -s tests_slow                         # its end-to-end tests (marker slow); CI runs both
nox -s lint                               # ruff, then mypy (the types session)
nox -s types                              # mypy on matrix/ and kernels/ alone
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).parent))

from matrix.measure import procs
from matrix.measure.cells import load_matrix, plan

nox.options.default_venv_backend = "uv|virtualenv"
nox.needs_version = ">=2024.10.9"

# nox options after which no session environment is created (listing, help, no venv).
NO_ENVIRONMENT = {"-l", "--list", "--list-sessions", "-h", "--help", "--version", "--no-venv"}


def envdir_of(argv: list[str]) -> Path:
    """Where nox will create the sessions' environments: ``--envdir`` (before any ``--``, after
    which the arguments are the session's), else ``.nox``; relative to this file's folder, where
    nox runs from."""
    options = argv[: argv.index("--")] if "--" in argv else argv
    envdir = ".nox"
    for i, arg in enumerate(options):
        if arg == "--envdir" and i + 1 < len(options):
            envdir = options[i + 1]
        elif arg.startswith("--envdir="):
            envdir = arg.partition("=")[2]
    return Path(__file__).parent / envdir


def require_writable_envdir(argv: list[str]) -> None:
    """End with one line and exit 2 (an environment error, never "unsafe") where nox could not
    create its environments: nox itself would print a traceback and exit 1."""
    options = argv[: argv.index("--")] if "--" in argv else argv
    if NO_ENVIRONMENT & set(options):
        return
    envdir = envdir_of(argv)
    try:
        envdir.mkdir(parents=True, exist_ok=True)  # what nox does first, with the same effect
        with tempfile.TemporaryFile(dir=envdir):
            pass
    except OSError as e:
        why = e.strerror or type(e).__name__
        if e.filename and envdir not in (Path(e.filename), Path(e.filename).parent):
            why += f" ({e.filename})"
        print(f"nox: cannot create environments in {envdir}: {why}; run from a writable copy "
              "of the checkout, or pass --envdir DIR on a writable disk",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(2) from None


require_writable_envdir(sys.argv[1:])
MATRIX = load_matrix()
CELLS = plan(MATRIX)
# Packages the matrix machinery itself needs (not the cells: they get their own environments).
# fastjsonschema: every reader checks raw files against matrix/data/raw.schema.json.
TOOLING = ["uv", "packaging", "jinja2", "fastjsonschema"]

# Where the test suite runs (matrix/data/matrix.toml [tests]): the newest release with the newest
# numpy, and an older release without tl.make_tensor_descriptor (the data file says why).
TEST_TARGETS = {str(t.release): t for t in MATRIX.test_targets()}
TEST_EXTRAS = [
    "pytest", "pytest-xdist", "packaging", "jinja2", "playwright", "check-jsonschema", "nox",
    "uv", "build", "fastjsonschema", "jsonschema",
]  # fmt: skip
# The suite runs in as many pytest-xdist workers as the machine has cores, each test file in
# one worker (``loadfile``: a module's shared setup, a built site or a compiled set, is made
# once). Every test writes only under its own tmp_path, and the fault tests tag the processes
# they look for, so workers cannot see each other's files or processes.
XDIST = ["-n", "auto", "--dist", "loadfile"]


def _sigterm_is_an_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt("SIGTERM")


# nox has no SIGTERM handler of its own: a CI's cancel would end nox alone and leave the matrix
# running. As an interrupt, nox stops its command as on Ctrl-C (SIGTERM, then SIGKILL), and the
# orchestrator stops its children.
signal.signal(signal.SIGTERM, _sigterm_is_an_interrupt)
# Seconds nox waits for its command after an interrupt (a Ctrl-C reached both), then after its
# SIGTERM (the orchestrator stops its children), before SIGKILL.
STOP_TIMEOUTS = {"interrupt_timeout": 2.0, "terminate_timeout": 30.0}


def run_keeping_code(session: nox.Session, *cmd: str) -> None:
    """Run a ``matrix`` command and end the session with its own exit code (0 done, 1 a failed
    measurement, 2 bad input or an environment error): nox would make every failure 1. The
    command writes its code to MATRIX_EXIT_CODE_FILE (``matrix.cli.run``)."""
    with tempfile.TemporaryDirectory(prefix="matrix-exit-") as tmp:
        code_file = Path(tmp) / "exit-code"
        session.run(*cmd, env={"MATRIX_EXIT_CODE_FILE": str(code_file)},
                    success_codes=list(range(256)), **STOP_TIMEOUTS)  # fmt: skip
        text = code_file.read_text().strip() if code_file.exists() else ""
    code = int(text) if text.isdigit() else 2  # died before it could say: not a success
    if code:
        session.log(f"{' '.join(cmd[:4])}: exit {code}")
        raise SystemExit(code)  # past nox's own handling, which knows only success and 1


def find_links() -> list[str]:
    """pip reads PIP_FIND_LINKS by itself; uv must be told, or it fetches a CUDA torch."""
    links = os.environ.get("PIP_FIND_LINKS")
    return ["--find-links", links] if links else []


@nox.session
def matrix(session: nox.Session) -> None:
    """Every default cell (release x numpy), each in its own environment, then the report."""
    session.install(*TOOLING)
    run_keeping_code(session, "python", "-m", "matrix", "matrix", *session.posargs)


@nox.session
@nox.parametrize(
    ["release", "numpy"],
    [(str(c.release), c.numpy) for c in CELLS],
    ids=[c.id for c in CELLS],
)
def matrix_cell(session: nox.Session, release: str, numpy: str) -> None:
    """One cell: its environment, its probes, its raw file (for CI fan-out)."""
    session.install(*TOOLING)
    session.run(
        "python", "-m", "matrix", "matrix", "--releases", release, "--numpy", numpy,
        "--jobs", "1", "--no-report", "--aot-numpy", MATRIX.aot_numpy, *session.posargs,
    )  # fmt: skip


@nox.session
def report(session: nox.Session) -> None:
    """Merge reports/raw into reports/matrix.json and rebuild the pages."""
    session.install("packaging", "jinja2", "fastjsonschema")
    run_keeping_code(session, "python", "-m", "matrix", "report", "--raw", "reports/raw",
                     "--out", "reports", *session.posargs)  # fmt: skip


@nox.session
def gate(session: nox.Session) -> None:
    """Is it safe to upgrade? Runs the cells it needs (unless --results), then compares.

    Exits nox with the gate's own code, 0 safe / 1 unsafe / 2 undecidable: nox would turn any
    failure into 1, so the session ends with the code ``python -m matrix gate-session`` (its
    parser reads the arguments, this file never does) reports.
    """
    session.install(*TOOLING)
    run_keeping_code(session, "python", "-m", "matrix", "gate-session", *session.posargs)


def _pytest_env(session: nox.Session, triton: str) -> dict[str, str | None]:
    """Install the suite's packages; return the environment pytest runs with: the interpreter
    on, and bytecode kept in the session's own folder (``procs.bytecode_kept`` says why)."""
    target = TEST_TARGETS[triton]
    session.install(
        *find_links(), f"torch=={MATRIX.torch}", f"triton=={triton}", f"numpy=={target.numpy}",
        *TEST_EXTRAS,
    )  # fmt: skip
    pycache = Path(session.virtualenv.location) / "pycache"
    return {"TRITON_INTERPRET": "1", **procs.bytecode_kept(pycache)}


@nox.session
@nox.parametrize("triton", list(TEST_TARGETS))
def tests(session: nox.Session, triton: str) -> None:
    """The pytest suite under the interpreter, on the newest release and on an older one,
    less the end-to-end runs marked ``slow`` (``tests_slow`` runs those; CI runs both)."""
    env = _pytest_env(session, triton)
    session.run("python", "-m", "pytest", *XDIST, "-m", "not slow", *TEST_TARGETS[triton].paths,
                *session.posargs, env=env)  # fmt: skip


@nox.session
def tests_slow(session: nox.Session) -> None:
    """The end-to-end tests (marker ``slow``) on the newest release: the orchestrator in real
    cell environments, the team suite run and compiled, the wheel built and installed, every
    fused split-K variant compiled. .ci/run runs them after ``tests``."""
    newest = str(MATRIX.newest)
    env = _pytest_env(session, newest)
    session.run("python", "-m", "pytest", *XDIST, "-m", "slow and not crawl",
                *TEST_TARGETS[newest].paths, *session.posargs, env=env)  # fmt: skip


@nox.session
def pages_crawl(session: nox.Session) -> None:
    """axe-core on every page of a built report (``REPORT_SITE``, else reports/): some 230
    pages, half an hour on a loaded 2-core machine, so not part of CI's ``tests_slow``."""
    newest = str(MATRIX.newest)
    env = _pytest_env(session, newest)
    session.run("python", "-m", "pytest", "-m", "crawl", "tests/test_browser.py",
                *session.posargs, env=env)  # fmt: skip


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (check and format), then mypy as ``types`` runs it: CI runs this session."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    run_mypy(session)
    # For review, never a failure: each probe whose code changed under an unchanged probe.toml
    # version (docs/probes.md), printed in CI's log.
    session.run("python", "-m", "matrix", "versions")


@nox.session
def types(session: nox.Session) -> None:
    """mypy on matrix/ and kernels/ alone ([tool.mypy] in pyproject.toml)."""
    run_mypy(session)


def run_mypy(session: nox.Session) -> None:
    """mypy against the newest test target's torch, Triton and numpy: with them missing, every
    use of them would be ``Any`` (ignore_missing_imports) and check nothing."""
    newest = max(MATRIX.test_targets(), key=lambda t: t.release)
    session.install(
        *find_links(), f"torch=={MATRIX.torch}", f"triton=={newest.release}",
        f"numpy=={newest.numpy}", "mypy", *TOOLING,
    )  # fmt: skip
    session.run("mypy")
