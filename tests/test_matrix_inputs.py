"""What a user's environment and command line cannot make the matrix record wrongly (issue 40):
another Triton first on PYTHONPATH, a release that does not exist. Stand-in probes
(tests/fixtures/probes) and a stand-in Triton package keep every test to seconds."""

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.measure import orchestrate, triton_identity
from matrix.measure.envs import Install
from matrix.results import partial_path, read_raw

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = importlib.metadata.version("triton")  # the suite's own Triton: the cell's release


def _shadow(folder: Path, version: str, metadata: bool = False) -> Path:
    """A folder holding another Triton (``triton/__init__.py`` saying ``version``), and with
    ``metadata`` its distribution's metadata too, as a copied site-packages would."""
    (folder / "triton").mkdir(parents=True)
    (folder / "triton" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    if metadata:
        info = folder / f"triton-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: triton\nVersion: {version}\n")
    return folder


def _runner(out: Path, pythonpath: list[Path], *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MATRIX_PROBE_PACKAGE": "tests.fixtures.probes",
           "FIXTURE_PROBES": "ok_first,ok_last",
           "PYTHONPATH": os.pathsep.join(map(str, [*pythonpath, ROOT]))}  # fmt: skip
    cmd = [sys.executable, "-m", "matrix", "run", "--out", str(out), "--backends", "interpret",
           "--quiet", "--release", INSTALLED, *extra]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_a_cell_whose_probes_import_another_triton_is_refused_naming_both(tmp_path):
    shadow = _shadow(tmp_path / "shadow", "3.0.0")
    out = tmp_path / "raw.json"
    done = _runner(out, [shadow])
    assert done.returncode == 3, done.stderr  # runner.EXIT_WRONG_TRITON
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"labelled triton {INSTALLED}" in lines[0]
    assert str(shadow / "triton" / "__init__.py") in lines[0]  # the other one, by its file
    assert f"the environment's triton {INSTALLED}" in lines[0]  # and the cell's
    # Nothing measured is kept: no raw file, and no partial one that a resume would finish.
    assert not out.exists() and not partial_path(out).exists()


def test_a_distribution_of_another_triton_first_on_the_path_is_refused_before_any_probe(
    tmp_path,
):
    shadow = _shadow(tmp_path / "shadow", "3.0.0", metadata=True)
    done = _runner(tmp_path / "raw.json", [shadow])
    assert done.returncode == 3, done.stderr
    assert f"distribution found first is 3.0.0 in {shadow}, not {INSTALLED}" in done.stderr


def test_every_complete_cell_says_which_triton_its_probes_imported(tmp_path):
    out = tmp_path / "raw.json"
    done = _runner(out, [])
    assert done.returncode == 0, done.stderr
    seen = read_raw(out).extra["triton_imported"]
    assert seen["distribution"] == INSTALLED
    # Found where the environment's distribution keeps it, relative to the prefix: the same
    # on every machine (the stand-in probes import no Triton, so it is located, not imported).
    assert seen["file"].endswith("site-packages/triton/__init__.py"), seen
    assert not Path(seen["file"]).is_absolute()


def test_an_imported_triton_of_another_version_is_named_with_the_cells():
    dist = triton_identity.distribution()
    assert dist is not None
    other = triton_identity.Identity("/elsewhere/triton/__init__.py", "3.8.0", True)
    why = triton_identity.mismatch(other, INSTALLED, dist)
    assert why is not None and "imported triton 3.8.0 from /elsewhere" in why
    assert f"triton {INSTALLED} is in {dist.root}" in why
    # The same version from another folder is still another package (a development build).
    same = triton_identity.Identity("/elsewhere/triton/__init__.py", INSTALLED, True)
    assert "not the environment's triton" in (triton_identity.mismatch(same, INSTALLED, dist) or "")
    import triton

    ours = triton_identity.Identity(triton.__file__, triton.__version__, True)
    assert triton_identity.mismatch(ours, INSTALLED, dist) is None


def test_the_matrix_leaves_another_triton_on_pythonpath_out_of_every_cell(tmp_path):
    plain, shadow = tmp_path / "plain", _shadow(tmp_path / "shadow", "3.8.0")
    plain.mkdir()
    env = {"PYTHONPATH": os.pathsep.join([str(shadow), str(plain)]), "HOME": "/h"}
    kept, dropped = triton_identity.without_shadowing(env)
    assert dropped == [str(shadow)]
    assert kept == {"PYTHONPATH": str(plain), "HOME": "/h"}
    assert triton_identity.without_shadowing({"HOME": "/h"}) == ({"HOME": "/h"}, [])


def test_a_refused_cell_is_recorded_unfinished_so_the_gate_cannot_use_it(tmp_path, capsys):
    """The matrix's side of a refusal: the runner's line becomes the cell's install error,
    incomplete (the next run measures it again); a complete raw file from before is kept."""
    from matrix.measure import runner
    from matrix.measure.cells import load_matrix, plan

    cell = plan(load_matrix(), releases=[INSTALLED], numpys=[load_matrix().numpy[0]])[0]
    out = cell.raw_path(tmp_path)
    said = f"{runner.REFUSED}cell labelled triton {INSTALLED}: a probe process imported 3.8.0"
    outcome = orchestrate._wrong_triton(
        cell, f"noise\n{said}\n", out, orchestrate.CellOutcome(cell), 0.0, orchestrate.Progress(1)
    )
    run = read_raw(out)
    assert outcome.failed and run.install["status"] == "error" and not run.complete
    assert run.install["detail"] == said.removeprefix(runner.REFUSED)
    assert "imported 3.8.0" in capsys.readouterr().out


def test_an_unknown_release_and_one_too_old_are_the_same_mistake(tmp_path, monkeypatch, capsys):
    """Both exit 2 with one line listing the known releases: one older than the harness
    supports is refused up front, one the package index lacks once its install says so."""
    from matrix.core import NO_SUCH_RELEASE
    from matrix.measure.cells import load_matrix

    known = ", ".join(map(str, sorted(load_matrix().releases)))
    base = ["--raw-dir", str(tmp_path / "raw"), "--envs-dir", str(tmp_path / "envs"),
            "--no-report", "--jobs", "1"]  # fmt: skip
    assert orchestrate.main([*base, "--releases", "2.3.1"]) == 2
    old = capsys.readouterr().err.strip().splitlines()
    assert len(old) == 1 and "2.3.1 older than" in old[0] and known in old[0], old

    def no_such(spec, path, log=print):
        return Install(NO_SUCH_RELEASE, 0.1, f"triton=={spec.triton} does not exist", None)

    monkeypatch.setattr(orchestrate, "ensure_env", no_such)
    assert orchestrate.main([*base, "--releases", "3.10.0", "--numpy", "2.4.6"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "no such release" in err[0] and "3.10.0" in err[0], err
    assert known in err[0]
    assert not list((tmp_path / "raw").glob("*.json*"))  # no column for a typo


def test_a_team_suite_run_writes_outside_the_committed_reports(tmp_path, monkeypatch):
    """``--tests`` without ``--raw-dir``: raw files and pages go to team-results/, which
    starts each cell from the committed one (its probes kept, only the suite to run), so that
    reports/raw and the pages stay as committed. An explicit --raw-dir is taken as given."""
    from matrix.gate import session
    from matrix.gate.verdict import parser
    from matrix.measure.cells import load_matrix, plan

    suite = tmp_path / "suite"
    suite.mkdir()
    args = orchestrate.parse_args(["--tests", str(suite)])
    assert args.raw_dir == orchestrate.TEAM_RAW and args.seed_from_committed
    assert not args.raw_dir.resolve().is_relative_to((ROOT / "reports").resolve())
    plain = orchestrate.parse_args([])
    assert plain.raw_dir == orchestrate.DEFAULT_RAW and not plain.seed_from_committed
    given = orchestrate.parse_args(["--tests", str(suite), "--raw-dir", str(tmp_path / "r")])
    assert given.raw_dir == tmp_path / "r" and not given.seed_from_committed
    # The nox gate session reads back the folder the matrix wrote.
    monkeypatch.setattr(orchestrate, "main", lambda argv: 0)
    read = parser(session=True).parse_args
    team = session.resolve(read(["--baseline", "3.8.0", "--candidate", "3.9.0", "--tests", "t/"]))
    assert team.results == str(orchestrate.TEAM_RAW)
    ours = session.resolve(read(["--baseline", "3.8.0", "--candidate", "3.9.0"]))
    assert ours.results == str(orchestrate.DEFAULT_RAW)

    # The team's cell starts as a copy of the committed one, which is never written.
    config = load_matrix()
    cell = plan(config, releases=[config.newest], numpys=[config.aot_numpy])[0]
    committed = cell.raw_path(orchestrate.DEFAULT_RAW)
    before = committed.read_bytes()
    out = cell.raw_path(tmp_path / "team")
    assert "started from the committed" in orchestrate.seed_from_committed(out, cell)
    assert out.read_bytes() == before
    # With the suite asked for, the copy is completed in place (the suite runs, probes kept).
    assert orchestrate.existing_state(out, cell, args.suite) == "partial"
    assert orchestrate.seed_from_committed(out, cell) == ""  # never over a team's own file
    assert committed.read_bytes() == before


# A Python with neither schema library: each is made unimportable before the command runs.
WITHOUT_VALIDATORS = (
    "import runpy, sys; sys.modules['fastjsonschema'] = None; sys.modules['jsonschema'] = None; "
    "sys.argv = sys.argv[1:]; runpy.run_module(sys.argv[0], run_name='__main__')"
)


README_SCAN = ["matrix", "scan", "kernels", "--results", "reports/raw", "--candidate", "3.9.0"]
README_GATE = ["matrix", "gate", "--baseline", "3.8.0", "--candidate", "3.9.0", "--results",
               "reports/raw", "--scan", "kernels"]  # fmt: skip


@pytest.mark.parametrize("command", [README_SCAN, README_GATE], ids=["scan", "gate"])
def test_no_schema_validator_is_one_line_naming_the_install_once(command, tmp_path):
    """The README's scan and gate on a Python without fastjsonschema (issue 40: one 6.5 kB line
    repeating the hint per raw file): exit 2, the hint once, naming the Python and the fix."""
    extra = ["--out", str(tmp_path / "gate")] if command[1] == "gate" else []
    done = subprocess.run([sys.executable, "-c", WITHOUT_VALIDATORS, *command, *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert said.count("neither fastjsonschema nor jsonschema") == 1, said
    assert "pip install -e ." in said and sys.executable in said and "Traceback" not in said
    assert len(said) < 1500, said  # no line per raw file
