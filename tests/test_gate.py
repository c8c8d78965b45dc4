"""The gate on synthetic result sets: each exit code, for the right reason.

Every case starts from ``tests/fixtures/gate/safe`` (3.8.0 and 3.9.0 behaving identically, plus
a 3.7.0 cell that failed to install and must be ignored) and changes one thing. The statuses in
the fixtures are made up; they test the gate's logic, not claims about Triton releases.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from matrix.gate import compare as gc
from matrix.gate import verdict as gate
from matrix.results import Result, Run, raw_files, read_raw, write_raw

FIXTURES = Path(__file__).parent / "fixtures"
GATE = FIXTURES / "gate"
BLOCK_PTR_KERNEL = FIXTURES / "scan" / "tri001_block_ptr.py"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def results(tmp_path: Path) -> Path:
    dst = tmp_path / "raw"
    shutil.copytree(GATE / "safe", dst)
    return dst


def mutate(raw: Path, release: str, change: Callable[[Run], Run | None]) -> None:
    """Apply ``change`` to every run of ``release`` (returning None deletes the file)."""
    for path in raw_files(raw):
        run = read_raw(path)
        if run.triton != release:
            continue
        new = change(run)
        if new is None:
            path.unlink()
        else:
            write_raw(new, path)


def set_status(
    probe: str, status: str, detail: str = "", backend: str | None = None, target: str | None = None
) -> Callable[[Run], Run]:
    def change(run: Run) -> Run:
        run.results = [
            replace(r, status=status, detail=detail)
            if r.probe == probe
            and (backend is None or r.backend == backend)
            and (target is None or r.target == target)
            else r
            for r in run.results
        ]
        return run

    return change


def run_gate(
    tmp_path: Path,
    raw: Path,
    *extra: str,
    accepted: str = "accepted_none.toml",
    candidate: str = "3.9.0",
    baseline: str | None = "3.8.0",
) -> tuple[int, str, dict]:
    out = tmp_path / "gate-out"
    args = ["--candidate", candidate, "--results", str(raw), "--out", str(out)]
    args += ["--accepted", str(GATE / accepted), "--no-project-scan", *extra]
    if baseline is not None:
        args += ["--baseline", baseline]
    code = gate.main(args)
    md = (out / "gate.md").read_text()
    doc = json.loads((out / "gate.json").read_text())
    assert doc["exit_code"] == code
    return code, md, doc


def kinds(doc: dict) -> set[str]:
    return {f["kind"] for f in doc["findings"]}


# -------------------------------------------------------------------------------------- exit 0


def test_safe(tmp_path: Path, results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, md, doc = run_gate(tmp_path, results)
    assert code == 0, md
    assert md.splitlines()[0].startswith("**SAFE** (exit 0): Triton 3.8.0 → 3.9.0")
    assert doc["findings"] == [] and doc["undecidable"] == [] and doc["errors"] == []
    # Both numpy versions of the interpreter and every aot target were compared.
    assert set(doc["compared"]) == {
        "interpret (numpy 1.26.4)",
        "interpret (numpy 2.4.6)",
        "aot:cuda:80",
        "aot:cuda:90",
        "aot:hip:gfx942",
    }
    assert capsys.readouterr().out.startswith("**SAFE**")


def test_default_baseline_is_the_pinned_release(tmp_path: Path, results: Path) -> None:
    code, md, doc = run_gate(
        tmp_path, results, "--pinned", str(GATE / "pinned_3.8.0.toml"), baseline=None
    )
    assert code == 0, md
    assert doc["baseline"] == "3.8.0"


def test_project_pinned_file_names_a_release() -> None:
    from matrix.core import Release
    from matrix.gate.config import pinned_release

    assert isinstance(pinned_release(), Release)  # parsed, or a DataFileError naming the key


# -------------------------------------------------------------------------------------- exit 1


def test_regression_in_compilation_for_a_target(tmp_path: Path, results: Path) -> None:
    err = "CompilationError: at 12:4: unsupported layout"
    mutate(results, "3.9.0", set_status("splitk", "error", err, "aot", "cuda:90"))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 1, md
    assert kinds(doc) == {gc.REGRESSION}
    (f,) = doc["findings"]
    assert (f["probe"], f["where"], f["baseline"], f["candidate"]) == (
        "splitk",
        "aot:cuda:90",
        "pass",
        "error",
    )
    assert md.startswith("**UNSAFE** (exit 1)")
    assert "### Regressions (1)" in md and err in md


@pytest.mark.parametrize("status", ["fail", "crashed", "timeout"])
def test_regression_in_numerics_under_one_numpy(tmp_path: Path, results: Path, status: str) -> None:
    def change(run: Run) -> Run:
        if run.env["numpy"] == "1.26.4":
            return set_status("tiled", status, "worst rel err 0.31 (K=10)", "interpret")(run)
        return run

    mutate(results, "3.9.0", change)
    code, md, doc = run_gate(tmp_path, results)
    assert code == 1, md
    (f,) = doc["findings"]
    assert f["kind"] == gc.REGRESSION and f["candidate"] == status
    assert "interpret (numpy 1.26.4)" in md or f["where"] == "interpret"
    assert "worst rel err 0.31" in md


def test_regression_in_a_user_test(tmp_path: Path, results: Path) -> None:
    def with_tests(outcome: str) -> Callable[[Run], Run]:
        def change(run: Run) -> Run:
            run.extra["tests"] = [
                {"id": "tests/test_mine.py::test_matmul", "outcome": outcome},
                {"id": "t::other", "outcome": "passed"},
            ]
            return run

        return change

    mutate(results, "3.8.0", with_tests("passed"))
    mutate(results, "3.9.0", with_tests("failed"))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 1, md
    # One finding per numpy pairing the tests ran under; the test that still passes is silent.
    assert {(f["kind"], f["probe"], f["where"]) for f in doc["findings"]} == {
        (gc.REGRESSION, "test tests/test_mine.py::test_matmul", "tests (numpy 1.26.4)"),
        (gc.REGRESSION, "test tests/test_mine.py::test_matmul", "tests (numpy 2.4.6)"),
    }


def test_breaking_api_needs_a_use_in_scanned_code(tmp_path: Path, results: Path) -> None:
    removed = "NotImplementedError: Block pointers have been removed (synthetic)"
    mutate(results, "3.9.0", set_status("block_ptr", "removed", removed))
    # With the behaviour change acknowledged and no scan, the change alone is not unsafe...
    code, md, doc = run_gate(tmp_path, results, accepted="accepted_block_ptr.toml")
    assert code == 0, md
    assert kinds(doc) == {gc.ACCEPTED}
    assert "synthetic fixture: our kernels never build block pointers" in md
    # ...but code that builds block pointers breaks, acknowledged or not (a team's own
    # acknowledgement, scoped to its code: --scan never takes the project's).
    code, md, doc = run_gate(
        tmp_path,
        results,
        "--scan",
        str(BLOCK_PTR_KERNEL),
        accepted="accepted_block_ptr_scoped.toml",
    )
    assert code == 1, md
    assert gc.BREAKING in kinds(doc)
    assert "### Breaking API (1)" in md  # one entry listing both uses
    assert f"used at `{BLOCK_PTR_KERNEL}:19:13 TRI001 tl.advance(...)`" in md
    assert f"used at `{BLOCK_PTR_KERNEL}:10:13 TRI001 tl.make_block_ptr(...)`" in md
    assert removed in md
    assert "fix: build a tensor descriptor" in md


def test_behaviour_change_unacknowledged_then_acknowledged(tmp_path: Path, results: Path) -> None:
    mutate(results, "3.9.0", set_status("dot_f32_default_precision", "ieee", "", "aot", "cuda:90"))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 1, md
    assert kinds(doc) == {gc.BEHAVIOUR}
    assert "**dot_f32_default_precision**: `tf32` → `ieee` on aot:cuda:90" in md
    assert 'probe = "dot_f32_default_precision"' in md  # the ready-made acknowledgement

    code, md, doc = run_gate(tmp_path, results, accepted="accepted_precision.toml")
    assert code == 0, md
    assert kinds(doc) == {gc.ACCEPTED}
    assert "every float32 tl.dot of ours passes input_precision" in md


def test_acknowledgement_outside_its_glob_does_not_apply(tmp_path: Path, results: Path) -> None:
    mutate(
        results, "3.9.0", set_status("dot_f32_default_precision", "tf32x3", "", "aot", "cuda:90")
    )
    code, md, doc = run_gate(tmp_path, results, accepted="accepted_precision.toml")
    assert code == 1, md  # accepted is tf32 -> ieee, not tf32 -> tf32x3
    assert kinds(doc) == {gc.BEHAVIOUR}


def test_behaviour_change_lists_the_scanned_uses(tmp_path: Path, results: Path) -> None:
    mutate(results, "3.9.0", set_status("dot_f32_default_precision", "ieee", "", "aot", "cuda:90"))
    kernel = FIXTURES / "scan" / "tri004_dot_precision.py"
    code, md, _ = run_gate(tmp_path, results, "--scan", str(kernel))
    assert code == 1
    # the scanner found each dot by its spelling; the profile read each one's operands, whose
    # element types are open (fp16, bf16 or fp32): each may use the float32 default
    for line in (15, 16, 17):
        assert f"tri004_dot_precision.py:{line} in default_precision: dot[float16|float32]" in md
    assert "tri004_dot_precision.py:18" not in md  # input_precision="ieee": not the default
    assert 'fix: pass input_precision="ieee"' in md


def test_a_dot_typed_narrow_has_no_float32_precision_to_change(
    tmp_path: Path, results: Path
) -> None:
    """A ``tl.dot`` the scanner finds by its spelling (no input_precision) but whose operands
    the profile types fp16 is not a use of the float32 default: the change does not concern
    it (before, every such dot blocked)."""
    mutate(results, "3.9.0", set_status("dot_f32_default_precision", "ieee", "", "aot", "cuda:90"))
    team = tmp_path / "team"
    team.mkdir()
    source = (FIXTURES / "scan" / "tri004_dot_precision.py").read_text()
    narrow = "    a = a.to(tl.float16)\n    b = b.to(tl.float16)\n    c = tl.dot(a, b)"
    (team / "k.py").write_text(source.replace("    c = tl.dot(a, b)", narrow))
    _, md, doc = run_gate(tmp_path, results, "--scan", str(team))
    assert "dot_f32_default_precision" not in {f["probe"] for f in doc["findings"]}, md
    assert any(f["probe"] == "dot_f32_default_precision" for f in doc["not_used"]), md


def test_unsafe_wins_over_undecidable(tmp_path: Path, results: Path) -> None:
    def change(run: Run) -> Run:
        run = set_status("splitk", "fail", "worst rel err 1.0", "aot", "cuda:80")(run)
        return set_status("tiled", "skipped", "no compiler", "aot", "cuda:80")(run)

    mutate(results, "3.9.0", change)
    code, md, doc = run_gate(tmp_path, results)
    assert code == 1, md
    assert any("tiled on aot:cuda:80" in u for u in doc["undecidable"])


# -------------------------------------------------------------------------------------- exit 2


def test_missing_candidate_results(tmp_path: Path, results: Path) -> None:
    code, md, doc = run_gate(tmp_path, results, candidate="3.10.0")
    assert code == 2, md
    assert md.startswith("**UNDECIDABLE** (exit 2)")
    assert any("no results for the candidate Triton 3.10.0" in e for e in doc["errors"])


def test_missing_baseline_results(tmp_path: Path, results: Path) -> None:
    mutate(results, "3.8.0", lambda run: None)
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2
    assert any("no results for the baseline Triton 3.8.0" in e for e in doc["errors"])


def not_installed(status: str, detail: str, numpy: str | None = None):
    """A ``mutate`` change: the cells (of ``numpy`` only, if given) did not install."""

    def change(run: Run) -> Run:
        if numpy is None or run.env["numpy"] == numpy:
            run.install = {"status": status, "seconds": 1.0, "detail": detail}
            run.results = []
        return run

    return change


@pytest.mark.parametrize("status", ["failed", "no-wheel"])
def test_candidate_install_failure_where_the_baseline_installed(
    tmp_path: Path, results: Path, status: str
) -> None:
    mutate(results, "3.9.0", not_installed(status, "pip: no matching wheel", "1.26.4"))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 2, md
    (why,) = doc["undecidable"]
    assert "triton-3.9.0-numpy-1.26.4" in why and repr(status) in why
    assert "no matching wheel" in why and "numpy 1.26.4" in why


def test_candidate_that_installs_nowhere(tmp_path: Path, results: Path) -> None:
    mutate(results, "3.9.0", not_installed("no-such-release", "not on the index"))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 2, md
    assert any("did not install in any cell" in e for e in doc["errors"])


def test_baseline_cell_that_never_installed_is_only_a_note(tmp_path: Path, results: Path) -> None:
    # The baseline never worked with numpy 1.26.4: upgrading loses nothing there.
    mutate(results, "3.8.0", not_installed("failed", "no torch build", "1.26.4"))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 0, md
    assert any(
        "baseline cell 'triton-3.8.0-numpy-1.26.4' did not install" in n for n in doc["notes"]
    )
    assert "interpret (numpy 2.4.6)" in doc["compared"]


def test_backend_recorded_for_the_baseline_only(tmp_path: Path, results: Path) -> None:
    def drop(run: Run) -> Run:
        run.results = [r for r in run.results if r.target != "hip:gfx942"]
        return run

    mutate(results, "3.9.0", drop)
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2
    assert any(u.startswith("aot:hip:gfx942: results for the baseline") for u in doc["undecidable"])


# A cell that cannot be compared: release, numpy, extra keys of the run, how many results it
# keeps, and what the gate's error says.
BROKEN_CELLS = {
    "incomplete cell": ("3.9.0", "1.26.4", {"complete": False}, 2, "incomplete cell"),
    "crashed cell without results": ("3.8.0", "2.4.6", {}, 0, "recorded no results"),
}


@pytest.mark.parametrize(
    ("release", "numpy", "extra", "kept", "says"), BROKEN_CELLS.values(), ids=BROKEN_CELLS
)
def test_a_broken_cell_is_an_error(
    tmp_path: Path, results: Path, release: str, numpy: str, extra: dict, kept: int, says: str
) -> None:
    def change(run: Run) -> Run:
        if run.env["numpy"] == numpy:
            run.extra.update(extra)
            run.results = run.results[:kept]
        return run

    mutate(results, release, change)
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2
    assert any(says in e for e in doc["errors"]), doc["errors"]


def test_passing_check_skipped_on_candidate(tmp_path: Path, results: Path) -> None:
    mutate(results, "3.9.0", set_status("splitk", "skipped", "no compiler", "aot", "hip:gfx942"))
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2
    assert any("splitk on aot:hip:gfx942" in u for u in doc["undecidable"])


def test_passing_check_missing_on_candidate(tmp_path: Path, results: Path) -> None:
    def drop(run: Run) -> Run:
        run.results = [r for r in run.results if not (r.probe == "tiled" and r.backend == "aot")]
        return run

    mutate(results, "3.9.0", drop)
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2
    assert any("tiled on aot:cuda:80" in u and "no result" in u for u in doc["undecidable"])


def test_scanned_use_of_a_probe_the_candidate_never_ran(tmp_path: Path, results: Path) -> None:
    def drop(run: Run) -> Run:
        run.results = [r for r in run.results if r.probe != "block_ptr"]
        return run

    mutate(results, "3.9.0", drop)
    code, _, doc = run_gate(tmp_path, results, "--scan", str(BLOCK_PTR_KERNEL))
    assert code == 2
    assert any("probe 'block_ptr'" in u for u in doc["undecidable"])


def test_acknowledgement_without_reason_is_a_config_error(tmp_path: Path, results: Path) -> None:
    code, _, doc = run_gate(tmp_path, results, accepted="accepted_no_reason.toml")
    assert code == 2
    (err,) = doc["errors"]
    assert "change[0] (dot_f32_default_precision).reason: expected a reason" in err


def test_conflicting_duplicate_results_are_bad_data(tmp_path: Path, results: Path) -> None:
    run = read_raw(results / "triton-3.9.0-numpy-2.4.6.json")
    run.id = "triton-3.9.0-numpy-2.4.6-again"
    run.results = [Result("splitk", "aot", "cuda:90", "fail", "rerun disagreed")]
    write_raw(run, results / f"{run.id}.json")
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2
    assert any("conflicting results for splitk on aot:cuda:90" in e for e in doc["errors"])


def test_malformed_raw_file(tmp_path: Path, results: Path) -> None:
    (results / "broken.json").write_text('{"schema": 1, "runs": [{"id": "x"}]}')
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2  # named, the other files compared, and still never safe
    said = doc["undecidable"] + doc["errors"]
    assert any("broken.json" in e and "env" in e for e in said), said
    assert doc["compared"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "3.9.0"], "are the same release"),
        (["--baseline", "three"], "--baseline: 'three' is not a release; expected X.Y.Z"),
        (["--results", "/nonexistent/raw"], "--results '/nonexistent/raw': no such folder"),
        (["--scan", "/nonexistent/kernels"], "'/nonexistent/kernels': no such file or folder"),
    ],
)
def test_bad_arguments(tmp_path: Path, results: Path, args: list[str], message: str) -> None:
    out = tmp_path / "out"
    argv = ["--candidate", "3.9.0", "--baseline", "3.8.0", "--results", str(results)]
    argv += ["--out", str(out), "--accepted", str(GATE / "accepted_none.toml"), *args]
    assert gate.main(argv) == 2
    doc = json.loads((out / "gate.json").read_text())
    assert any(message in e for e in doc["errors"]), doc["errors"]


def test_missing_candidate_argument_exits_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "matrix.gate", "--results", "reports/raw"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--candidate" in proc.stderr and "bad arguments" in proc.stderr


def test_unexpected_error_fails_closed(
    tmp_path: Path, results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("synthetic bug")

    monkeypatch.setattr(gc, "compare", boom)
    code, md, _ = run_gate(tmp_path, results)
    assert code == 2
    assert "internal error" in md and "synthetic bug" in md


# ------------------------------------------------------------------------------------- pairing


def test_interpreter_pairs_newest_numpy_when_none_is_shared(tmp_path: Path, results: Path) -> None:
    def renumber(run: Run) -> Run | None:
        if run.env["numpy"] == "1.26.4":
            return None
        run.env["numpy"] = "2.3.5"
        return run

    mutate(results, "3.9.0", renumber)
    # The baseline's 1.26.4 cell would pair with nothing (undecidable: test_faults.py).
    mutate(results, "3.8.0", lambda run: None if run.env["numpy"] == "1.26.4" else run)
    code, md, doc = run_gate(tmp_path, results)
    assert code == 0, md
    assert "interpret (numpy 2.4.6 vs 2.3.5)" in doc["compared"]
    assert "aot:cuda:90" in doc["compared"]


def test_cli_subprocess_writes_markdown_and_json(tmp_path: Path, results: Path) -> None:
    out = tmp_path / "o"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "matrix.gate",
            "--baseline",
            "3.8.0",
            "--candidate",
            "3.9.0",
            "--results",
            str(results),
            "--out",
            str(out),
            "--no-project-scan",
            "--accepted",
            str(GATE / "accepted_none.toml"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("**SAFE**")
    assert proc.stdout == (out / "gate.md").read_text() + "\n"  # print() adds one newline


def test_interpreter_recorded_for_the_baseline_only(tmp_path: Path, results: Path) -> None:
    def aot_only(run: Run) -> Run | None:
        if run.env["numpy"] == "1.26.4":
            return None
        run.results = [r for r in run.results if r.backend != "interpret"]
        return run

    mutate(results, "3.9.0", aot_only)
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2
    assert any(
        "has interpreter results and the candidate 3.9.0 none" in u for u in doc["undecidable"]
    )


def test_merged_matrix_json_is_accepted_as_results(tmp_path: Path, results: Path) -> None:
    from matrix.results import merge

    merged = tmp_path / "matrix.json"
    merge(results, merged)
    code, md, doc = run_gate(tmp_path, merged)
    assert code == 0, md
    assert len(doc["compared"]) == 5


@pytest.mark.parametrize(("side", "probe"), [("3.9.0", "block_ptr"), ("3.8.0", "loader")])
def test_a_probe_missing_on_either_side_is_undecidable(
    tmp_path: Path, results: Path, side: str, probe: str
) -> None:
    """What ``matrix.run --probes`` writes: complete cells with a subset; never safe."""
    assert run_gate(tmp_path, results)[0] == 0  # the full data is safe
    mutate(results, side, lambda r: replace(r, results=[x for x in r.results if x.probe != probe]))
    code, _, doc = run_gate(tmp_path, results)
    assert code == 2
    assert any(probe in u and f"no result on {side}" in u for u in doc["undecidable"])


def test_gate_into_a_closed_pipe_exits_with_its_code(tmp_path: Path, results: Path) -> None:
    cmd = [sys.executable, "-m", "matrix.gate", "--candidate", "3.9.0", "--baseline", "3.8.0",
           "--results", str(results), "--out", str(tmp_path / "o"), "--no-project-scan",
           "--accepted", str(GATE / "accepted_none.toml")]  # fmt: skip
    shell = " ".join(map(shlex.quote, cmd)) + " | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}"
    proc = subprocess.run(["bash", "-c", shell], cwd=ROOT, capture_output=True, text=True)
    assert proc.stdout.strip() == "0" and "Traceback" not in proc.stderr, proc.stderr


def test_gate_session_says_a_malformed_pin_in_one_line(tmp_path: Path) -> None:
    pinned = tmp_path / "pinned.toml"
    pinned.write_text("[triton\nrelease = 3.8")
    code_file = tmp_path / "code"  # where nox -s gate reads the code (noxfile.run_keeping_code)
    cmd = [sys.executable, "-m", "matrix", "gate-session", "--candidate", "3.9.0", "--pinned",
           str(pinned)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MATRIX_EXIT_CODE_FILE": str(code_file)})  # fmt: skip
    assert proc.returncode == 2 and code_file.read_text().strip() == "2"
    assert "pinned.toml" in proc.stderr and "valid TOML" in proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_nox_gate_exits_with_the_gates_own_code(tmp_path: Path) -> None:
    """nox makes every failure 1; the session must end nox with 0/1/2 as the README says, and
    find its default candidate without pip (nox's uv environments have none)."""
    nox = [sys.executable, "-m", "nox", "-s", "gate", "--"]
    common = ["--results", str(GATE / "safe"), "--baseline", "3.8.0", "--out", str(tmp_path),
              "--no-project-scan", "--accepted", str(GATE / "accepted_none.toml")]  # fmt: skip
    missing = subprocess.run([*nox, *common, "--candidate", "3.7.1"], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    assert missing.returncode == 2, missing.stdout + missing.stderr
    default = subprocess.run([*nox, *common], cwd=ROOT, capture_output=True, text=True,
                             timeout=600)  # fmt: skip
    assert default.returncode == 0, default.stdout + default.stderr
    assert "(the newest release on the package index)" in default.stdout


def test_without_out_the_gate_writes_into_the_current_folders_gate_folder(
    tmp_path: Path, monkeypatch
) -> None:
    """Without --out the verdict goes to triton-compat-gate/ of the current folder (ignored by
    git): never beside the results, so a gate on a checkout's reports/raw leaves its committed
    files alone."""
    copy = tmp_path / "scratch" / "raw"
    shutil.copytree(GATE / "safe", copy)
    monkeypatch.chdir(tmp_path)
    args = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(copy)]
    code = gate.main([*args, "--accepted", str(GATE / "accepted_none.toml"), "--no-project-scan"])
    doc = json.loads((tmp_path / "triton-compat-gate" / "gate.json").read_text())
    assert doc["exit_code"] == code
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scratch", "triton-compat-gate"]
    assert not (tmp_path / "scratch" / "gate").exists()
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert f"/{gate.DEFAULT_OUT}/" in ignored or f"{gate.DEFAULT_OUT}/" in ignored


def test_regressed_tests_of_one_file_read_as_one_entry() -> None:
    """A suite whose 200 tests all break is one entry per file with the tests listed, not 200
    entries (a real slice of Triton's own tests gave 1,967 lines)."""
    from matrix.gate import compare as gc
    from matrix.gate import verdict

    report = verdict.GateReport("3.8.0", "3.9.0", "raw")
    for i in range(200):
        name = gc.test_finding_name(f"t/test_bp.py::test_load[{i}]")
        ev = ["baseline 3.8.0: `passed`", "candidate 3.9.0: `failed`"]
        report.comparison.findings.append(
            gc.GateFinding(gc.REGRESSION, name, "tests (numpy 2.4.6)", "passed", "failed", ev)
        )
    other = gc.test_finding_name("t/test_other.py::test_x")
    report.comparison.findings.append(
        gc.GateFinding(gc.REGRESSION, other, "tests (numpy 2.4.6)", "passed", "failed", [])
    )
    md = verdict.render_markdown(report)
    assert md.count("- **test t/test_bp.py**: `passed` → `failed`") == 1
    assert "tests (200): `test_load[0]`" in md
    assert md.count("- **test t/test_other.py**:") == 1
    assert len(md.splitlines()) < 30
