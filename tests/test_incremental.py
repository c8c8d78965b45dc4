"""A new probe costs only itself: the matrix completes recorded cells in place.

The catalog is a fixture package (tests/fixtures/probes/incremental, copied to a temporary
folder so that the test can edit a probe's source) whose probes write the run's ``PROBE_MARK``
into their detail: a result's mark says which run measured it. Two cells (one release, two
numpys) in real environments, as ``nox -s matrix`` builds them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.catalog import ProbeSpec
from matrix.measure import incremental, probe_hashes
from matrix.results import Result, Run, read_raw

ROOT = Path(__file__).resolve().parent.parent
CELLS = ("triton-3.9.0-numpy-2.3.5", "triton-3.9.0-numpy-2.4.6")
PACKAGE = "incremental_probes"


@pytest.fixture(scope="module")
def envs_dir(matrix_envs_dir: Path) -> Path:
    return matrix_envs_dir  # shared with the other modules that build cells (conftest.py)


def _matrix(tmp: Path, envs: Path, probes: str, mark: str, *args: str) -> str:
    env = {**os.environ, "MATRIX_PROBE_PACKAGE": PACKAGE, "INCREMENTAL_PROBES": probes,
           "PROBE_MARK": mark, "PYTHONPATH": f"{tmp / 'pkg'}{os.pathsep}{ROOT}"}  # fmt: skip
    cmd = [sys.executable, "-m", "matrix.measure.orchestrate", "--releases", "3.9.0",
           "--numpy", "2.3.5,2.4.6", "--raw-dir", str(tmp / "raw"), "--envs-dir", str(envs),
           "--no-report", "--jobs", "1", "--timeout", "60", *args]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _notes(out: str) -> dict[str, str]:
    """Per cell, what its progress line says was done (the bracketed note)."""
    found = {}
    for line in out.splitlines():
        if "] done " in line:
            cell = line.split("] done ", 1)[1].split()[1].rstrip(":")
            found[cell] = line[line.index(" [", line.index("(")) + 2 : -1] if " [" in line else ""
    return found


def _marks(tmp: Path) -> dict[str, dict[str, str]]:
    """Per cell, per probe: the mark of the run that measured it."""
    out = {}
    for cell in CELLS:
        run = read_raw(tmp / "raw" / f"{cell}.json.gz")
        assert run.complete, cell
        out[cell] = {r.probe: r.detail.removeprefix("mark ") for r in run.results}
    return out


@pytest.mark.slow
def test_a_new_or_changed_probe_is_measured_alone_in_every_cell(tmp_path, envs_dir):
    shutil.copytree(ROOT / "tests/fixtures/probes/incremental", tmp_path / "pkg" / PACKAGE)
    _matrix(tmp_path, envs_dir, "first", "1")
    assert _marks(tmp_path) == {c: {"first": "1"} for c in CELLS}

    # A probe added to the catalog: a plain rerun measures it, and only it, in every cell.
    out = _matrix(tmp_path, envs_dir, "first,added", "2")
    assert _notes(out) == dict.fromkeys(CELLS, "completed in place: lacks added"), out
    assert _marks(tmp_path) == {c: {"first": "1", "added": "2"} for c in CELLS}
    hashes = [read_raw(tmp_path / "raw" / f"{c}.json.gz").extra["probe_hashes"] for c in CELLS]
    assert all(set(h) == {"first", "added"} for h in hashes), hashes

    # Up to date: nothing runs.
    out = _matrix(tmp_path, envs_dir, "first,added", "3")
    assert _notes(out) == {} and out.count("[kept: already complete]") == 2, out

    # A probe's source changes: only that probe is measured again.
    source = tmp_path / "pkg" / PACKAGE / "first.py"
    source.write_text(source.read_text() + "CHANGED = True\n")
    out = _matrix(tmp_path, envs_dir, "first,added", "4")
    assert _notes(out) == dict.fromkeys(CELLS, "completed in place: first changed since measured")
    assert _marks(tmp_path) == {c: {"first": "4", "added": "2"} for c in CELLS}

    # --probes NAME measures just that one again, in every selected cell.
    out = _matrix(tmp_path, envs_dir, "first,added", "5", "--probes", "added")
    assert _notes(out) == dict.fromkeys(CELLS, "completed in place: --probes added"), out
    assert _marks(tmp_path) == {c: {"first": "4", "added": "5"} for c in CELLS}


def test_unknown_probe_names_are_refused(tmp_path):
    cmd = [sys.executable, "-m", "matrix.measure.orchestrate", "--probes", "splitk,no_such",
           "--raw-dir", str(tmp_path / "raw"), "--no-report"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--probes: unknown probe(s) ['no_such']" in proc.stderr
    assert not (tmp_path / "raw").exists()


SPECS = (ProbeSpec("a", "a", ("pass",), ("interpret",)), ProbeSpec("b", "b", ("pass",), ("aot",)))


def _run(results: list[Result], hashes: dict[str, str] | None = None) -> Run:
    extra = {"complete": True} | ({"probe_hashes": hashes} if hashes is not None else {})
    return Run(id="triton-3.9.0-numpy-2.4.6", results=results, extra=extra)


def test_staleness_is_missing_changed_or_unknown():
    a = Result("a", "interpret", None, "pass")
    b = [Result("b", "aot", t, "pass") for t in ("cuda:80", "cuda:90", "hip:gfx942")]
    current = {"a": "h-a", "b": "h-b"}
    # An interpreter-only cell does not lack the aot probe.
    assert incremental.staleness(_run([a], {"a": "h-a"}), SPECS, current).stale == ()
    # In a cell with aot, one target short is missing.
    state = incremental.staleness(_run([a, *b[:2]], {"a": "h-a"}), SPECS, current)
    assert state.missing == ("b",) and state.changed == ()
    state = incremental.staleness(_run([a, *b], {"a": "old", "b": "h-b"}), SPECS, current)
    assert state.stale == ("a",) and state.describe() == "a changed since measured"
    # Measured before hashes were kept: unknown, kept as current.
    state = incremental.staleness(_run([a, *b]), SPECS, current)
    assert state.stale == () and state.unknown == ("a", "b")
    # An install that failed recorded nothing: the install says so, not the catalog.
    assert incremental.staleness(_run([]), SPECS, current) == incremental.Staleness()


def test_committed_cells_are_up_to_date_with_the_catalog():
    """Every committed CPU cell is up to date with the catalog (a raw file without hashes is
    never stale for that alone, and none lacks a probe). GPU rows are re-measured only on a
    GPU (docs/gpu.md): one measured with an older probe is allowed, but stale_cells must name
    it and the probe, so verify and the pages say so rather than pass it for current."""
    from matrix.analyze.verify import stale_cells
    from matrix.results import read_folder

    runs, unreadable = read_folder(ROOT / "reports" / "raw")
    assert runs and not unreadable
    found, unknown = stale_cells(runs, incremental.current_catalog())
    cpu = [line for line in found if "-gpu-" not in line.split(":", 1)[0]]
    assert cpu == []
    gpu_ids = {r.id for r in runs if r.env.get("gpu")}
    assert all(line.split(":", 1)[0] in gpu_ids and "changed since measured" in line
               for line in found)  # fmt: skip
    assert unknown == sum(1 for r in runs if "probe_hashes" not in r.extra)


def test_hash_follows_source_and_row(tmp_path, monkeypatch):
    pkg = tmp_path / "hpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = probe_hashes.probe_hash(SPECS[0], "hpkg")
    assert before == probe_hashes.probe_hash(SPECS[0], "hpkg")
    other_row = ProbeSpec("a", "a", ("pass", "fail"), ("interpret",))
    assert probe_hashes.probe_hash(other_row, "hpkg") != before
    (pkg / "a.py").write_text("x = 2\n")
    assert probe_hashes.probe_hash(SPECS[0], "hpkg") != before
    with pytest.raises(LookupError, match=r"no module hpkg\.missing"):
        probe_hashes.probe_hash(ProbeSpec("missing", "m", ("pass",), ("interpret",)), "hpkg")


def _folder_package(tmp_path: Path, name: str, probes: str = "") -> Path:
    """A probe package in the catalog's layout: ``<name>/a/probe.py`` (``x = 1``)."""
    (tmp_path / name / "a").mkdir(parents=True)
    (tmp_path / name / "__init__.py").write_text(probes)
    (tmp_path / name / "a" / "__init__.py").write_text("")
    (tmp_path / name / "a" / "probe.py").write_text("x = 1\n")
    return tmp_path / name / "a" / "probe.py"


def test_a_version_stands_for_the_code_hash_and_a_code_change_under_it_is_listed(
    tmp_path, monkeypatch
):
    """asv's rule: a probe.toml ``version`` is what a raw file records, whatever the code, so
    a move or a type-only edit re-measures nothing; the code hash recorded beside it says
    when the code moved on ("code changed, version did not"), for review."""
    from dataclasses import replace

    module = _folder_package(tmp_path, "vpkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = SPECS[0]
    code = probe_hashes.code_hash(spec, "vpkg")
    assert probe_hashes.probe_hash(spec, "vpkg") == code  # no version: the code hash
    versioned = replace(spec, version="v1", code_hash=code)
    assert probe_hashes.probe_hash(versioned, "vpkg") == "v1"
    assert probe_hashes.versions_behind([spec, versioned], "vpkg") == []
    module.write_text("x: int = 1\n")  # a type-only edit
    assert probe_hashes.probe_hash(versioned, "vpkg") == "v1"
    now = probe_hashes.code_hash(spec, "vpkg")
    assert now != code and probe_hashes.probe_hash(spec, "vpkg") == now
    assert probe_hashes.versions_behind([spec, versioned], "vpkg") == [
        f"a: code changed, version did not (version v1, code_hash {code} recorded beside it, "
        f"now {now})"
    ]
    # The row counts too (a new status), its usage entry does not.
    widened = replace(versioned, code_hash=now, statuses=("pass", "fail"))
    assert len(probe_hashes.versions_behind([widened], "vpkg")) == 1
    remapped = replace(versioned, code_hash=now, usage={"never": "why"})
    assert probe_hashes.versions_behind([remapped], "vpkg") == []


def test_the_version_check_prints_each_probe_behind_for_review(tmp_path):
    _folder_package(tmp_path, "clipkg", (
        "from matrix.catalog import ProbeSpec\n"
        "PROBES = (ProbeSpec('a', 'a', ('pass',), ('interpret',), version='v1',\n"
        "                   code_hash='0000000000000000'),)\n"
    ))  # fmt: skip
    env = {**os.environ, "MATRIX_PROBE_PACKAGE": "clipkg",
           "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}  # fmt: skip
    cmd = [sys.executable, "-m", "matrix.measure.probe_hashes"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr  # for review: a type-only edit needs no re-measure
    assert proc.stdout.startswith(
        "a: code changed, version did not (version v1, code_hash "
        "0000000000000000 recorded beside it, now "
    ), proc.stdout
    proc = subprocess.run([*cmd, "--bogus"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "--bogus" in proc.stderr


def test_comments_blank_lines_and_docstrings_do_not_make_a_probe_stale(tmp_path, monkeypatch):
    """Editing a comment or a docstring (module, class, function, a kernel's) changes no
    result, so it re-measures nothing; a string that is code (an assignment, an argument, a
    statement after the docstring) and any code edit still do."""
    pkg = tmp_path / "dpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    code = 'class K:\n    def f(self):\n        return g("mode")\n'
    (pkg / "a.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = SPECS[0]
    before = probe_hashes.probe_hash(spec, "dpkg")
    documented = (
        '"""Module docstring."""\n# a comment\n\n'
        'class K:\n    """Class docstring."""\n\n    def f(self):  # why\n'
        '        """Function docstring,\n        on two lines."""\n        return g("mode")\n'
    )
    (pkg / "a.py").write_text(documented)
    assert probe_hashes.probe_hash(spec, "dpkg") == before
    for edit in (
        code.replace('"mode"', '"other"'),
        code.replace("return", "x = 'text'\n        return"),
        code + "VALUE = 'a.toml'\n",
        code.replace("g(", "h("),
    ):
        (pkg / "a.py").write_text(edit)
        assert probe_hashes.probe_hash(spec, "dpkg") != before, edit


def test_code_of_keeps_every_string_and_drops_only_comments_and_docstrings():
    code = probe_hashes.code_of
    base = b'x = "a # b"\ny = f"{x!r:>{w}} # c"\nz = """\n\n  kept\n"""\n'
    assert code(base) == code(base.replace(b"\n", b"  # note\n", 1))  # a comment added
    for edit in (
        base.replace(b"a # b", b"a # B"),  # after a '#' inside a string
        base.replace(b"# c", b"# C"),  # after a '#' inside an f-string
        base.replace(b'"""\n\n', b'"""\n'),  # a blank line of a string
        base.replace(b"kept", b"kept "),  # a blank inside a string, at its line's end
    ):
        assert code(edit) != code(base), edit


def _other_pythons() -> list[str]:
    """One interpreter of each other Python 3.12+ that runs here, on PATH or among pyenv's
    versions (a pyenv shim of a version that is not selected exits 127: it is passed over)."""
    import glob
    import shutil

    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = []
    for version in ("3.12", "3.13", "3.14"):
        if sys.version.startswith(version + "."):
            continue
        candidates = [shutil.which(f"python{version}")]
        candidates += sorted(glob.glob(f"{pyenv}/versions/{version}*/bin/python{version}"))
        for python in filter(None, candidates):
            if subprocess.run([python, "-c", "import sys"], capture_output=True).returncode == 0:
                found.append(python)
                break
    return found


def test_code_of_is_the_same_on_every_python_here(tmp_path):
    """The GPU rows are recorded by the lease's Python 3.12, the CPU rows by this one: every
    source of ours must give the same code on both, or the GPU rows read stale (they did,
    when tokens were hashed: 3.12 tokenizes f-strings anew)."""
    import hashlib
    import shutil

    import packaging

    others = _other_pythons()
    if not others:
        pytest.skip("no other Python 3.12+ runs on this machine to compare with")
    shutil.copytree(Path(packaging.__file__).parent, tmp_path / "packaging")
    script = (
        "import hashlib, pathlib, sys\n"
        "from matrix.measure.probe_hashes import code_of\n"
        "for top in ('matrix', 'kernels', 'compat'):\n"
        "    for p in sorted(pathlib.Path(top).rglob('*.py')):\n"
        "        print(p, hashlib.sha256(code_of(p.read_bytes())).hexdigest())\n"
    )
    want = {
        str(p.relative_to(ROOT)): hashlib.sha256(probe_hashes.code_of(p.read_bytes())).hexdigest()
        for top in ("matrix", "kernels", "compat")
        for p in sorted((ROOT / top).rglob("*.py"))
    }
    assert len(want) > 100
    for python in others:
        out = subprocess.run(
            [python, "-c", script],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"},
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        got = dict(line.split(" ", 1) for line in out.stdout.splitlines())
        assert got == want, python


def test_hash_follows_what_the_probe_imports_and_the_data_it_names(tmp_path, monkeypatch):
    """A kernel or support module the probe imports (at the top, in a function, relatively,
    through another module) and a data file they name are its sources; an unrelated module
    and a third-party import are not."""
    pkg = tmp_path / "ipkg"  # not hpkg: the test above left that one in sys.modules
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    lazy = "def f():\n    from ipkg.deep import g\n"
    (pkg / "a.py").write_text("import json\nfrom . import rel\n\n" + lazy)
    (pkg / "rel.py").write_text("x = 1\n")
    (pkg / "deep.py").write_text("from ipkg import leaf\nTABLE = 'table.toml'\n")
    (pkg / "leaf.py").write_text("y = 1\n")
    (pkg / "other.py").write_text("z = 1\n")
    (pkg / "data" / "table.toml").write_text("a = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = SPECS[0]
    before = probe_hashes.probe_hash(spec, "ipkg")
    (pkg / "other.py").write_text("z = 2\n")
    assert probe_hashes.probe_hash(spec, "ipkg") == before
    for changed in ("rel.py", "deep.py", "leaf.py", "data/table.toml"):
        (pkg / changed).write_text((pkg / changed).read_text() + "edited = 1\n")
        now = probe_hashes.probe_hash(spec, "ipkg")
        assert now != before, f"an edit of {changed} left the hash as it was"
        before = now


def test_a_kernel_edit_makes_the_kernel_probes_stale_and_no_other():
    """On the real catalog: splitk's sources hold the split-K kernel and its tuned table,
    api_surface's do not."""
    from pathlib import Path

    closure = probe_hashes.source_closure(
        "matrix.probes.splitk.probe",
        Path("matrix/probes/splitk/probe.py"),
        set(probe_hashes.OWN_PACKAGES),
    )
    assert {"kernels.splitk", "kernels.fused", "compat"} <= set(closure)
    assert "data:kernels/data/splitk_tuned.toml" in probe_hashes.data_files(closure)
    census = probe_hashes.source_closure(
        "matrix.probes.api_surface.probe", Path("matrix/probes/api_surface/probe.py"),
        set(probe_hashes.OWN_PACKAGES),
    )  # fmt: skip
    assert not any(name.startswith("kernels") for name in census)


def test_cells_of_one_run_share_the_catalog_hashes_until_a_file_changes(tmp_path, monkeypatch):
    """The run cache holds the hashes (parsing the probes' modules was ~1 s in every cell),
    keyed by every file they can read: an edit anywhere in the package is hashed afresh, and
    the shared hashes are those computed without the cache."""
    pkg = tmp_path / "cpkg"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cpkg import b\n")
    (pkg / "b.py").write_text("T = 'table.toml'\n")
    (pkg / "data" / "table.toml").write_text("a = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    uncached = probe_hashes.catalog_hashes(SPECS[:1], "cpkg")
    monkeypatch.setenv("MATRIX_RUN_CACHE", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    assert probe_hashes.catalog_hashes(SPECS[:1], "cpkg") == uncached
    assert len(list((tmp_path / "run" / "probe-hashes").iterdir())) == 1
    assert probe_hashes.catalog_hashes(SPECS[:1], "cpkg") == uncached  # read back
    for changed in ("b.py", "data/table.toml"):
        (pkg / changed).write_text((pkg / changed).read_text() + "edited = 1\n")
        now = probe_hashes.catalog_hashes(SPECS[:1], "cpkg")
        assert now != uncached, f"an edit of {changed} was served the cached hash"
        monkeypatch.delenv("MATRIX_RUN_CACHE")
        assert probe_hashes.catalog_hashes(SPECS[:1], "cpkg") == now
        monkeypatch.setenv("MATRIX_RUN_CACHE", str(tmp_path / "run"))
        uncached = now
