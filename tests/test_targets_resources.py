"""The newer aot targets, a release that cannot compile for one (skipped with why), and what a
compiled kernel uses (registers, local memory, shared, compile seconds) read on the CPU.

The cubin tests build a small ELF64 file by hand with the layout ptxas writes (a global
``.nv.info`` of (format, attribute, size, symbol, value) entries, symbols in ``.symtab``): the
numbers it must read back are the ones put in. One slow test compiles a real kernel and checks
the cubin's registers against ``ptxas -v`` on the same PTX.
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from matrix.backends import aot, compile_time, resources, targets
from matrix.backends.resource_rules import RULES, load_rules
from matrix.catalog import AOT_TARGETS, DEFAULT_AOT_TARGETS, PROBES_BY_NAME
from matrix.core import AotUnavailable, DataFileError
from matrix.probes.support.base import outside_triton
from tests.support import compile_in_child

# ---------------------------------------------------------------- targets


@pytest.mark.parametrize(
    ("target", "expected"),
    [("cuda:100", ("cuda", 100, 32)), ("cuda:120", ("cuda", 120, 32)),
     ("hip:gfx950", ("hip", "gfx950", 64))],
)  # fmt: skip
def test_the_new_targets_parse(target, expected):
    assert aot.split_target(target) == expected


@pytest.mark.parametrize("bad", ["cuda:1000", "hip:gfx95", "cuda:sm_100", "hip:gfx9500x"])
def test_near_misses_of_the_new_targets_are_refused_naming_the_value(bad):
    with pytest.raises(ValueError, match=repr(bad)):
        aot.split_target(bad)


def test_catalog_knows_the_new_targets_and_keeps_the_old_default():
    assert {"cuda:100", "cuda:120", "hip:gfx950"} <= set(AOT_TARGETS)
    assert DEFAULT_AOT_TARGETS == ("cuda:80", "cuda:90", "hip:gfx942")
    assert PROBES_BY_NAME["aot_target"].aot_targets == AOT_TARGETS
    assert PROBES_BY_NAME["block_ptr"].aot_targets == DEFAULT_AOT_TARGETS
    for target in AOT_TARGETS:
        aot.split_target(target)


@pytest.fixture
def trials(tmp_path, monkeypatch):
    path = tmp_path / "trials.json"
    monkeypatch.setenv(targets.TRIALS_ENV, str(path))
    calls: list[str] = []

    def answer(kind, why=None):
        def fake(target):
            calls.append(target)
            return kind, why

        monkeypatch.setattr(targets, "run_trial", fake)

    return path, calls, answer


def test_an_unsupported_target_raises_with_the_trials_words_and_is_kept(trials):
    path, calls, answer = trials
    answer("unsupported", "ptxas fatal : Value 'sm_100' is not defined for option 'gpu-name'")
    for _ in range(2):
        with pytest.raises(targets.TargetUnsupported, match="sm_100' is not defined"):
            targets.check("cuda:100")
    assert calls == ["cuda:100"], "the kept answer must be read back, not tried again"
    assert path.exists()


def test_a_supported_target_passes_and_is_kept(trials):
    _, calls, answer = trials
    answer("supported")
    targets.check("cuda:90")
    targets.check("cuda:90")
    assert calls == ["cuda:90"]


def test_a_missing_tool_is_not_an_answer_about_the_release(trials):
    path, calls, answer = trials
    answer("tool", "no ld.lld found")
    for _ in range(2):
        with pytest.raises(AotUnavailable, match=r"no ld\.lld") as info:
            targets.check("hip:gfx950")
        assert not isinstance(info.value, targets.TargetUnsupported)
    assert calls == ["hip:gfx950", "hip:gfx950"] and not path.exists()


def test_a_trial_that_kills_the_process_is_unsupported_with_its_assertion(monkeypatch):
    stderr = (
        "'sm_100' is not a recognized processor for this target (ignoring processor)\n"
        * 3
        + "python: AccelerateMatmul.cpp:30: int getMMAVersionSafe(int, DotOp): Assertion "
        '`false && "computeCapability not supported"\' failed.\n'
    )

    def died(*args, **kwargs):
        return subprocess.CompletedProcess(args, -6, stdout="", stderr=stderr)

    monkeypatch.setattr(targets.subprocess, "run", died)
    kind, why = targets.run_trial("cuda:100")
    assert kind == "unsupported"
    assert "signal 6" in why and "computeCapability not supported" in why
    assert "recognized processor" not in why


@pytest.mark.parametrize("returncode", [0, 1])
def test_a_trial_that_ends_without_an_answer_is_not_a_verdict_on_the_release(
    monkeypatch, returncode
):
    def no_answer(*args, **kwargs):
        return subprocess.CompletedProcess(args, returncode, stdout="", stderr="ImportError: x")

    monkeypatch.setattr(targets.subprocess, "run", no_answer)
    kind, why = targets.run_trial("cuda:100")
    assert kind == "tool" and f"exit {returncode}" in why


def test_the_trial_runs_without_the_askers_compile_variables(monkeypatch):
    seen = {}

    def record(cmd, **kwargs):
        seen.update(kwargs["env"])
        return subprocess.CompletedProcess(cmd, 0, stdout='["supported", null]', stderr="")

    monkeypatch.setattr(targets.subprocess, "run", record)
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    monkeypatch.setenv("TRITON_HIP_LLD_PATH", "/usr/bin/ld.lld-19")
    assert targets.run_trial("cuda:90") == ("supported", None)
    assert "TRITON_F32_DEFAULT" not in seen and seen["TRITON_HIP_LLD_PATH"] == "/usr/bin/ld.lld-19"


def test_the_trials_words_name_no_file_of_this_checkout():
    said = targets._last_words('loc("/work/x/trial_kernels.py":17:0): error: unsupported target')
    assert said == "error: unsupported target"


def test_skipped_with_why_in_a_probe_not_a_failure():
    cannot = outside_triton(targets.TargetUnsupported("this release cannot compile for cuda:100"))
    assert cannot is not None and cannot.status == "skipped"
    assert "cuda:100" in cannot.reason and "tool" not in cannot.reason


def test_a_captured_launch_for_an_unsupported_target_is_skipped_with_why(monkeypatch):
    from matrix.backends import kernels

    def unsupported(*args, **kwargs):
        raise targets.TargetUnsupported("this release cannot compile for cuda:120: ptxas fatal")

    monkeypatch.setattr(kernels, "compile_for_target", unsupported)
    monkeypatch.setattr(kernels, "load_kernel", lambda *a, **k: object())
    launch = {"key": "k", "kernel": "m:k", "module": "m", "name": "k",
              "signature": {"x": "*fp32"}, "constexprs": {}}  # fmt: skip
    rec = kernels.compile_launch(launch, "cuda:120")
    assert rec["status"] == "skipped" and "cannot compile for cuda:120" in rec["detail"]


# ---------------------------------------------------------------- a hand-made cubin


def _cubin(functions: dict[str, tuple[int, int]], extra_info: bytes = b"") -> bytes:
    """An ELF64 cubin with ``.nv.info`` giving each function (registers, frame bytes)."""
    names = list(functions)
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    offsets = [1 + sum(len(n) + 1 for n in names[:i]) for i in range(len(names))]
    symtab = b"\0" * 24 + b"".join(struct.pack("<IBBHQQ", o, 0x12, 0, 0, 0, 0) for o in offsets)
    info = extra_info
    for i, name in enumerate(names, start=1):
        regs, frame = functions[name]
        info += struct.pack("<BBHII", 4, resources.EIATTR_REGCOUNT, 8, i, regs)
        info += struct.pack("<BBHII", 4, resources.EIATTR_FRAME_SIZE, 8, i, frame)
    shstr_names = [b"", b".shstrtab", b".strtab", b".symtab", b".nv.info"]
    shstrtab = b"".join(n + b"\0" for n in shstr_names)
    bodies = [b"", shstrtab, strtab, symtab, info]
    data, offs = b"", []
    for body in bodies:
        offs.append(64 + len(data))
        data += body
    shoff = 64 + len(data)
    header = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 5, 1)
    sections = b""
    for i, body in enumerate(bodies):
        name_off = sum(len(n) + 1 for n in shstr_names[:i])
        sections += struct.pack("<IIQQQQIIQQ", name_off, 1, 0, 0, offs[i], len(body), 0, 0, 1, 0)
    return header + data + sections


def test_registers_and_local_bytes_are_read_for_the_named_kernel():
    cubin = _cubin({"helper": (40, 0), "splitk_kernel": (202, 400)})
    got = resources.cubin_resources(cubin, "splitk_kernel")
    assert got == {"registers": 202, "local_bytes": 400, "resource_source": "cubin .nv.info"}
    assert resources.cubin_resources(cubin, "helper")["registers"] == 40


def test_without_the_name_the_function_with_most_registers_is_the_kernel():
    cubin = _cubin({"helper": (40, 0), "kernel": (96, 8)})
    assert resources.cubin_resources(cubin)["registers"] == 96


def test_entries_of_other_formats_are_stepped_over():
    # An HVAL (3) and a BVAL (2) before the SVALs: four bytes each.
    extra = struct.pack("<BBH", 3, 0x1B, 255) + struct.pack("<BBH", 2, 0x4C, 1)
    cubin = _cubin({"kernel": (64, 0)}, extra)
    assert resources.cubin_resources(cubin, "kernel")["registers"] == 64


def test_of_compile_never_raises_and_says_why():
    got = resources.of_compile({"cubin": b"not an elf"}, {"shared": 1024})
    assert got["registers"] is None and got["shared"] == 1024
    assert got["resource_source"].startswith("unreadable: expected a little-endian ELF64")
    hip = resources.of_compile({"amdgcn": "; NumVgprs: 128\n; ScratchSize: 16\n"}, {"shared": 0})
    assert (hip["registers"], hip["local_bytes"], hip["shared"]) == (128, 16, 0)


# ---------------------------------------------------------------- compile seconds


def _art(cached: bool, seconds: float | None, text: str = "ptx text") -> aot.Artifacts:
    return aot.Artifacts("cuda:90", {"ptx": text}, cached=cached, seconds=seconds)


def test_a_slow_compile_is_repeated_and_kept_beside_the_cache(tmp_path):
    again = iter([_art(False, 2.5)])
    got, source = compile_time.samples(_art(False, 2.0), lambda: next(again), str(tmp_path))
    assert got == [2.0, 2.5][: RULES.repeats] and source == "measured in this run"

    def must_not_compile():
        raise AssertionError("a cached compile with kept seconds compiled again")

    kept, source = compile_time.samples(_art(True, 0.01), must_not_compile, str(tmp_path))
    assert kept == got and source.startswith("kept")


def test_a_fast_compile_is_not_repeated():
    def must_not_compile():
        raise AssertionError("repeated a compile under repeat_from")

    fast = RULES.repeat_from / 2
    assert compile_time.samples(_art(False, fast), must_not_compile)[0] == [fast]


def test_a_cached_compile_without_kept_seconds_is_measured_fresh(tmp_path):
    fresh = iter([_art(False, 0.1), _art(False, 0.1)])
    got, _ = compile_time.samples(_art(True, 0.001), lambda: next(fresh), str(tmp_path))
    assert got == [0.1]  # the cache lookup's 0.001 s is not a compile time


# ---------------------------------------------------------------- the rule


def test_compile_seconds_count_only_beyond_the_noise_band_and_the_minimum():
    assert RULES.slower_compile([1.0, 1.4], [2.6, 2.8]) is None  # within ratio
    assert RULES.slower_compile([0.1, 0.1], [0.5, 0.5]) is None  # 5x, but under min_seconds
    assert RULES.slower_compile([2.0, 2.2], [4.0, 4.4]) is None  # 2x the fastest, not the slowest
    assert RULES.slower_compile([2.0, 2.2], [5.0, 5.5]) == "compile 2.00-2.20 s -> 5.00-5.50 s"
    assert RULES.slower_compile(None, [4.0]) is None


def test_registers_count_beyond_ratio_and_minimum():
    assert RULES.more_registers(40, 48) is None  # 20% but 8 registers
    assert RULES.more_registers(200, 220) is None  # 20 registers but 10%
    assert RULES.more_registers(96, 128) == "registers 96 -> 128 per thread"


def test_a_bad_rules_file_names_the_key(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text(
        "[compile_seconds]\nrepeats = 0\nrepeat_from = 0.5\nratio = 1.5\nmin_seconds = 1\n"
        "[registers]\nratio = 1.1\nmin_registers = 8\n",
        encoding="utf-8",
    )
    with pytest.raises(DataFileError, match=r"compile_seconds\.repeats"):
        load_rules(path)


# ---------------------------------------------------------------- a real compile

REAL = """
import json, subprocess, sys, tempfile, pathlib, re
import triton.backends.nvidia as nv
from matrix.backends import trial_kernels
from matrix.backends.aot import compile_for_target
name, fn, sig, cx = trial_kernels.TRIALS[1]
art = compile_for_target(fn, sig, cx, "cuda:90", check_target=False)
with tempfile.TemporaryDirectory() as d:
    src = pathlib.Path(d) / "k.ptx"
    src.write_text(art.ir["ptx"])
    for ptxas in sorted(pathlib.Path(nv.__file__).parent.joinpath("bin").glob("ptxas*")):
        proc = subprocess.run([str(ptxas), "-v", "--gpu-name=sm_90a", str(src), "-o",
                               str(pathlib.Path(d) / "k.o")], capture_output=True, text=True)
        if proc.returncode == 0:  # a newer PTX needs the newer ptxas the release ships
            break
    err = proc.stderr
regs = int(re.search(r"Used (\\d+) registers", err).group(1))
frame = int(re.search(r"(\\d+) bytes stack frame", err).group(1))
print(json.dumps({"resources": art.resources, "ptxas": [regs, frame], "seconds": art.seconds}))
"""


@pytest.mark.slow
def test_a_real_cubin_gives_what_ptxas_v_prints():
    pytest.importorskip("triton")
    out = compile_in_child(REAL, timeout=300)
    assert [out["resources"]["registers"], out["resources"]["local_bytes"]] == out["ptxas"]
    assert out["seconds"] > 0


def test_the_trial_kernels_are_module_level_jit_functions():
    source = Path(targets.__file__).with_name("trial_kernels.py").read_text(encoding="utf-8")
    assert "import triton.language as tl" in source and source.count("@triton.jit") == 2


# ---------------------------------------------------------------- the gate's hook


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"registers": 400}, "may slow your kernel: registers"),
        ({"compile_seconds": [9.0, 9.5]}, "may slow your kernel: compile"),
    ],
)
def test_the_gate_names_a_kernel_that_may_slow_beyond_the_rule(fields, says):
    from tests.test_gate_kernels import _edit, _kernel_findings, _runs

    base, _ = _runs()
    base = _edit(base, ":matmul_kernel", "cuda:90", registers=128, compile_seconds=[1.0, 1.1])
    cand = _edit(base, ":matmul_kernel", "cuda:90", **fields)
    (f,) = _kernel_findings(base, cand).findings
    assert f.probe.endswith(":matmul_kernel") and any(says in e for e in f.evidence), f.evidence


def test_the_gate_says_nothing_within_the_noise_band():
    from tests.test_gate_kernels import _edit, _kernel_findings, _runs

    base, _ = _runs()
    base = _edit(base, ":matmul_kernel", "cuda:90", registers=128, compile_seconds=[1.0, 1.1])
    cand = _edit(base, ":matmul_kernel", "cuda:90", registers=136, compile_seconds=[1.2, 1.6])
    assert _kernel_findings(base, cand).findings == []


def test_blackwell_tensor_core_instructions_are_a_matrix_class():
    from matrix.backends.kernels import MATRIX_CLASSES, instruction_classes

    ptx = "\ttcgen05.mma.cta_group::1.kind::f16 [%r1], %rd2, %rd3, %r4, %p1;\n\tfma.rn.f32 %f1;"
    assert instruction_classes(ptx)[0] == "tcgen05" and "tcgen05" in MATRIX_CLASSES


def test_hip_counts_come_from_the_kernel_metadata_where_there_are_no_comments():
    # 3.0.0's AMDGCN has the AMDHSA metadata and none of the later "; NumVgprs" comments.
    text = "  .private_segment_fixed_size: 32\n  .vgpr_count:     48\n  .vgpr_spill_count: 2\n"
    got = resources.amdgcn_resources(text)
    assert (got["registers"], got["local_bytes"]) == (48, 32)
    assert got["resource_source"] == "amdgcn metadata"
    assert resources.amdgcn_resources("v_add_f32 v0, v1, v2")["registers"] is None
