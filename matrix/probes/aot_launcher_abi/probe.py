"""Triton's own ahead-of-time tool and the C wrapper it writes (issue 44, launcher ABI).

``python -m triton.tools.compile`` compiles a ``@triton.jit`` kernel into C source that embeds
the binary and one entry point per kernel, ``CUresult K(CUstream, <signature>)``, whose
parameter types come from the release's type map. The kernel reads each scalar with the width
its PTX declares (``.param .f32``: 4 bytes); a wrapper that declares the scalar ``double``
hands it the first 4 bytes of an 8-byte double, and the kernel reads 0.0 for 1.5. Nothing
fails: the values are wrong.

The probe runs the release's own tool, unchanged, as ``python -m`` runs it, on one kernel with a
pointer, a scalar of each kind (fp32, fp16, bf16, i32, i64, fp64) and a constexpr, compiled for
the aot target. The tool asks the active driver for the target (and, from 3.5.1, for its type
map): with no GPU, a stand-in driver is made active that answers the target and passes the type
map to the CUDA driver class's own ``map_python_to_cpp_type``; nothing of the tool is replaced.
``triton.compile`` is wrapped to keep the compile's PTX (pass-through).

``data`` records:

- ``prototype``: the entry point's parameters as the wrapper declares them (names kept, the
  hashed kernel name replaced by ``K``) and ``args_array``: how many pointers it passes;
- ``scalars``: per argument, the declared C type, its width, the PTX parameter type and width,
  ``match`` or ``mismatch`` (widths differ: the kernel reads something else);
- ``readback``: what the kernel would read of each argument, per its PTX type, when a C caller
  passes the probe's values through the wrapper (the generated C compiled with ``gcc`` against a
  stand-in ``cuda.h`` whose ``cuLaunchKernel`` copies the argument bytes); ``skipped`` without
  ``gcc`` (a tool outside Triton);
- ``ptx_params``/``wrapper_args``: the kernel's parameter count and the array's length;
- ``cli``: the tool's options (``--help``); ``jit_launcher``: the CUDA driver's ``ty_to_cpp``
  and the storage type its JIT launcher packs each float into (``FLOAT_STORAGE_TYPE``), where
  it has one: how the JIT path, which is not this wrapper, hands the same scalar over.

``data.cells`` has one verdict per Triton type (``match``/``mismatch``). Statuses:
``consistent`` (every declared width is the width the kernel reads and every value read back
is the one passed), ``half-mismatch`` (only fp16/bf16 scalars, which only a C wrapper can pass,
reach the kernel wrong), ``mismatch`` (a pointer, fp32, fp64 or integer scalar does: a C
caller's value reaches the kernel wrong), ``rejected`` (the tool refused the kernel or the
signature; its error in detail).
"""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.probes.support.base import CannotObserve, Context, Observation, cause_text

KERNEL_SOURCE = """
import triton
import triton.language as tl


@triton.jit
def abi_kernel(out, x_fp32, x_fp16, x_bf16, x_i32, x_i64, x_fp64, C: tl.constexpr):
    tl.store(out + 0, x_fp32)
    tl.store(out + 1, x_fp16.to(tl.float32))
    tl.store(out + 2, x_bf16.to(tl.float32))
    tl.store(out + 3, x_i32.to(tl.float32))
    tl.store(out + 4, x_i64.to(tl.float32))
    tl.store(out + 5, x_fp64.to(tl.float32))
    tl.store(out + 6, C)
"""
# (argument, signature type, value a C caller passes): values exact in their type; the i64 one
# needs its high word, so a 4-byte read shows.
ARGUMENTS = (
    ("out", "*fp32:16", None),
    ("x_fp32", "fp32", 1.5),
    ("x_fp16", "fp16", 1.5),
    ("x_bf16", "bf16", 1.5),
    ("x_i32", "i32", -7),
    ("x_i64", "i64", 2**33 + 5),
    ("x_fp64", "fp64", 1.5),
    ("C", "4", None),
)
# How many bytes a C type the wrappers use holds (x86-64, as the tool's users compile it).
C_WIDTHS = {
    **{"float": 4, "double": 8, "CUdeviceptr": 8, "hipDeviceptr_t": 8},
    **{f"{sign}int{bits}_t": bits // 8 for sign in ("", "u") for bits in (8, 16, 32, 64)},
}
# How the kernel reads a parameter of a Triton type (struct format); bf16 is read as the high
# half of a float32.
READ_AS = {"fp32": "<f", "fp16": "<e", "bf16": "bf16", "i32": "<i", "i64": "<q", "fp64": "<d"}
SCALAR_TYPES = ("fp32", "fp16", "bf16", "i32", "i64", "fp64")
# Scalars host code can only pass through a C wrapper (the JIT passes a Python float as fp32):
# a mismatch of these alone is its own status, so that fp32's own change shows as one.
HALF_TYPES = {"fp16", "bf16"}

STUB_CUDA_H = """
#include <stdlib.h>
typedef int CUresult; typedef void *CUstream; typedef void *CUmodule; typedef void *CUfunction;
typedef unsigned long long CUdeviceptr; typedef int CUdevice;
typedef struct { unsigned long long opaque[16]; } CUtensorMap;
#define CUDA_SUCCESS 0
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_FUNC_CACHE_PREFER_SHARED 1
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
CUresult cuGetErrorString(CUresult, const char **);
CUresult cuModuleUnload(CUmodule);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuDeviceGetAttribute(int *, int, CUdevice);
CUresult cuFuncSetCacheConfig(CUfunction, int);
CUresult cuFuncSetAttribute(CUfunction, int, int);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, CUstream, void **, void **);
"""
STUB_CUDA_CALLS = """
CUresult cuGetErrorString(CUresult c, const char **s) { *s = "stub"; return 0; }
CUresult cuModuleUnload(CUmodule m) { return 0; }
CUresult cuModuleLoadData(CUmodule *m, const void *b) { *m = (CUmodule)1; return 0; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *n) {
  *f = (CUfunction)1; return 0; }
CUresult cuDeviceGetAttribute(int *v, int a, CUdevice d) { *v = 0; return 0; }
CUresult cuFuncSetCacheConfig(CUfunction f, int c) { return 0; }
CUresult cuFuncSetAttribute(CUfunction f, int a, int v) { return 0; }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream s, void **args,
                        void **extra) { print_params(args); return 0; }
"""
STUB_HIP_H = """
#include <stdlib.h>
typedef int hipError_t; typedef void *hipStream_t; typedef void *hipModule_t;
typedef void *hipFunction_t; typedef void *hipDeviceptr_t;
#define hipSuccess 0
#define hipErrorInvalidValue 1
/* 3.5.1's C++ template launches with warpSize (ROCm headers before 7 declare it on the host);
   what it is does not touch the arguments this harness reads */
static const int warpSize = 64;
hipError_t hipDrvGetErrorString(hipError_t, const char **);
hipError_t hipModuleUnload(hipModule_t);
hipError_t hipModuleLoadData(hipModule_t *, const void *);
hipError_t hipModuleGetFunction(hipFunction_t *, hipModule_t, const char *);
hipError_t hipModuleLaunchKernel(hipFunction_t, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, unsigned, hipStream_t, void **, void **);
"""
STUB_HIP_CALLS = """
hipError_t hipDrvGetErrorString(hipError_t c, const char **s) { *s = "stub"; return 0; }
hipError_t hipModuleUnload(hipModule_t m) { return 0; }
hipError_t hipModuleLoadData(hipModule_t *m, const void *b) { *m = (hipModule_t)1; return 0; }
hipError_t hipModuleGetFunction(hipFunction_t *f, hipModule_t m, const char *n) {
  *f = (hipFunction_t)1; return 0; }
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                 hipStream_t s, void **args, void **extra) {
  print_params(args); return 0; }
"""
# The harness: the stand-in driver calls, whose launch prints each parameter's bytes, as many
# as the kernel declares (what the driver copies), and a main that calls the entry point.
HARNESS_C = """
#include <stdio.h>
#include "{header}"
static const int widths[] = {{ {widths} }};
static const int n_params = {n_params};
static void print_params(void **args) {{
  for (int i = 0; i < n_params; i++) {{
    const unsigned char *p = (const unsigned char *)args[i];
    printf("param %d", i);
    for (int b = 0; b < widths[i]; b++) printf(" %02x", p[b]);
    printf("\\n");
  }}
}}
{calls}
int main(void) {{ {call}; return 0; }}
"""


@dataclass(frozen=True)
class Family:
    """What differs between the wrappers the tool writes for one GPU family (its templates)."""

    result: str  # the entry point's return type
    stream: str  # its first parameter's type
    pointer: str  # how a pointer argument is spelled
    header: str  # the driver header the wrapper includes (a stand-in is written there)
    stub_header: str
    stub_calls: str
    driver: tuple[str, str]  # the module and class whose map_python_to_cpp_type is the release's
    templates: str  # the tool's template folder, relative to triton/tools ("" : the tool's own)
    ir: str  # the compile stage whose kernel signature says what each parameter's width is


FAMILIES = {
    "cuda": Family(
        "CUresult",
        "CUstream",
        "CUdeviceptr",
        "cuda.h",
        STUB_CUDA_H,
        STUB_CUDA_CALLS,
        ("triton.backends.nvidia.driver", "CudaDriver"),
        "",
        "ptx",
    ),
    "hip": Family(
        "hipError_t",
        "hipStream_t",
        "hipDeviceptr_t",
        "hip/hip_runtime.h",
        STUB_HIP_H,
        STUB_HIP_CALLS,
        ("triton.backends.amd.driver", "HIPDriver"),
        "extra/hip",
        "llir",
    ),
}


class StandInDriver:
    """The active driver the tool asks, on a machine with no GPU: it reports the aot target,
    and hands the type map to the family's driver class's own method (the release's answer)."""

    def __init__(self, target: Any, driver_cls: Any, backend: str) -> None:
        self.target = target
        self.driver_cls = driver_cls
        self.backend = backend

    @staticmethod
    def is_active() -> bool:
        return True

    def get_current_target(self) -> Any:
        return self.target

    def map_python_to_cpp_type(self, ty: str) -> str:
        own = getattr(self.driver_cls, "map_python_to_cpp_type", None)
        if own is None:  # a release whose tool calls it has it; one that has not never calls
            raise AttributeError(f"{self.driver_cls.__name__} has no map_python_to_cpp_type")
        return own(self, ty)


def _activate(stand_in: StandInDriver) -> None:
    from triton.runtime import driver as config

    if hasattr(config, "set_active"):
        config.set_active(stand_in)
    else:
        config.active = stand_in


def _run_tool(argv: list[str]) -> tuple[int, str]:
    """(exit code, stdout+stderr) of ``python -m triton.tools.compile ARGV`` in this process."""
    saved = sys.argv
    out = io.StringIO()
    sys.argv = ["compile.py", *argv]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            runpy.run_module("triton.tools.compile", run_name="__main__", alter_sys=False)
    except SystemExit as e:  # argparse (--help, a refused option) exits
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = saved
    return code, out.getvalue()


def ptx_params(ptx: str) -> list[tuple[str, int]]:
    """(PTX type, width in bytes) of each parameter of the ``.entry`` in order; a parameter
    declared as bytes (``.b8 name[2]``, how fp16 and bf16 are passed) is ``b8[2]``.

    >>> ptx_params(".entry k(\\n .param .u64 .ptr .global .align 1 k_param_0,\\n"
    ...            " .param .align 2 .b8 k_param_1[2],\\n .param .f32 k_param_2\\n)")
    [('u64', 8), ('b8[2]', 2), ('f32', 4)]
    """
    entry = re.search(r"\.entry\s+\w+\s*\((.*?)\)", ptx, re.DOTALL)
    if entry is None:
        return []
    out = []
    for param in entry.group(1).split(","):
        array = re.search(r"\.b8\s+\w+\[(\d+)\]", param)
        scalar = re.search(r"\.param\s+(?:\.align\s+\d+\s+)?\.([a-z]+)(\d+)", param)
        if array:
            out.append((f"b8[{array.group(1)}]", int(array.group(1))))
        elif scalar:
            out.append((f"{scalar.group(1)}{scalar.group(2)}", int(scalar.group(2)) // 8))
    return out


def prototype(c_text: str, family: Family = FAMILIES["cuda"]) -> list[tuple[str, str]]:
    """(C type, name) of the entry point's parameters after the stream, from the wrapper."""
    pattern = rf"{family.result}\s+\w+\({family.stream} stream,\s*([^)]*)\)\s*\{{"
    match = re.search(pattern, c_text)
    if match is None:
        return []
    out = []
    for part in match.group(1).split(","):
        words = part.split()
        if len(words) >= 2:
            out.append((" ".join(words[:-1]), words[-1]))
    return out


# The width of an LLVM IR parameter type (the HIP kernel's arguments are laid out by them).
LLIR_WIDTHS = {"ptr": 8, "float": 4, "half": 2, "bfloat": 2, "double": 8}


def llir_params(llir: str, kernel: str = "abi_kernel") -> list[tuple[str, int]]:
    """(LLVM type, width in bytes) of each parameter of ``define ... @kernel(...)``.

    >>> llir_params("define amdgpu_kernel void @k(ptr addrspace(1) nocapture %0, float %1, "
    ...             "half %2, i64 %3) #0 {", "k")
    [('ptr', 8), ('float', 4), ('half', 2), ('i64', 8)]
    """
    start = re.search(rf"define\b[^\n]*@{kernel}\(", llir)
    if start is None:
        return []
    depth, i, parts, current = 1, start.end(), [], ""
    while i < len(llir) and depth:
        ch = llir[i]
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 1 and ch == ",":
            parts.append(current)
            current = ""
        elif depth:
            current += ch
        i += 1
    parts.append(current)
    out = []
    for part in (p.strip() for p in parts if p.strip()):
        ty = part.split()[0]
        width = LLIR_WIDTHS.get(ty)
        if width is None and re.fullmatch(r"i\d+", ty):
            width = max(1, int(ty[1:]) // 8)
        if width is not None:
            out.append((ty, width))
    return out


def decode(raw: bytes, triton_type: str) -> float | int | None:
    """The value the kernel reads from ``raw`` as a ``triton_type`` parameter."""
    fmt = READ_AS.get(triton_type)
    if fmt is None or not raw:
        return None
    if fmt == "bf16":
        return struct.unpack("<f", b"\x00\x00" + raw[:2])[0] if len(raw) >= 2 else None
    size = struct.calcsize(fmt)
    return struct.unpack(fmt, raw[:size])[0] if len(raw) >= size else None


def _readback(
    folder: Path,
    header: Path,
    c_file: Path,
    proto: list[tuple[str, str]],
    widths: list[int],
    family: Family = FAMILIES["cuda"],
) -> dict[str, Any]:
    """What the kernel would read of each argument a C caller passes through the wrapper."""
    values = {name: value for name, _, value in ARGUMENTS}
    call_args = [f"({family.stream})0"]
    for _, name in proto:
        value = values.get(name)
        call_args.append(f"({family.pointer})4096" if value is None else repr(value))
    kernel = re.search(rf"{family.result}\s+(\w+)\({family.stream}", c_file.read_text())
    assert kernel is not None  # prototype() found it in the same text
    stub = folder / family.header
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text(family.stub_header)
    # a C++ template (3.5.1's HIP one) is built as C++, the harness with it
    cxx = c_file.suffix == ".cpp"
    harness = folder / ("harness.cpp" if cxx else "harness.c")
    harness.write_text(
        HARNESS_C.format(
            header=header.name,
            widths=", ".join(map(str, widths)) or "0",
            n_params=len(widths),
            calls=family.stub_calls,
            call=f"{kernel.group(1)}({', '.join(call_args)})",
        )
    )
    exe = folder / "harness"
    compiler = "g++" if cxx else "gcc"
    try:
        subprocess.run(
            [compiler, "-w", "-I", str(folder), "-o", str(exe), str(harness), str(c_file)],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        run = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        what = cause_text(e, 300)
        if isinstance(e, subprocess.CalledProcessError):
            what += ": " + (e.stderr or "")[-300:]
        return {
            "status": "skipped",
            "reason": f"{compiler} (outside Triton) could not build or run the wrapper: {what}",
        }
    got: dict[str, Any] = {}
    lines = [ln.split() for ln in run.stdout.splitlines() if ln.startswith("param ")]
    types = {name: ty for name, ty, _ in ARGUMENTS}
    for (_, name), words in zip(proto, lines, strict=False):
        raw = bytes(int(b, 16) for b in words[2:])
        got[name] = {"passed": values.get(name), "kernel_reads": decode(raw, types.get(name, ""))}
    return {"status": "observed", "values": got}


def _jit_launcher(driver_module: Any) -> dict[str, Any]:
    """How the family driver's JIT launcher declares and stores each scalar type."""
    storage = getattr(driver_module, "FLOAT_STORAGE_TYPE", {})
    out = {}
    for ty in SCALAR_TYPES:
        try:
            c_type = driver_module.ty_to_cpp(ty)
        except (KeyError, AttributeError):
            c_type = None
        out[ty] = {"c": c_type, "storage": storage.get(ty)}
    return out


def _tool_argv(folder: Path) -> list[str]:
    signature = ", ".join(ty for _, ty, _ in ARGUMENTS)
    return [
        str(folder / "abi_kernels.py"),
        "--kernel-name",
        "abi_kernel",
        "--signature",
        signature,
        "--grid",
        "1,1,1",
        "--out-name",
        "abi",
        "--out-path",
        str(folder / "abi"),
    ]


def observe(ctx: Context) -> Observation:
    import importlib

    import triton

    from matrix.backends.aot import _environ, _hip_lld_env, parse_target, split_target

    backend = split_target(ctx.compile_target)[0]
    family = FAMILIES[backend]
    try:
        driver_module = importlib.import_module(family.driver[0])
        driver_cls = getattr(driver_module, family.driver[1])
    except (ImportError, AttributeError) as e:
        raise CannotObserve("error", f"the {backend} driver does not import: {e}") from e
    if importlib_find("triton.tools.compile") is None:
        return Observation("skipped", "this release has no triton.tools.compile")
    templates = Path(triton.__file__).parent / "tools" / family.templates
    if family.templates and not templates.is_dir():
        return Observation(
            "skipped",
            f"this release's AOT tool writes no {backend} wrapper "
            f"(no triton/tools/{family.templates})",
        )
    _activate(StandInDriver(parse_target(ctx.compile_target), driver_cls, backend))
    data: dict[str, Any] = {"jit_launcher": _jit_launcher(driver_module)}

    code, help_text = _run_tool(["--help"])
    data["cli"] = sorted(set(re.findall(r"(--[a-z][a-z-]*)", help_text)) - {"--help"})

    kept: list[Any] = []
    real_compile = triton.compile

    def keeping(*args: Any, **kwargs: Any) -> Any:
        result = real_compile(*args, **kwargs)
        kept.append(result)
        return result

    triton.compile = keeping
    with tempfile.TemporaryDirectory(prefix="aot_abi_") as tmp:
        folder = Path(tmp)
        (folder / "abi_kernels.py").write_text(KERNEL_SOURCE)
        try:
            with _environ(_hip_lld_env() if backend == "hip" else {}):
                code, output = _run_tool(_tool_argv(folder))
        except Exception as e:  # the tool refused the kernel or the signature
            return Observation("rejected", cause_text(e), data)
        finally:
            triton.compile = real_compile
        c_files = sorted(folder.glob("abi.*.c")) + sorted(folder.glob("abi.*.cpp"))
        h_files = sorted(folder.glob("abi.*.h"))
        if code != 0 or not c_files or not h_files:
            return Observation(
                "rejected",
                f"the tool exited {code} and wrote {len(c_files)} "
                f"source files: {output.strip()[-300:]}",
                data,
            )
        c_text = c_files[0].read_text()
        proto = prototype(c_text, family)
        ir = kept[-1].asm.get(family.ir, "") if kept else ""
        ir = ir if isinstance(ir, str) else ""
        params = ptx_params(ir) if family.ir == "ptx" else llir_params(ir)
        args_array = re.search(r"void \*args\[(\d+)\]", c_text)
        data["prototype"] = [f"{c} {n}" for c, n in proto]
        data["args_array"] = int(args_array.group(1)) if args_array else None
        data["kernel_params"] = len(params)
        data["wrapper_args"] = len(proto)
        scalars = _compare_scalars(proto, params, family)
        data["scalars"] = scalars
        data["readback"] = _readback(
            folder, h_files[0], c_files[0], proto, [w for _, w in params[: len(proto)]], family
        )
    if not params:
        return Observation("error", f"the compile kept no {family.ir} kernel to compare with", data)
    return _verdict(data, scalars)


def _compare_scalars(proto: list[Any], params: list[Any], family: Any) -> dict[str, Any]:
    """Each wrapper parameter's C type and width against what the kernel reads there."""
    types = {name: ty for name, ty, _ in ARGUMENTS}
    scalars: dict[str, Any] = {}
    for i, (c_type, name) in enumerate(proto):
        kernel_type, width = params[i] if i < len(params) else (None, None)
        declared = C_WIDTHS.get(c_type)
        scalars[name] = {
            "type": types.get(name, "?").split(":")[0],
            "c": c_type,
            "c_width": declared,
            "kernel": f"{family.ir} {kernel_type}",
            "kernel_width": width,
            "verdict": "match" if declared == width else "mismatch",
        }
    return scalars


def _verdict(data: dict[str, Any], scalars: dict[str, Any]) -> Observation:
    """The cells (one per scalar type) and the status: a read-back that differs from what
    was passed is a mismatch whatever the widths say."""
    cells = {s["type"]: s["verdict"] for s in scalars.values()}
    values = data["readback"].get("values", {})
    for name, v in values.items():  # a read-back that differs is a mismatch whatever the widths
        if v["passed"] is not None and v["kernel_reads"] != v["passed"]:
            cells[scalars[name]["type"]] = "mismatch"
    data["cells"] = cells
    bad = [
        f"{n} ({s['type']}) declared {s['c']} ({s['c_width']} B), kernel reads {s['kernel']}"
        for n, s in scalars.items()
        if s["verdict"] == "mismatch"
    ]
    wrong_reads = [
        f"{n}: passed {v['passed']}, kernel reads {v['kernel_reads']}"
        for n, v in values.items()
        if v["passed"] is not None and v["kernel_reads"] != v["passed"]
    ]
    mismatched = {t for t, c in cells.items() if c == "mismatch"}
    if mismatched - HALF_TYPES:
        return Observation("mismatch", "; ".join(bad + wrong_reads)[:600], data)
    if mismatched:
        return Observation("half-mismatch", "; ".join(bad + wrong_reads)[:600], data)
    return Observation(
        "consistent",
        f"{len(scalars)} parameters declared at the width the "
        f"kernel reads; {', '.join(data['prototype'])}"[:600],
        data,
    )


def importlib_find(name: str) -> Any:
    import importlib.util

    try:
        return importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None
