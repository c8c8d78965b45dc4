"""Feature guards decided per branch and per release (matrix/scan/guards.py), on the committed
recorded data: a fix that guards a call is clean, the unguarded original is flagged.

The fixtures are small sources of our own, modeled on fixes real libraries made (a keyword
gated on ``inspect.signature``, a driver call in ``try/except`` with a fallback, an import of a
removed module with a fallback, a version comparison of a number tuple). The driver call is
``utils.fill_2d_tma_descriptor``, gone from 3.4.0 (``utils.get_device_properties``, there on
every release, was flagged only while the census read ``driver.active`` as the module's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.analyze.census import censuses_from_runs
from matrix.results import Run, read_runs
from tests.test_scan_release import RAW, effects, scan_for


@pytest.fixture(scope="module")
def recorded() -> tuple[list[Run], dict]:
    runs = read_runs(RAW)
    return runs, censuses_from_runs(runs)


ORIGINAL = """import triton
import triton.language as tl


def bench(fn):
    return triton.testing.do_bench(fn, fast_flush=True)


def props():
    return triton.runtime.driver.active.utils.fill_2d_tma_descriptor(0, 0, 0, 0, 0, 0, 0)


from triton.ops.matmul import matmul
"""

FIXED = """import inspect
import triton
import triton.language as tl
from packaging import version

TRITON_VERSION = version.parse(triton.__version__)
HAS_FLUSH = "fast_flush" in inspect.signature(triton.testing.do_bench).parameters


def bench(fn):
    if "fast_flush" in inspect.signature(triton.testing.do_bench).parameters:
        return triton.testing.do_bench(fn, fast_flush=True)
    return triton.testing.do_bench(fn)


def bench_flag(fn):
    if HAS_FLUSH:
        return triton.testing.do_bench(fn, fast_flush=True)
    return triton.testing.do_bench(fn)


def bench_version(fn):
    if TRITON_VERSION < version.parse("3.2.0"):
        return triton.testing.do_bench(fn, fast_flush=True)
    if tuple(int(x) for x in triton.__version__.split(".")[:2]) < (3, 2):
        return triton.testing.do_bench(fn, fast_flush=False)
    return triton.testing.do_bench(fn)


def props():
    try:
        return triton.runtime.driver.active.utils.fill_2d_tma_descriptor(0, 0, 0, 0, 0, 0, 0)
    except (AttributeError, RuntimeError):
        return {}


try:
    from triton.ops.matmul import matmul
except ImportError:
    matmul = None


def use():
    return matmul
"""


def test_the_fixed_code_is_clean_and_the_original_flagged(recorded, tmp_path: Path) -> None:
    (tmp_path / "orig.py").write_text(ORIGINAL)
    (tmp_path / "fixed.py").write_text(FIXED)
    report = scan_for(recorded, [tmp_path / "orig.py"], "3.9.0")
    failing = {(f.line, f.rule.id) for f in report.findings if f.fails}
    assert {(6, "TRI101"), (10, "TRI008")} <= failing
    assert any(line == 13 for line, _ in failing)  # triton.ops, gone since 3.2.0
    fixed = scan_for(recorded, [tmp_path / "fixed.py"], "3.9.0")
    assert [f.text() for f in fixed.findings if f.fails] == []
    notes = {f.line: f.note for f in fixed.findings}
    assert "has a parameter 'fast_flush' only: not run on 3.9.0" in notes[12]
    assert "triton < 3.2.0" in notes[24] and "triton < 3.2.0" in notes[26]
    assert "try/except AttributeError, RuntimeError" in notes[32]


def test_a_guard_is_decided_per_release(recorded, tmp_path: Path) -> None:
    # the branch that passes fast_flush runs where do_bench has it (3.0.0, 3.1.0): it is no
    # hazard there either, since the keyword exists; the plain else branch is never flagged
    (tmp_path / "fixed.py").write_text(FIXED)
    for release in ("3.1.0", "3.9.0"):
        got = scan_for(recorded, [tmp_path / "fixed.py"], release)
        assert [f.text() for f in got.findings if f.fails] == [], release


def test_hasattr_rules_out_the_body_where_the_name_is_absent(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        "import triton\nimport triton.language as tl\n"
        'if hasattr(tl, "_experimental_make_tensor_descriptor"):\n'
        "    make = tl._experimental_make_tensor_descriptor\n"  # line 4
        'elif getattr(tl, "make_tensor_descriptor", None) is not None:\n'
        "    make = tl.make_tensor_descriptor\n"
        "make2 = tl._experimental_make_tensor_descriptor\n"  # line 7: unguarded
    )
    found = effects(scan_for(recorded, [src], "3.9.0"))
    assert (4, "TRI011", "does-not-affect") in found
    assert (7, "TRI011", "breaks") in found
    # on 3.3.1, where the census has it, the guarded line runs and works
    assert (4, "TRI011", "does-not-affect") in effects(scan_for(recorded, [src], "3.3.1"))


def test_a_handler_that_reraises_is_no_fallback(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        "import triton\n"
        "def props():\n"
        "    try:\n"
        "        return triton.runtime.driver.active.utils.fill_2d_tma_descriptor(0, 0)\n"
        "    except AttributeError as e:\n"
        "        raise RuntimeError('needs a newer Triton') from e\n"
        "def bench(fn):\n"
        "    try:\n"
        "        return triton.testing.do_bench(fn, fast_flush=True)\n"  # line 9
        "    except ImportError:\n"  # the refusal is a TypeError: not caught
        "        return None\n"
        "try:\n"
        "    shim = triton.language.libdevice\n"  # line 13: AttributeError, not ImportError
        "except ImportError:\n"
        "    shim = None\n"
    )
    found = {(line, rule) for line, rule, effect in effects(scan_for(recorded, [src], "3.9.0"))
             if effect != "does-not-affect"}  # fmt: skip
    assert {(4, "TRI008"), (9, "TRI101")} <= found
    assert any(line == 13 for line, _ in found)


def test_the_fallback_runs_only_where_the_try_body_fails(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        "import triton\n"
        "try:\n"
        "    from triton.tools.tensor_descriptor import TensorDescriptor\n"
        "except ImportError:\n"
        "    from triton.tools.experimental_descriptor import create_2d_tma_descriptor\n"  # 5
    )
    got = scan_for(recorded, [src], "3.9.0")
    (f,) = [f for f in got.findings if f.line == 5 and f.rule.id == "TRI011"]
    assert f.effect == "does-not-affect" and "fallback of the try at line 3" in f.note
    # on 3.3.1 the try body's module does not exist: the fallback runs, and is judged
    (old,) = [f for f in scan_for(recorded, [src], "3.3.1").findings if f.line == 5]
    assert "fallback" not in old.note


def test_callable_of_getattr_guards_like_getattr(recorded, tmp_path: Path) -> None:
    """`if callable(getattr(tl, "x", None)):` (compat/descriptors.py's spelling) runs exactly
    where `x` exists: callable(None) is False. Its elif runs only where x is absent."""
    src = tmp_path / "k.py"
    src.write_text(
        "import triton\nimport triton.language as tl\n"
        'if callable(getattr(tl, "_experimental_make_tensor_descriptor", None)):\n'
        "    make = tl._experimental_make_tensor_descriptor\n"  # line 4
        "make2 = tl._experimental_make_tensor_descriptor\n"  # line 5: unguarded
    )
    found = effects(scan_for(recorded, [src], "3.9.0"))
    assert (4, "TRI011", "does-not-affect") in found
    assert (5, "TRI011", "breaks") in found


def test_a_feature_test_kept_on_self_guards_like_one_spelt_out(recorded, tmp_path: Path) -> None:
    # tritonbench's AsyncTaskContext: __init__ keeps hasattr(tl, "async_task") on self and
    # __enter__ calls tl.async_task under it (removed in 3.6.0); an attribute the file
    # assigns twice may hold anything, so its test guards nothing
    src = tmp_path / "ctx.py"
    src.write_text(
        "import triton.language as tl\n\n\n"
        "class AsyncTask:\n"
        "    def __init__(self, ids):\n"
        '        self._has = hasattr(tl, "async_task")\n'
        "        self._twice = True\n"
        "        self.ids = ids\n\n"
        "    def enter(self):\n"
        "        if self._has:\n"
        "            return tl.async_task(self.ids)\n"  # line 12: guarded
        "        if self._twice:\n"
        "            return tl.async_task(self.ids)\n"  # line 14: not
        "        return None\n\n"
        "    def reset(self):\n"
        '        self._twice = hasattr(tl, "async_task")\n'
    )
    found = effects(scan_for(recorded, [src], "3.6.0"))
    assert found == {(12, "TRI100", "does-not-affect"), (14, "TRI100", "breaks")}
