"""The AOT-wrapper probe: its parsers, its read-back harness, and one run on the installed Triton.

The harness is checked on a wrapper of our own (no Triton), so a harness that always said
"match" (or always "mismatch") fails here; the run on the installed release checks that the
kinds a wrapper has always declared at their width (pointer, i32, i64, fp64) read back what was
passed: the control that makes its fp32/fp16 verdicts mean something.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.probes.aot_launcher_abi import probe as abi

ROOT = Path(__file__).resolve().parents[1]

PTX = """
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .f32 k_param_1,
	.param .align 2 .b8 k_param_2[2],
	.param .u64 k_param_3
)
"""


def test_ptx_params_reads_scalars_byte_arrays_and_pointers():
    assert abi.ptx_params(PTX) == [("u64", 8), ("f32", 4), ("b8[2]", 2), ("u64", 8)]
    assert abi.ptx_params("no entry here") == []


def test_prototype_reads_the_entry_point_after_the_stream():
    c = "CUresult abi_ab12_(CUstream stream, CUdeviceptr out, double x_fp32, int32_t x_i32) {\n"
    assert abi.prototype(c) == [("CUdeviceptr", "out"), ("double", "x_fp32"), ("int32_t", "x_i32")]


def test_decode_reads_the_width_the_kernel_declares():
    import struct

    double = struct.pack("<d", 1.5)
    assert abi.decode(double[:4], "fp32") == 0.0  # the low half of a double: the reported bug
    assert abi.decode(struct.pack("<f", 1.5), "fp32") == 1.5
    assert abi.decode(struct.pack("<e", 1.5), "fp16") == 1.5
    assert abi.decode(struct.pack("<q", 2**33 + 5), "i64") == 2**33 + 5


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc (outside Triton) is missing")
def test_readback_harness_tells_a_double_declared_fp32_from_a_float(tmp_path):
    """A wrapper of our own in the tool's shape: one fp32 declared double, one float."""
    header = tmp_path / "w.h"
    header.write_text(
        "#include <cuda.h>\nCUresult w_k(CUstream stream, double x_fp32, float x_fp16);\n"
    )
    c_file = tmp_path / "w.c"
    c_file.write_text(
        "#include <cuda.h>\nCUresult w_k(CUstream stream, double x_fp32, float x_fp16) {\n"
        "  void *args[2] = { &x_fp32, &x_fp16 };\n"
        "  return cuLaunchKernel(0, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL);\n}\n"
    )
    proto = abi.prototype(c_file.read_text())
    got = abi._readback(tmp_path, header, c_file, proto, [4, 4])
    assert got["status"] == "observed", got
    # x_fp16 here is a float parameter the kernel reads as fp16: its 4-byte float's low half
    assert got["values"]["x_fp32"] == {"passed": 1.5, "kernel_reads": 0.0}
    assert got["values"]["x_fp16"]["kernel_reads"] == 0.0


def test_llir_params_reads_a_hip_kernels_arguments():
    llir = "define amdgpu_kernel void @abi_kernel(ptr addrspace(1) nocapture %0, float %1, i64 %2)"
    assert abi.llir_params(llir) == [("ptr", 8), ("float", 4), ("i64", 8)]
    assert abi.llir_params(llir, "other") == []


@pytest.mark.parametrize("target", ["cuda:90", "hip:gfx942"])
def test_observe_on_the_installed_release(tmp_path, target):
    """The probe end to end in a child (it makes a stand-in driver active for good)."""
    code = (
        "import json, sys\n"
        "from matrix.probes.support.base import Context\n"
        "from matrix.probes.aot_launcher_abi import probe as m\n"
        f"o = m.observe(Context('aot', {target!r}))\n"
        "json.dump({'status': o.status, 'detail': o.detail, 'data': o.data}, sys.stdout)\n"
    )
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TRITON_INTERPRET", None)
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    from matrix.catalog import PROBES_BY_NAME

    assert got["status"] in PROBES_BY_NAME["aot_launcher_abi"].all_statuses, got["detail"]
    if got["status"] in ("rejected", "skipped"):
        pytest.skip(f"the installed release's tool gave no wrapper: {got['detail']}")
    data = got["data"]
    assert set(data["cells"]) == {"*fp32", *abi.SCALAR_TYPES}
    # the controls: kinds whose C type has the width the kernel reads
    for kind in ("*fp32", "i32", "i64", "fp64"):
        assert data["cells"][kind] == "match", data["scalars"]
    if data["readback"]["status"] == "observed":
        values = data["readback"]["values"]
        for name in ("x_i32", "x_i64", "x_fp64"):
            assert values[name]["kernel_reads"] == values[name]["passed"], values
    # the status follows the cells
    mismatched = {k for k, v in data["cells"].items() if v == "mismatch"}
    expected = (
        "mismatch"
        if mismatched - abi.HALF_TYPES
        else "half-mismatch"
        if mismatched
        else "consistent"
    )
    assert got["status"] == expected
