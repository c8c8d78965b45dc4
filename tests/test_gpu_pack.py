"""The slim-package recipe, on a small stand-in wheel built here (no network, no GPU)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from matrix.backends import gpu_pack

needs_binutils = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("gcc", "strip", "readelf", "xz", "tar")),
    reason="gcc, strip, readelf, xz and tar are needed to build and pack the stand-in",
)

PTXAS_39 = """
def get_ptxas(arch: int) -> knobs.NvidiaTool:
    if arch < 90:
        return knobs.nvidia.ptxas
    return knobs.nvidia.ptxas_blackwell
"""
PTXAS_36 = """
def get_ptxas(arch: int) -> knobs.NvidiaTool:
    return knobs.nvidia.ptxas_blackwell if arch >= 100 else knobs.nvidia.ptxas
"""
PTXAS_33 = """
@functools.lru_cache()
def get_ptxas(arch: int):
    name = "ptxas-blackwell" if arch >= 100 else "ptxas"
    return _path_to_binary(name)
"""
PTXAS_34 = "def get_ptxas() -> knobs.NvidiaTool:\n    return knobs.nvidia.ptxas\n"
PTXAS_30 = "def _path_to_binary(binary):\n    return binary\n"


@pytest.mark.parametrize(
    ("source", "want"),
    [
        (PTXAS_39, "ptxas-blackwell"),
        (PTXAS_36, "ptxas"),
        (PTXAS_34, "ptxas"),
        (PTXAS_33, "ptxas"),
        (PTXAS_30, None),
    ],
)
def test_ptxas_is_read_from_the_release_code(source: str, want: str | None) -> None:
    assert gpu_pack.ptxas_for(source, 90) == want


def test_ptxas_above_sm100_follows_the_same_code() -> None:
    assert gpu_pack.ptxas_for(PTXAS_36, 100) == "ptxas-blackwell"


def test_the_real_recipe_keeps_the_launcher_headers() -> None:
    recipe = gpu_pack.load_recipe()
    header = "triton/backends/nvidia/include/cuda.h"
    assert header in recipe.keep
    assert not any(gpu_pack.matches(header, p) for r in recipe.drops for p in r.paths)
    # The AMD backend's Python files stay: its entry point is imported at startup.
    assert not any(
        gpu_pack.matches("triton/backends/amd/compiler.py", p)
        for r in recipe.drops
        for p in r.paths
    )


def _elf(tmp: Path) -> bytes:
    """A small shared library with symbols and a build id, like libtriton.so."""
    src = tmp / "lib.c"
    src.write_text("int triton_fn(int x) { return x + 1; }\nstatic int local_sym = 3;\n")
    out = tmp / "lib.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-g", "-Wl,--build-id", "-o", str(out), str(src)],
                   check=True)  # fmt: skip
    return out.read_bytes()


def stand_in_wheel(tmp: Path, version: str, ptxas_source: str) -> Path:
    files: dict[str, tuple[bytes, int]] = {
        "triton/__init__.py": (f'__version__ = "{version}"\n'.encode(), 0o644),
        f"triton-{version}.dist-info/METADATA": (
            f"Name: triton\nVersion: {version}\n".encode(),
            0o644,
        ),
        "triton/_C/libtriton.so": (_elf(tmp), 0o755),
        "triton/_C/libproton.so": (b"proton" * 100, 0o755),
        "triton/profiler/__init__.py": (b"", 0o644),
        "triton/backends/amd/compiler.py": (b"# amd entry point\n", 0o644),
        "triton/backends/amd/lib/ocml.bc": (b"bc" * 100, 0o644),
        "triton/backends/amd/include/hip/hip.h": (b"// hip\n", 0o644),
        "triton/backends/nvidia/compiler.py": (ptxas_source.encode(), 0o644),
        "triton/backends/nvidia/bin/ptxas": (b"#!/bin/sh\necho legacy\n", 0o755),
        "triton/backends/nvidia/bin/ptxas-blackwell": (b"#!/bin/sh\necho new\n", 0o755),
        "triton/backends/nvidia/bin/nvdisasm": (b"x" * 1000, 0o755),
        "triton/backends/nvidia/bin/cuobjdump": (b"x" * 1000, 0o755),
        "triton/backends/nvidia/include/cuda.h": (b"/* cuda */\n", 0o644),
        "triton/backends/nvidia/lib/libdevice.10.bc": (b"bc", 0o644),
        "triton/backends/nvidia/lib/cupti/libcupti.so": (b"c" * 1000, 0o755),
        "triton/include/triton/Dialect.h": (b"//\n", 0o644),
        "triton/instrumentation/libGPUInstrumentationTestLib.so": (b"t" * 100, 0o755),
    }
    wheel = tmp / f"triton-{version}-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, (data, mode) in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | mode) << 16
            z.writestr(info, data)
    return wheel


def _members(pack: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(pack, "r:xz") as t:
        return {m.name: m for m in t.getmembers() if m.isfile()}


@needs_binutils
def test_recipe_on_a_stand_in_wheel(tmp_path: Path) -> None:
    wheel = stand_in_wheel(tmp_path, "9.9.0", PTXAS_39)
    out = tmp_path / "out"
    target, m = gpu_pack.pack("9.9.0", wheel, out, gpu_pack.load_recipe())
    members = _members(target)
    kept = {n.removeprefix("site/") for n in members}
    assert {
        "triton/__init__.py",
        "triton-9.9.0.dist-info/METADATA",
        "triton/_C/libtriton.so",
        "triton/backends/amd/compiler.py",
        "triton/backends/nvidia/compiler.py",
        "triton/backends/nvidia/include/cuda.h",
        "triton/backends/nvidia/lib/libdevice.10.bc",
        "triton/backends/nvidia/bin/ptxas-blackwell",
        gpu_pack.MANIFEST,
    } == kept
    # the kept ptxas is still executable (zip drops mode bits unless restored)
    assert members["site/triton/backends/nvidia/bin/ptxas-blackwell"].mode & 0o111
    assert m.ptxas["kept"] == ["triton/backends/nvidia/bin/ptxas-blackwell"]
    assert m.ptxas["dropped"] == ["triton/backends/nvidia/bin/ptxas"]
    assert "returns 'ptxas-blackwell'" in m.ptxas["why"]
    (stripped,) = m.stripped
    assert stripped["bytes_after"] < stripped["bytes_before"]
    assert stripped["build_id"]
    dropped = {d["what"]: d["files"] for d in m.dropped}
    assert sum(dropped.values()) == 9
    manifest = json.loads((out / "triton-9.9.0-slim-sm90.json").read_text())
    assert manifest["packed_bytes"] == target.stat().st_size
    assert gpu_pack.describe(target, m).count("dropped") >= 6


@needs_binutils
def test_older_layout_keeps_the_legacy_ptxas(tmp_path: Path) -> None:
    wheel = stand_in_wheel(tmp_path, "9.8.0", PTXAS_36)
    target, m = gpu_pack.pack("9.8.0", wheel, tmp_path / "out", gpu_pack.load_recipe())
    assert m.ptxas["kept"] == ["triton/backends/nvidia/bin/ptxas"]
    assert "site/triton/backends/nvidia/bin/ptxas-blackwell" not in _members(target)


@needs_binutils
def test_a_wheel_of_another_release_is_refused(tmp_path: Path) -> None:
    wheel = stand_in_wheel(tmp_path, "9.9.0", PTXAS_39)
    with pytest.raises(gpu_pack.PackError, match=r"METADATA says version '9\.9\.0', not 9\.9\.1"):
        gpu_pack.pack("9.9.1", wheel, tmp_path / "out", gpu_pack.load_recipe())


@needs_binutils
def test_a_short_release_names_its_wheel(tmp_path: Path) -> None:
    # "3.9" is 3.9.0 everywhere (matrix.core.Release): the 9.9.0 wheel is the one 9.9 asks for.
    wheel = stand_in_wheel(tmp_path, "9.9.0", PTXAS_39)
    target, m = gpu_pack.pack("9.9", wheel, tmp_path / "out", gpu_pack.load_recipe())
    assert m.release == "9.9.0" and target.name.startswith("triton-9.9.0-slim-")


@needs_binutils
def test_over_the_size_limit_fails(tmp_path: Path) -> None:
    text = gpu_pack.RECIPE_PATH.read_text().replace("max_mb = 60", "max_mb = 0.0001")
    recipe_path = tmp_path / "recipe.toml"
    recipe_path.write_text(text)
    wheel = stand_in_wheel(tmp_path, "9.9.0", PTXAS_39)
    with pytest.raises(gpu_pack.PackError, match="over the recipe's max_mb"):
        gpu_pack.pack("9.9.0", wheel, tmp_path / "out", gpu_pack.load_recipe(recipe_path))


@needs_binutils
def test_a_recipe_that_removes_a_kept_path_fails(tmp_path: Path) -> None:
    text = gpu_pack.RECIPE_PATH.read_text().replace(
        'paths = ["triton/include/**"]',
        'paths = ["triton/include/**", "triton/backends/nvidia/include/**"]',
    )
    recipe_path = tmp_path / "recipe.toml"
    recipe_path.write_text(text)
    wheel = stand_in_wheel(tmp_path, "9.9.0", PTXAS_39)
    with pytest.raises(gpu_pack.PackError, match="must stay"):
        gpu_pack.pack("9.9.0", wheel, tmp_path / "out", gpu_pack.load_recipe(recipe_path))


def test_recipe_without_a_reason_is_refused(tmp_path: Path) -> None:
    text = gpu_pack.RECIPE_PATH.read_text().replace(
        'what = "test libraries and tools"', 'what = ""'
    )
    path = tmp_path / "recipe.toml"
    path.write_text(text)
    with pytest.raises(gpu_pack.PackError, match="non-empty 'what'"):
        gpu_pack.load_recipe(path)


def test_a_download_without_pip_says_what_to_run(tmp_path: Path, monkeypatch) -> None:
    # nox's uv-made venv has no pip: the error names the interpreter and the two ways out,
    # before any subprocess runs.
    real = gpu_pack.importlib.util.find_spec
    monkeypatch.setattr(
        gpu_pack.importlib.util, "find_spec", lambda n, *a: None if n == "pip" else real(n, *a)
    )
    monkeypatch.setattr(gpu_pack.subprocess, "run", lambda *a, **k: pytest.fail("ran pip"))
    release = gpu_pack.Release.parse("3.9.0", "release")
    with pytest.raises(
        gpu_pack.PackError, match=r"needs pip.*python3 -m matrix\.backends.*--wheel"
    ):
        gpu_pack.download(release, tmp_path / "wheels", gpu_pack.load_recipe())
