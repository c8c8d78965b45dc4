"""Before any probe runs on a GPU: is this the release asked for, and does its launcher build?

    python -m matrix.measure.gpu_preflight --release 3.9.0 [--site DIR]

Prints one JSON object and exits 0 only when all of these hold:
- ``triton.__version__`` and ``importlib.metadata.version("triton")`` both equal ``--release``,
  and (with ``--site``) ``triton`` was imported from that folder, not a preinstalled release;
- an exact vector add runs: the first launch builds the release's launcher stub with the
  machine's gcc against its CUDA headers. If that fails, every later probe would fail the same
  way and record it as Triton behaviour (issue 11: ``block_ptr removed`` from a missing
  ``cuda.h``), so the caller stops here and records why in the raw file's install status.

Otherwise it exits 1 and the JSON's ``stage`` and ``error`` say what failed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import traceback
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

from matrix import cli
from matrix.core import Release
from matrix.measure import triton_identity


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def vector_add(n: int = 98_437) -> dict[str, Any]:
    """Fresh random float32 inputs, NaN-poisoned output; a float32 add is exact, so the result
    must equal torch's bit for bit (n is not a multiple of the block: the mask is used)."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(15)
    x = torch.randn(n, device="cuda", generator=gen)
    y = torch.randn(n, device="cuda", generator=gen)
    out = torch.full_like(x, float("nan"))
    block = 1024
    _add[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    torch.cuda.synchronize()
    want = x + y
    return {
        "n": n,
        "exact": bool(torch.equal(out, want)),
        "unwritten": int(torch.isnan(out).sum()),
        "max_abs_diff": float((out - want).abs().nan_to_num(float("inf")).max()),
    }


def preflight(release: Release | str, site: Path | None) -> dict[str, Any]:
    release = Release.parse(release, "--release")
    out: dict[str, Any] = {"release": str(release), "ok": False, "stage": "version"}
    # The same check as every CPU cell's probe processes (matrix.measure.triton_identity).
    seen, dist = triton_identity.imported(), triton_identity.distribution()
    out["triton_version"] = seen.version
    out["metadata_version"] = dist.version if dist else None
    out["triton_file"] = seen.file
    for name in ("torch", "numpy"):
        out[name] = importlib.metadata.version(name)
    wrong = triton_identity.mismatch(seen, release, dist)
    if wrong:
        out["error"] = wrong
        return out
    if site is not None and not Path(triton.__file__).resolve().is_relative_to(site.resolve()):
        out["error"] = f"triton was imported from {triton.__file__}, not from --site {site}"
        return out
    import torch

    if not torch.cuda.is_available():
        out["stage"] = "device"
        out["error"] = f"torch {torch.__version__} sees no CUDA device"
        return out
    out["stage"] = "launcher"
    try:
        out["vector_add"] = vector_add()
    except Exception as e:  # the launcher stub did not build or the launch failed: say why
        out["error"] = f"{type(e).__name__}: {e}"[:2000]
        out["traceback_tail"] = traceback.format_exc()[-2000:]
        return out
    va = out["vector_add"]
    if not va["exact"]:
        out["stage"] = "vector_add"
        out["error"] = (
            f"vector add not exact: {va['unwritten']} unwritten, max |diff| {va['max_abs_diff']}"
        )
        return out
    out["stage"] = "done"
    out["ok"] = True
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m matrix.measure.gpu_preflight", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--release", required=True)
    ap.add_argument("--site", type=Path, help="folder the slim package was unpacked into")
    args = ap.parse_args(argv)
    result = preflight(Release.parse(args.release, "--release"), args.site)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.measure.gpu_preflight"))
