"""The hazards real upgrades hit, each decided from a measured row (issue 39 item 6, issue 44):
plain Python calls in kernel bodies (TRI019, python_in_kernel), autotune lists naming a
non-argument (TRI020, autotune_validation), and uses of the runtime classes' members (TRI021,
the API census). On the committed results; the releases asserted are the recorded ones.

The replayed cases are small sources of our own modeled on real fixes: NVIDIA/TransformerEngine
dd7ab715 ("Fix error with triton 3.5": ``core.get_int_dtype(...)`` called in a kernel, fixed by
rebinding it to ``triton.constexpr_function`` on 3.5 and later) and flagos-ai/FlagGems 42d396ff
(an autotune ``key`` naming ``N``/``C`` where the kernel takes ``NC``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.analyze.census import censuses_from_runs
from matrix.results import Run, read_runs
from tests.test_scan_release import RAW, scan_for

HEAD = "import math\n\nimport triton\nimport triton.language as tl\n"


@pytest.fixture(scope="module")
def recorded() -> tuple[list[Run], dict]:
    runs = read_runs(RAW)
    return runs, censuses_from_runs(runs)


def effect_at(recorded, path: Path, release: str, line: int, rule: str) -> str:
    found = [f for f in scan_for(recorded, [path], release).findings if f.rule.id == rule]
    got = {f.effect for f in found if f.line == line}
    assert len(got) == 1, f"{rule} at line {line} on {release}: {[f.text() for f in found]}"
    return got.pop()


def test_python_calls_in_kernels_follow_the_measured_cases(recorded, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "utils.py").write_text("def half(n):\n    return n // 2\n")
    src = tmp_path / "pkg" / "k.py"
    src.write_text(
        HEAD + "from . import utils\n\n\n"
        "@triton.jit\n"
        "def k(p, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, utils.half(BLOCK))\n"  # line 10
        "    scale: tl.constexpr = math.log2(BLOCK)\n"  # line 11
        "    tl.store(p + offs, offs * scale)\n"
    )
    k = tmp_path / "pkg"
    # a helper reached through a module attribute: compiled by 3.2.0-3.4.0, refused from 3.5.1
    assert effect_at(recorded, k, "3.4.0", 10, "TRI019") == "does-not-affect"
    assert effect_at(recorded, k, "3.5.1", 10, "TRI019") == "breaks"
    # math.log2 on a constexpr: refused by 3.0.0/3.1.0 (triton-lang/triton#4321), then allowed
    assert effect_at(recorded, k, "3.1.0", 11, "TRI019") == "breaks"
    assert effect_at(recorded, k, "3.2.0", 11, "TRI019") == "does-not-affect"


TE_BEFORE = HEAD + (
    "from triton.language import core\n\n\n"
    "@triton.jit\n"
    "def swap(x, flip, n_dims: tl.constexpr):\n"
    "    idtype = core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)\n"  # 10
    "    return x.to(idtype, bitcast=True) ^ flip\n"
)
TE_AFTER = HEAD + (
    "from triton.language import core\nfrom packaging import version\n\n"
    "get_int_dtype = core.get_int_dtype\n"
    'if version.parse(triton.__version__) >= version.parse("3.5.0"):\n'
    "    get_int_dtype = triton.constexpr_function(get_int_dtype)\n\n\n"
    "@triton.jit\n"
    "def swap(x, flip, n_dims: tl.constexpr):\n"
    "    idtype = get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)\n"
    "    return x.to(idtype, bitcast=True) ^ flip\n"
)


def test_triton_calls_that_are_not_plain_python(recorded, tmp_path: Path) -> None:
    # libdevice wrappers on tensors (Liger-Kernel's rsqrt/tanh) and Triton's own functions
    # reached through tl (fla's tl.core.get_int_dtype) are no plain Python calls here
    src = tmp_path / "k.py"
    src.write_text(
        HEAD + "from triton.language.extra.libdevice import rsqrt\n\n\n"
        "@triton.jit\n"
        "def k(p, BITS: tl.constexpr):\n"
        "    x = rsqrt(tl.load(p))\n"
        "    tl.store(p, x.to(tl.core.get_int_dtype(BITS, True), bitcast=True))\n"
    )
    found = scan_for(recorded, [src], "3.9.0").findings
    assert [f.text() for f in found if f.rule.id == "TRI019"] == []


def test_triton_function_in_a_kernel_replay(recorded, tmp_path: Path) -> None:
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(TE_BEFORE)
    after.write_text(TE_AFTER)
    assert effect_at(recorded, before, "3.5.1", 10, "TRI019") == "breaks"
    assert effect_at(recorded, before, "3.4.0", 10, "TRI019") == "does-not-affect"
    # rebound under a version test: the plain function below 3.5.0, constexpr_function from it
    for release in ("3.3.1", "3.4.0", "3.5.1", "3.9.0"):
        failing = [f.text() for f in scan_for(recorded, [after], release).findings if f.fails]
        assert failing == [], release


FG_BEFORE = HEAD + (
    "\n\n@triton.autotune(\n"
    '    configs=[triton.Config({"BLOCK_SIZE": 128})],\n'
    '    key=["N", "C", "W_in", "W_out"],\n'  # line 9
    ")\n"
    "@triton.jit\n"
    "def upsample(inp, out, NC, W_in, W_out, scale, BLOCK_SIZE: tl.constexpr):\n"
    "    pass\n"
)


def test_autotune_key_naming_a_non_argument_replay(recorded, tmp_path: Path) -> None:
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(FG_BEFORE)
    after.write_text(FG_BEFORE.replace('["N", "C", "W_in", "W_out"]', '["NC", "W_in", "W_out"]'))
    assert effect_at(recorded, before, "3.9.0", 9, "TRI020") == "breaks"
    assert effect_at(recorded, before, "3.8.0", 9, "TRI020") == "does-not-affect"
    # 3.0.0/3.1.0 refused it too (an eager index of the key); 3.2.0's interpreter launches no
    # autotuned kernel at all, so its column says nothing about the key (the control case)
    assert effect_at(recorded, before, "3.1.0", 9, "TRI020") == "breaks"
    assert effect_at(recorded, before, "3.2.0", 9, "TRI020") == "does-not-affect"
    assert [f for f in scan_for(recorded, [after], "3.9.0").findings if f.fails] == []


def test_runtime_members_are_decided_by_the_census(recorded, tmp_path: Path) -> None:
    src = tmp_path / "lib.py"
    src.write_text(
        HEAD + "from triton.runtime.autotuner import Autotuner\n\n\n"
        "class LibTuner(Autotuner):\n"
        "    def __init__(self, fn, arg_names, configs, key, **kw):\n"
        "        super().__init__(fn, arg_names, configs, key, None, None, do_bench=kw.get('b'))\n"
        "\n\n"
        "@triton.jit\n"
        "def k(x, BLOCK: tl.constexpr):\n"
        "    pass\n\n\n"
        "def clear():\n"
        "    k.cache.clear()\n"  # line 19
        "    k.device_caches.clear()\n"  # line 20
    )
    # Autotuner's do_bench= exists from 3.2.0 (the census's recorded signature)
    assert effect_at(recorded, src, "3.1.0", 10, "TRI021") == "breaks"
    assert effect_at(recorded, src, "3.2.0", 10, "TRI021") == "does-not-affect"
    # JITFunction.cache went at 3.3.1, device_caches came then
    assert effect_at(recorded, src, "3.2.0", 19, "TRI021") == "does-not-affect"
    assert effect_at(recorded, src, "3.3.1", 19, "TRI021") == "breaks"
    assert effect_at(recorded, src, "3.2.0", 20, "TRI021") == "breaks"
    assert effect_at(recorded, src, "3.3.1", 20, "TRI021") == "does-not-affect"
