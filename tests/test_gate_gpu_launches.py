"""A compile refusal of what the baseline's GPU computed wrong (matrix/data/gpu_launches.toml,
measured by notes/gpu-logs/session17/layout_gpu.py): never a break of code that worked, listed
under "fixed" with the measurement; a baseline whose launch was not measured still blocks (fail
closed). The kernel is tests/fixtures/team_kernels/descriptor_stride/, shaped like unsloth's
grouped GEMM descriptors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.core import DataFileError
from matrix.gate import gpu_launches

ROOT = Path(__file__).resolve().parents[1]
CELL = "fp.layout[descriptor.stride_constexpr_not_16B]"
KERNEL = Path("tests") / "fixtures" / "team_kernels" / "descriptor_stride"


def test_a_measured_wrong_launch_makes_the_refusal_a_fix_only_where_measured() -> None:
    hit = gpu_launches.refused_wrong(CELL, "aot:cuda:90", "3.8.0", "accepted", "rejected")
    assert hit is not None and hit.status == "wrong" and "notes/gpu-logs" in hit.measured
    for measured in ("3.4.0", "3.5.1", "3.6.0", "3.7.1"):  # session 18, H100
        assert gpu_launches.refused_wrong(CELL, "aot:cuda:90", measured, "accepted", "rejected")
    # 3.3.1's run did not finish (notes/gpu-logs/session18): not measured, decides nothing
    assert gpu_launches.refused_wrong(CELL, "aot:cuda:90", "3.3.1", "accepted", "rejected") is None
    assert (
        gpu_launches.refused_wrong(CELL, "aot:hip:gfx942", "3.8.0", "accepted", "rejected") is None
    )
    assert gpu_launches.refused_wrong(CELL, "aot:cuda:90", "3.8.0", "rejected", "accepted") is None


def test_the_data_file_names_a_bad_row(tmp_path: Path) -> None:
    bad = tmp_path / "gpu_launches.toml"
    row = 'cell = "c"\nrelease = "3.8.0"\ntarget = "cuda:90"\ndevice = "d"\ndetail = "x"\n'
    bad.write_text("[[launch]]\n" + row + 'measured = "m"\nstatus = "maybe"\n')
    with pytest.raises(DataFileError, match="status"):
        gpu_launches.launches.__wrapped__(bad)


def _gate(tmp_path: Path, baseline: str, scan: Path = KERNEL) -> tuple[int, str, dict]:
    out = tmp_path / f"{baseline}-{scan.name}"
    cmd = [sys.executable, "-m", "matrix.gate", "--baseline", baseline, "--candidate", "3.9.0",
           "--results", "reports/raw", "--scan", str(scan), "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    return (
        proc.returncode,
        (out / "gate.md").read_text(),
        json.loads((out / "gate.json").read_text()),
    )


def test_the_unaligned_constexpr_stride_refusal_blocks_only_an_unmeasured_baseline(tmp_path):
    code, md, doc = _gate(tmp_path, "3.8.0")
    assert code == 0, md
    (fixed,) = [f for f in doc["fixed_used"] if f["probe"] == CELL]
    assert any("computes it wrong" in e for e in fixed["evidence"]), fixed["evidence"]
    assert "Fixed in the candidate" in md
    assert "1 fixed in the candidate that your code uses" in md.splitlines()[2]  # first screen
    # 3.3.1 has no tl.make_tensor_descriptor (only the experimental spelling, census): code
    # that runs there does not reach this kernel's descriptor, so nothing it does can break
    code, md, doc = _gate(tmp_path, "3.3.1")
    assert code == 0, md
    assert not any(CELL in f["findings"] for f in doc["blocking"]), md
    # spelt as 3.3.1 spells it, the kernel runs there, and 3.9.0 removed that name: blocking on
    # the removed API, the layout change following from it
    exp = tmp_path / "experimental"
    exp.mkdir()
    source = next((ROOT / KERNEL).glob("*.py"))
    spelt = source.read_text().replace(
        "tl.make_tensor_descriptor", "tl._experimental_make_tensor_descriptor"
    )
    (exp / "k.py").write_text(spelt)
    code, md, doc = _gate(tmp_path, "3.3.1", exp)
    assert code == 1, md
    assert "_experimental_make_tensor_descriptor does not exist on 3.9.0" in md, md
