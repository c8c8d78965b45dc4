"""The package a team installs: the wheel holds every module and data file, and it works.

The wheel is built with ``python -m build`` from a copy of the sources (so the checkout gets
no build/ or egg-info), installed into a fresh virtualenv outside the checkout, and used there
the way a team's CI would: the gate's and the scanner's command lines, and a plain pytest run
with the ``pytest11`` capture plugin the package registers (a plugin that fails to load makes
*every* pytest in that environment exit 3).

Needs ``build`` and ``uv`` (the nox tests session installs both). Without them the tests skip
with the reason; ``REQUIRE_PACKAGE_BUILD=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kernels", "compat", "matrix")
# What the wheel must hold besides modules: the files the code reads at run time.
DATA_GLOBS = ("matrix/data/*.toml", "matrix/probes/*/*.toml", "kernels/data/*.toml",
              "matrix/report/templates/*")  # fmt: skip


def _missing(message: str) -> None:
    if os.environ.get("REQUIRE_PACKAGE_BUILD") == "1":
        pytest.fail(f"REQUIRE_PACKAGE_BUILD=1 but {message}", pytrace=False)
    pytest.skip(message)


def _run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _check(proc: subprocess.CompletedProcess[str], what: str) -> str:
    assert proc.returncode == 0, (
        f"{what}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("build") is None:
        _missing("the 'build' package is not installed (python -m build)")
    if shutil.which("uv") is None and importlib.util.find_spec("uv") is None:
        _missing("uv is not installed (it makes the build and the fresh venv)")
    src = tmp_path_factory.mktemp("src")
    shutil.copy2(ROOT / "pyproject.toml", src)
    shutil.copy2(ROOT / "README.md", src)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    _check(
        _run([sys.executable, "-m", "build", "--installer", "uv", "--outdir", str(out), "."], src),
        "python -m build",
    )
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {out}, found {wheels}"
    return wheels[0]


def _uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the wheel and pytest, and nothing else (no Triton, no torch)."""
    where = tmp_path_factory.mktemp("venv")
    env_dir = where / "env"
    _check(_run([*_uv(), "venv", "-q", "--python", sys.executable, str(env_dir)], where), "venv")
    python = env_dir / "bin" / "python"
    _check(
        _run(
            [*_uv(), "pip", "install", "-q", "--python", str(python), str(wheel), "pytest"], where
        ),
        "install the wheel",
    )
    return python


@pytest.mark.slow
def test_wheel_holds_every_module_and_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        p.relative_to(ROOT).as_posix()
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    expected |= {p.relative_to(ROOT).as_posix() for g in DATA_GLOBS for p in ROOT.glob(g)}
    assert len(expected) > 100, expected  # the globs found the sources
    missing = sorted(expected - names)
    assert not missing, f"{len(missing)} files missing from {wheel.name}: {missing[:20]}"


@pytest.mark.slow
@pytest.mark.parametrize("module", ["matrix.scan", "matrix.gate"])
def test_installed_command_lines_answer_help(venv: Path, module: str, tmp_path: Path) -> None:
    out = _check(_run([str(venv), "-m", module, "--help"], tmp_path), f"python -m {module}")
    assert "usage:" in out, out
    # It ran the installed copy, not the checkout.
    where = _check(
        _run([str(venv), "-c", f"import {module}; print({module}.__file__)"], tmp_path), "where"
    )
    assert str(venv.parent.parent) in where and str(ROOT) not in where, where


@pytest.mark.slow
def test_plain_pytest_with_the_installed_plugin(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_trivial.py").write_text(
        "def test_plugin_loaded(pytestconfig):\n"
        "    assert pytestconfig.pluginmanager.has_plugin('matrix.measure.capture')\n"
        "    assert 1 + 1 == 2\n",
        encoding="utf-8",
    )
    out = _check(
        _run([str(venv), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_trivial.py"],
             tmp_path),
        "a plain pytest in the installed environment",
    )  # fmt: skip
    assert "1 passed" in out, out


def test_capture_plugin_imports_nothing_heavy() -> None:
    """The plugin loads in every pytest of an environment that has the package: it must cost
    nothing there (no Triton, torch, numpy or Jinja2 until a cell asks for launches)."""
    heavy = ("triton", "torch", "numpy", "jinja2")
    code = (
        "import sys, matrix.measure.capture\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    )
    proc = _run([sys.executable, "-c", code], ROOT)
    assert _check(proc, "import the plugin").strip() == "[]"
