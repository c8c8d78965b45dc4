"""The GPU columns for one Triton release, on any machine with an NVIDIA GPU.

    python -m matrix gpu-run --release 3.9.0 \\
        --pack .gpu/pack/triton-3.9.0-slim-sm90.tar.xz --out-dir reports --machine h200
    python -m matrix gpu-run --release 3.6.0 --out-dir /tmp/out   # the installed Triton

Steps, each in its own process:
1. unpack the slim package (``python -m matrix.backends.gpu_pack``) into a folder put first on
   ``PYTHONPATH``, so it shadows any installed Triton; without ``--pack`` the installed one runs;
2. preflight (``matrix.measure.gpu_preflight``): the release is the one asked for
   (``triton.__version__`` and ``importlib.metadata``) and its launcher builds (an exact vector
   add). If not, the raw file gets ``install.status = "error"`` with the reason and no probe runs;
3. ``python -m matrix run --backends gpu``: every probe with a gpu backend, into
   ``<out-dir>/raw/triton-<release>-numpy-<numpy>-gpu-<machine>.json.gz``; the env names the torch
   pairing and where Triton came from;
4. ``python -m matrix gpu-bench``: split-K, tiled and cuBLAS timings and float64 checks,
   into ``<out-dir>/bench/triton-<release>-gpu-<machine>.json``.

Replaying a team's captured launches is not done here yet: no capture format exists in this
tree (the your-kernels issue).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from matrix import cli
from matrix.core import REPO_ROOT
from matrix.exitcodes import ExitCode
from matrix.results import Run, raw_name, write_raw


def unpack(pack: Path, dest: Path) -> tuple[Path, float]:
    """``pack`` (.tar.xz) into ``dest``; returns the folder to put on PYTHONPATH."""
    t0 = time.monotonic()
    subprocess.run(["tar", "-xJf", str(pack), "-C", str(dest)], check=True)
    site = dest / "site"
    if not (site / "triton" / "__init__.py").exists():
        raise RuntimeError(f"{pack}: no site/triton/__init__.py inside (not a gpu_pack package)")
    return site, time.monotonic() - t0


def tree_id() -> str:
    """Which code measured: ``MATRIX_TREE_ID`` (set it when the tree is a snapshot without
    .git, as on the lent H200), else the checkout's commit, else "unknown"."""
    if os.environ.get("MATRIX_TREE_ID"):
        return os.environ["MATRIX_TREE_ID"]
    out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)  # fmt: skip
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def child_env(site: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["PYTHONUNBUFFERED"] = "1"
    parts = [str(site)] if site else []
    env["PYTHONPATH"] = os.pathsep.join([*parts, str(REPO_ROOT), env.get("PYTHONPATH", "")])
    return env


def run_preflight(release: str, site: Path | None, env: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "matrix.measure.gpu_preflight", "--release", release]
    if site:
        cmd += ["--site", str(site)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=600)
    try:
        result = json.loads(out.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):  # it died before printing: import failed
        result = {
            "ok": False,
            "stage": "import",
            "error": f"exit {out.returncode}: {out.stderr.strip()[-1500:]}",
        }
    return result


def record_not_run(release: str, numpy: str, machine: str, out_dir: Path, why: str) -> int:
    """A raw file for a release that did not run on this machine: install status says why."""
    if not why.strip():
        raise SystemExit("--not-run: give the reason")
    run_id = f"triton-{release}-numpy-{numpy}-gpu-{machine}"
    run = Run(
        id=run_id,
        env={"triton": release, "numpy": numpy, "gpu": None},
        install={"status": "skipped", "seconds": 0.0, "detail": f"not run on {machine}: {why}"},
        extra={"complete": True},
    )
    path = out_dir / "raw" / raw_name(run_id)
    write_raw(run, path)
    print(f"wrote {path}")
    return ExitCode.OK


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix gpu-run",
        description=__doc__.split("\n")[0],
    )
    ap.add_argument("--release", required=True)
    ap.add_argument("--pack", type=Path, help="slim package (.tar.xz); default: installed Triton")
    ap.add_argument("--out-dir", type=Path, required=True, help="raw/ and bench/ go under it")
    ap.add_argument("--machine", default="h200", help="label in file names (default h200)")
    # The fingerprint took 92-106 s per release on the H200 (2026-12-02; 60 s cut it short).
    ap.add_argument("--timeout", type=float, default=400.0, help="seconds per probe")
    ap.add_argument("--no-bench", action="store_true", help="probes only")
    ap.add_argument(
        "--no-probes",
        action="store_true",
        help="the timing subset only (probes of several releases may run at once beforehand; "
        "timings may not: one bench at a time, nothing else on the GPU)",
    )
    ap.add_argument(
        "--not-run",
        metavar="WHY",
        help="record that this release was not run here, and why (no GPU needed)",
    )
    ap.add_argument("--numpy", default="2.5.2", help="numpy of the machine, for --not-run's id")
    return ap


def _preflight_failed(
    run_id: str, release: str, pre: dict[str, Any], extra_env: dict[str, str], unpack_s: float
) -> Run:
    """The cell of a release whose launcher did not build: recorded as an install error with
    the preflight, no probe run (a launcher that does not build would read as Triton
    behaviour)."""
    detail = (
        f"preflight failed at {pre.get('stage')}: {pre.get('error')}; no probe run "
        f"(a launcher that does not build would read as Triton behaviour)"
    )
    return Run(
        id=run_id,
        env={
            "triton": release,
            "numpy": pre.get("numpy", "unknown"),
            "torch": pre.get("torch", "?"),
            "gpu": None,
            **extra_env,
        },
        install={"status": "error", "seconds": round(unpack_s, 1), "detail": detail},
        extra={"complete": True, "preflight": pre},
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.not_run:
        return record_not_run(args.release, args.numpy, args.machine, args.out_dir, args.not_run)
    t0 = time.monotonic()
    raw_dir, bench_dir = args.out_dir / "raw", args.out_dir / "bench"
    raw_dir.mkdir(parents=True, exist_ok=True)
    log = lambda s: print(f"[gpu_run {args.release}] {s}", flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="gpu-run-") as tmp:
        site, unpack_s, source = None, 0.0, "the installed triton"
        if args.pack:
            site, unpack_s = unpack(args.pack, Path(tmp))
            source = f"slim package {args.pack.name} (matrix.backends.gpu_pack)"
            log(f"unpacked {args.pack.name} in {unpack_s:.1f} s")
        env = child_env(site)
        pre = run_preflight(args.release, site, env)
        log(f"preflight: {json.dumps(pre)[:600]}")
        torch = pre.get("torch", "?")
        extra_env = {
            "torch_pairing": f"machine's torch {torch} with triton {args.release} "
            "(torch allocates tensors and hands out streams; it never compiles)",
            "triton_source": source,
            "tree": tree_id(),
        }
        numpy = pre.get("numpy", "unknown")
        run_id = f"triton-{args.release}-numpy-{numpy}-gpu-{args.machine}"
        raw = raw_dir / raw_name(run_id)
        if not pre.get("ok"):
            run = _preflight_failed(run_id, args.release, pre, extra_env, unpack_s)
            write_raw(run, raw)
            log(f"wrote {raw}: {run.install['detail']}")
            return ExitCode.FAILED
        install = {
            "status": "ok",
            "seconds": round(unpack_s, 1),
            "detail": f"{source}; launcher built: exact vector add of "
            f"{pre['vector_add']['n']} floats",
        }
        cmd = [
            sys.executable,
            "-m",
            "matrix.measure.runner",
            "--backends",
            "gpu",
            "--out",
            str(raw),
            "--id",
            run_id,
            "--release",
            args.release,
            "--install",
            json.dumps(install),
            "--env",
            json.dumps(extra_env),
            "--timeout",
            str(args.timeout),
        ]
        rc_probes = 0
        if not args.no_probes:
            rc_probes = subprocess.run(cmd, env=env, cwd=REPO_ROOT).returncode
            log(f"probes exit {rc_probes} -> {raw} ({time.monotonic() - t0:.0f} s so far)")
        rc_bench = 0
        if not args.no_bench:
            out = bench_dir / f"triton-{args.release}-gpu-{args.machine}.json"
            cmd = [
                sys.executable,
                "-m",
                "matrix.measure.gpu_bench",
                "--release",
                args.release,
                "--out",
                str(out),
                "--machine",
                args.machine,
                "--env",
                json.dumps(extra_env),
            ]
            rc_bench = subprocess.run(cmd, env=env, cwd=REPO_ROOT).returncode
            log(f"bench exit {rc_bench} -> {out}")
    log(f"done in {time.monotonic() - t0:.0f} s")
    return ExitCode.OK if rc_probes == 0 and rc_bench == 0 else ExitCode.FAILED


if __name__ == "__main__":
    cli.deprecated("python -m matrix.measure.gpu_run", "gpu-run")
    sys.exit(cli.run(main, "matrix.measure.gpu_run"))
