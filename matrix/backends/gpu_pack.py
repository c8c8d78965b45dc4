"""A slim Triton package for a GPU machine with no package registry (issue 15).

    python -m matrix.backends.gpu_pack 3.9.0               # .gpu/pack/triton-3.9.0-slim-sm90.tar.xz
    python -m matrix.backends.gpu_pack 3.9.0 --wheel W.whl # pack a wheel already on disk

A Triton wheel (150-290 MB) is too big to carry to the lent H200 with the tree (64 MiB). The
recipe in ``matrix/data/gpu_pack.toml`` (data: what to drop and why, what to strip, what must
survive) makes it 34-52 MB. Which ptxas the release compiles the target with is read from the
wheel itself: its own ``get_ptxas(arch)`` is evaluated against stand-ins, and the other ptxas
binaries are dropped.

The archive holds ``site/`` (``triton/`` and its ``.dist-info``, so ``importlib.metadata`` sees
the release) and ``site/triton-slim.json``, the manifest: release, wheel, what was dropped per
rule, the ptxas kept and why, the stripped libraries with their build ids before and after.
``python -m matrix.measure.gpu_run`` unpacks it onto ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import functools
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib  # TODO(core): use matrix.core's one TOML loader once it lands
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix import cli
from matrix.core import DATA_DIR, REPO_ROOT, Release, names_release

RECIPE_PATH = DATA_DIR / "gpu_pack.toml"
DEFAULT_OUT = REPO_ROOT / ".gpu" / "pack"
MANIFEST = "triton-slim.json"
MB = 1e6


class PackError(RuntimeError):
    """The package could not be made as the recipe asks; the message says which step and why."""


@dataclass(frozen=True)
class DropRule:
    what: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Recipe:
    python: str
    platforms: tuple[str, ...]
    max_mb: float
    arch: int
    keep: tuple[str, ...]
    strip: tuple[str, ...]
    drops: tuple[DropRule, ...]
    ptxas_binaries: str
    ptxas_chooser: str


def load_recipe(path: Path = RECIPE_PATH) -> Recipe:
    """The recipe, checked: every field present with the right type."""
    try:
        d = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        recipe = Recipe(
            python=str(d["python"]),
            platforms=tuple(d["platforms"]),
            max_mb=float(d["max_mb"]),
            arch=int(d["arch"]),
            keep=tuple(d["keep"]),
            strip=tuple(d["strip"]),
            drops=tuple(DropRule(str(r["what"]), tuple(r["paths"])) for r in d["drop"]),
            ptxas_binaries=str(d["ptxas"]["binaries"]),
            ptxas_chooser=str(d["ptxas"]["chooser"]),
        )
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as e:
        raise PackError(f"recipe {path}: {type(e).__name__}: {e}") from e
    if not recipe.drops or any(not r.what or not r.paths for r in recipe.drops):
        raise PackError(f"recipe {path}: every [[drop]] needs a non-empty 'what' and 'paths'")
    return recipe


def matches(rel: str, pattern: str) -> bool:
    """``dir/**`` matches everything under dir; otherwise a glob over the whole path."""
    if pattern.endswith("/**"):
        return rel.startswith(pattern[:-2])
    return fnmatch.fnmatchcase(rel, pattern)


# --- which ptxas: the release's own answer ------------------------------------------------------


class _Tool(str):
    """Stands in for a knobs.nvidia tool: the binary's name, with the attributes callers read."""

    @property
    def path(self) -> str:
        return str(self)


class _NvidiaKnobs:
    def __getattr__(self, name: str) -> _Tool:
        return _Tool(name.replace("_", "-"))


class _Knobs:
    nvidia = _NvidiaKnobs()


def ptxas_for(compiler_source: str, arch: int) -> str | None:
    """The ptxas binary name the release's ``get_ptxas(arch)`` returns, or None where the
    compiler has no such function (3.0-3.2: one ptxas for every target).

    >>> ptxas_for("def get_ptxas(arch):\\n    return knobs.nvidia.ptxas_blackwell if arch >= 100 "
    ...           "else knobs.nvidia.ptxas", 90)
    'ptxas'
    """
    tree = ast.parse(compiler_source)
    fn = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_ptxas"), None
    )
    if fn is None:
        return None
    fn.decorator_list = []
    fn.returns = None
    for a in fn.args.args:
        a.annotation = None
    namespace: dict[str, Any] = {
        "knobs": _Knobs(),
        "_path_to_binary": lambda name: (_Tool(name), "stand-in version"),
        "os": os,
        "functools": functools,
    }
    exec(compile(ast.Module([fn], []), "<get_ptxas>", "exec"), namespace)
    # 3.4-3.5 spell it get_ptxas() (one ptxas for every target); others take the arch.
    got = namespace["get_ptxas"](arch) if fn.args.args else namespace["get_ptxas"]()
    if isinstance(got, tuple):
        got = got[0]
    return Path(str(got)).name


# --- the steps ---------------------------------------------------------------------------------


def download(release: Release, dest: Path, recipe: Recipe) -> Path:
    """The cp312 manylinux wheel of ``release`` (pip download, no dependencies)."""
    dest.mkdir(parents=True, exist_ok=True)
    existing = sorted(dest.glob(f"triton-{release}-*cp{recipe.python.replace('.', '')}*.whl"))
    if existing:
        return existing[0]
    if importlib.util.find_spec("pip") is None:  # a uv-made venv (nox's) has no pip
        raise PackError(
            f"downloading the triton=={release} wheel needs pip, and {sys.executable} has none: "
            "run this with a Python that has pip (python3 -m matrix.backends.gpu_pack ...), "
            "or give the wheel with --wheel PATH"
        )
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        recipe.python,
        "--implementation",
        "cp",
        "-d",
        str(dest),
    ]
    for p in recipe.platforms:
        cmd += ["--platform", p]
    cmd.append(f"triton=={release}")
    out = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(dest.glob(f"triton-{release}-*.whl"))
    if out.returncode != 0 or not found:
        raise PackError(
            f"download of triton=={release} failed (pip exit {out.returncode}): "
            f"{out.stderr.strip()[-600:]}"
        )
    return found[0]


def build_id(path: Path) -> str | None:
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


def _files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()
    )


@dataclass
class Manifest:
    release: str
    wheel: str
    wheel_sha256: str
    arch: int
    dropped: list[dict[str, Any]] = field(default_factory=list)
    ptxas: dict[str, Any] = field(default_factory=dict)
    stripped: list[dict[str, Any]] = field(default_factory=list)
    unpacked_bytes: int = 0
    packed_bytes: int = 0
    seconds: float = 0.0


def apply_recipe(site: Path, recipe: Recipe, manifest: Manifest) -> None:
    """Drop, choose the ptxas, strip, then check what must survive; all recorded in manifest."""
    files = _files(site)
    for rule in recipe.drops:
        hit = [f for f in files if any(matches(f, p) for p in rule.paths)]
        size = sum((site / f).lstat().st_size for f in hit)
        for f in hit:
            (site / f).unlink()
        files = [f for f in files if f not in set(hit)]
        manifest.dropped.append(
            {
                "what": rule.what,
                "files": len(hit),
                "bytes": size,
                "paths": list(rule.paths) if hit else [],
                "matched_nothing": list(rule.paths) if not hit else [],
            }
        )
    ptxases = [f for f in files if matches(f, recipe.ptxas_binaries)]
    chooser = site / recipe.ptxas_chooser
    try:
        chosen = ptxas_for(chooser.read_text(encoding="utf-8"), recipe.arch)
        why = (
            f"get_ptxas({recipe.arch}) in {recipe.ptxas_chooser} returns {chosen!r}"
            if chosen
            else f"{recipe.ptxas_chooser} has no get_ptxas: kept every ptxas"
        )
    except Exception as e:  # the release's code could not be evaluated: keep every ptxas
        chosen, why = None, f"get_ptxas could not be evaluated ({type(e).__name__}: {e}): kept all"
    if chosen is not None and not any(Path(f).name == chosen for f in ptxases):
        raise PackError(
            f"get_ptxas({recipe.arch}) names {chosen!r}, which the wheel lacks (has {ptxases})"
        )
    drop = [f for f in ptxases if chosen is not None and Path(f).name != chosen]
    size = sum((site / f).stat().st_size for f in drop)
    for f in drop:
        (site / f).unlink()
    manifest.ptxas = {
        "kept": [f for f in ptxases if f not in drop],
        "dropped": drop,
        "dropped_bytes": size,
        "why": why,
    }
    for rel in recipe.strip:
        lib = site / rel
        if not lib.exists():
            raise PackError(f"strip: {rel} is not in the wheel")
        before, bid = lib.stat().st_size, build_id(lib)
        out = subprocess.run(
            ["strip", "--strip-unneeded", str(lib)], capture_output=True, text=True
        )
        if out.returncode != 0:
            raise PackError(f"strip --strip-unneeded {rel}: {out.stderr.strip()}")
        after_id = build_id(lib)
        if bid != after_id:
            raise PackError(f"strip changed {rel}'s build id: {bid} -> {after_id}")
        manifest.stripped.append(
            {
                "path": rel,
                "bytes_before": before,
                "bytes_after": lib.stat().st_size,
                "build_id": bid,
            }
        )
    missing = [k for k in recipe.keep if not (site / k).exists()]
    if missing:
        raise PackError(f"the recipe removed paths that must stay: {missing}")


def pack(
    release: Release | str, wheel: Path, out_dir: Path, recipe: Recipe
) -> tuple[Path, Manifest]:
    """Unpack ``wheel``, apply ``recipe``, write ``triton-<release>-slim-sm<arch>.tar.xz``."""
    release = Release.parse(release, "release")
    t0 = time.monotonic()
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    manifest = Manifest(str(release), wheel.name, digest, recipe.arch)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"triton-{release}-slim-sm{recipe.arch}.tar.xz"
    with tempfile.TemporaryDirectory(prefix="gpu-pack-", dir=out_dir) as tmp:
        site = Path(tmp) / "site"
        with zipfile.ZipFile(wheel) as z:
            z.extractall(site)
        for info in zipfile.ZipFile(wheel).infolist():  # zip drops the executable bits
            mode = info.external_attr >> 16
            if mode & 0o111:
                (site / info.filename).chmod(mode & 0o777)
        meta = [p for p in site.glob("triton-*.dist-info/METADATA")]
        version = (
            next(
                (
                    ln.split(":", 1)[1].strip()
                    for ln in meta[0].read_text().splitlines()
                    if ln.startswith("Version:")
                ),
                None,
            )
            if meta
            else None
        )
        if not names_release(version, release):  # a 3.9 asked for is the 3.9.0 wheel
            raise PackError(f"{wheel.name}: its METADATA says version {version!r}, not {release}")
        apply_recipe(site, recipe, manifest)
        manifest.unpacked_bytes = sum((site / f).lstat().st_size for f in _files(site))
        (site / MANIFEST).write_text(json.dumps(manifest.__dict__, indent=1), encoding="utf-8")
        partial = target.with_suffix(".partial")
        tar = subprocess.Popen(
            [
                "tar",
                "--sort=name",
                "--owner=0",
                "--group=0",
                "--numeric-owner",
                "-C",
                tmp,
                "-cf",
                "-",
                "site",
            ],
            stdout=subprocess.PIPE,
        )
        with partial.open("wb") as fh:
            xz = subprocess.run(["xz", "-T0", "-6", "-c"], stdin=tar.stdout, stdout=fh)
        if tar.wait() != 0 or xz.returncode != 0:
            raise PackError(f"tar | xz failed (tar {tar.returncode}, xz {xz.returncode})")
        os.replace(partial, target)
    manifest.packed_bytes = target.stat().st_size
    manifest.seconds = round(time.monotonic() - t0, 1)
    (out_dir / f"triton-{release}-slim-sm{recipe.arch}.json").write_text(
        json.dumps(manifest.__dict__, indent=1), encoding="utf-8"
    )
    if manifest.packed_bytes > recipe.max_mb * MB:
        raise PackError(
            f"{target.name} is {manifest.packed_bytes / MB:.1f} MB, over the "
            f"recipe's max_mb = {recipe.max_mb:g}"
        )
    return target, manifest


def describe(target: Path, m: Manifest) -> str:
    lines = [
        f"{target}: {m.packed_bytes / MB:.1f} MB packed, {m.unpacked_bytes / MB:.0f} MB "
        f"unpacked ({m.seconds:.0f} s); from {m.wheel}"
    ]
    for d in m.dropped:
        if d["files"]:
            lines.append(f"  dropped {d['files']:4d} files, {d['bytes'] / MB:7.1f} MB: {d['what']}")
        else:
            lines.append(f"  matched nothing: {', '.join(d['matched_nothing'])} ({d['what']})")
    p = m.ptxas
    lines.append(
        f"  ptxas kept {p['kept']}, dropped {p['dropped']} "
        f"({p['dropped_bytes'] / MB:.1f} MB): {p['why']}"
    )
    for s in m.stripped:
        lines.append(
            f"  stripped {s['path']}: {s['bytes_before'] / MB:.0f} -> "
            f"{s['bytes_after'] / MB:.0f} MB, build id {s['build_id']} kept"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m matrix.backends.gpu_pack", description=__doc__.split("\n")[0]
    )
    ap.add_argument("release", help="Triton release, e.g. 3.9.0")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"folder (default {DEFAULT_OUT})")
    ap.add_argument("--wheel", type=Path, help="use this wheel instead of downloading one")
    ap.add_argument("--recipe", type=Path, default=RECIPE_PATH)
    args = ap.parse_args(argv)
    release = Release.parse(args.release, "release")  # a ReleaseError: one line, exit 2
    try:
        recipe = load_recipe(args.recipe)
        wheel = args.wheel or download(release, args.out / "wheels", recipe)
        if not wheel.exists():
            raise PackError(f"--wheel: {wheel} does not exist")
        target, manifest = pack(release, wheel, args.out, recipe)
    except PackError as e:
        print(f"gpu_pack: {e}", file=sys.stderr)
        return 1
    print(describe(target, manifest))
    return 0


if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.backends.gpu_pack"))
