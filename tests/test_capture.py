"""Compile what ran, from the object that ran: the capture records each kernel's own definition
(source, qualified name with <locals>, globals, helpers) and the aot step rebuilds exactly that
function, never importing the test module by name."""

import json
import sys
from pathlib import Path

import pytest

from matrix.backends.kernels import KernelNotLoadable, import_once
from matrix.measure import capture
from matrix.measure.kernel_compiles import coverage, coverage_text
from matrix.measure.suite import run_suite_recorded
from tests.support import compile_in_child

ROOT = Path(__file__).resolve().parent.parent
SHADOW = ROOT / "tests" / "fixtures" / "shadow_suite"
LOCAL = "test_local_kernel_shadows_the_module_level_one.<locals>.shadowed_kernel"

# In a child without the interpreter, as the aot cell compiles: rebuild every launch, compile
# it for cuda:90, and report its TTIR's arith ops, its record and whether the test module was
# ever imported.
COMPILE_ALL = """
import json, re, sys
from matrix.backends.aot import compile_for_target
from matrix.backends.kernels import compile_launch, rebuild_kernel
spec = json.load(sys.stdin)
out = {}
for launch in spec["launches"]:
    rec = compile_launch(launch, "cuda:90", None, spec["sources"])
    ops = []
    if rec["status"] == "compiled":
        fn, _ = rebuild_kernel(launch, spec["sources"])
        art = compile_for_target(fn, launch["signature"], launch["constexprs"], "cuda:90")
        ops = sorted(set(re.findall(r"arith\\.\\w+", art.ir["ttir"])))
    out[launch["qualname"]] = {"status": rec["status"], "detail": rec["detail"],
                               "source": rec["source"], "ops": ops}
out["imported test module"] = "test_shadow" in sys.modules
print(json.dumps(out))
"""


def quiet(*a):
    pass


@pytest.fixture(scope="module")
def shadow_run(tmp_path_factory):
    got = run_suite_recorded(SHADOW, tmp_path_factory.mktemp("shadow"), quiet, 120)
    assert {t["id"].split("::")[-1]: t["outcome"] for t in got.tests} == {
        "test_module_level_kernel": "passed",
        "test_local_kernel_shadows_the_module_level_one": "passed",
        "test_helper_and_globals": "passed",
        "test_kernel_built_from_a_string": "passed",
    }, got.tests
    return got


@pytest.mark.interpreter
def test_each_launch_records_its_own_definition(shadow_run):
    by_qualname = {launch["qualname"]: launch for launch in shadow_run.launches}
    assert set(by_qualname) == {"shadowed_kernel", LOCAL, "helper_kernel", "built_kernel"}
    local, module_level = by_qualname[LOCAL], by_qualname["shadowed_kernel"]
    # Same bare name, two kernels: different sources, definitions and launch keys.
    assert local["name"] != module_level["name"]  # the qualified name keeps <locals>
    assert local["source_hash"] != module_level["source_hash"]
    assert local["key"] != module_level["key"]
    sources = shadow_run.kernel_sources
    assert "* 2" in sources[local["definition"]]["source"]
    # Names only the annotations read are recorded too: the rebuilt def evaluates them.
    assert sources[local["definition"]]["globals"]["tl"] == {
        "kind": "module",
        "name": "triton.language",
    }
    assert "+ 1" in sources[module_level["definition"]]["source"]
    assert sources[local["definition"]]["source"].startswith("def shadowed_kernel(")
    assert sources[local["definition"]]["file"] == "test_shadow.py"
    built = sources[by_qualname["built_kernel"]["definition"]]
    assert built["file"] == "<string>" and "- 7" in built["source"], built
    helper = sources[by_qualname["helper_kernel"]["definition"]]
    assert helper["globals"]["OFFSET"] == {"kind": "value", "value": 5, "tuple": False}
    scaled = helper["globals"]["_scaled"]
    assert scaled["kind"] == "jit"
    assert sources[scaled["id"]]["globals"]["SCALE"] == {"kind": "constexpr", "value": 3}
    json.dumps(shadow_run.kernel_sources)  # the raw file must be able to hold them


@pytest.mark.interpreter
@pytest.mark.slow
def test_the_test_local_kernel_is_the_one_compiled(shadow_run):
    spec = json.dumps({"launches": shadow_run.launches, "sources": shadow_run.kernel_sources})
    got = compile_in_child(COMPILE_ALL, stdin=spec, timeout=600)
    assert got.pop("imported test module") is False  # rebuilt from the record alone
    assert {r["source"] for r in got.values()} == {"recorded"}
    local, module_level = got[LOCAL], got["shadowed_kernel"]
    assert local["status"] == module_level["status"] == "compiled", got
    assert "arith.mulf" in local["ops"] and "arith.addf" not in local["ops"], local
    assert "arith.addf" in module_level["ops"] and "arith.mulf" not in module_level["ops"]
    built = got["built_kernel"]
    assert built["status"] == "compiled" and "arith.subf" in built["ops"], built
    helper = got["helper_kernel"]
    # Compiled code may read only constexpr globals (Triton refuses OFFSET = 5 where the
    # interpreter takes it): a faithful rebuild gets the release's own answer either way.
    if helper["status"] == "rejected":
        assert "OFFSET" in helper["detail"], helper
    else:
        assert helper["status"] == "compiled" and "arith.mulf" in helper["ops"], helper


def test_a_module_that_fails_to_import_is_imported_once(tmp_path, monkeypatch):
    counter = tmp_path / "count"
    (tmp_path / "broken_at_import.py").write_text(
        f"from pathlib import Path\np = Path({str(counter)!r})\n"
        "p.write_text(str(int(p.read_text() or 0) + 1) if p.exists() else '1')\n"
        "raise RuntimeError('0 active drivers')\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    for _ in range(3):
        with pytest.raises(KernelNotLoadable, match="RuntimeError: 0 active drivers"):
            import_once("broken_at_import", str(tmp_path))
    assert counter.read_text() == "1"


def test_decorators_are_stripped_wherever_they_span_lines():
    source = (
        "    @triton.autotune(\n        configs=[triton.Config({'B': 32})],\n        key=['n'],\n"
        "    )\n    @triton.jit\n    def k(x, B: tl.constexpr):\n        pass\n"
    )
    text, offset = capture.strip_decorators(source)
    assert text == "def k(x, B: tl.constexpr):\n    pass\n" and offset == 5
    with pytest.raises(ValueError, match="no function definition"):
        capture.strip_decorators("x = 1\n")


def test_remembering_exec_sources_keeps_what_exec_does(monkeypatch):
    # The plugin's module has `from __future__ import annotations`; code a team execs must
    # still get its own caller's flags (here none: annotations are evaluated), and its text.
    monkeypatch.setattr(capture, "_made_from", {})
    ns = {}
    capture._exec("import triton\n@triton.jit\ndef k(x: int):\n    return x\n", ns)
    assert ns["k"].fn.__annotations__ == {"x": int}
    assert capture._made_from[ns["k"].fn.__code__].startswith("import triton")
    code = capture._compile("def f(y: int):\n    return y  # jit\n", "<s>", "exec")
    g = {}
    exec(code, g)
    assert g["f"].__annotations__ == {"y": int} and g["f"].__code__ in capture._made_from


def test_coverage_counts_compiler_answers_per_specialization():
    recs = [
        {"key": "a", "status": "compiled"},
        {"key": "a", "status": "rejected"},
        {"key": "b", "status": "compiled"},
        {"key": "b", "status": "skipped"},
    ]
    cov = coverage(recs, launches=3)
    assert cov == {
        "specializations": 3,
        "answered_specializations": 1,
        "compiles": 4,
        "answered": 3,
        "compiled": 2,
        "rejected": 1,
        "unanswered": {"skipped": 1},
    }
    assert coverage_text(cov) == (
        "1 of 3 captured specializations compiled (3 of 4 compiles answered: 2 compiled, "
        "1 rejected; 1 skipped)"
    )


UNRECORDED = """
import json, sys
from matrix.backends.kernels import compile_launch
launch = {"key": "k1", "kernel": "m:k", "definition": "d1", "signature": {"x": "*fp32"},
          "constexprs": {}, "options": {}}
sources = {"d1": {"name": "k", "qualname": "k", "module": "m", "file": "m.py", "line": 3,
                  "source": "def k(x):\\n    tl.store(x, WEIRD)\\n", "source_hash": "h",
                  "globals": {"tl": {"kind": "module", "name": "triton.language"},
                              "WEIRD": {"kind": "unrecorded", "type": "Thing", "repr": "<T>"}},
                  "closure": {}, "jit": {}, "cut": []},
           "d2": {"name": "k", "qualname": "k", "source": "", "cut": ["source not available"]}}
first = compile_launch(launch, "cuda:90", None, sources)
second = compile_launch({**launch, "key": "k2", "definition": "d2"}, "cuda:90", None, sources)
print(json.dumps([first, second]))
"""


@pytest.mark.slow
def test_a_kernel_that_cannot_be_rebuilt_is_skipped_with_its_reason():
    first, second = compile_in_child(UNRECORDED, timeout=300)
    assert first["status"] == "skipped" and "WEIRD" in first["detail"], first
    assert "were not rebuilt" in first["detail"]
    assert second["status"] == "skipped" and "source not available" in second["detail"], second


def test_a_kernel_keeps_its_identity_across_releases():
    # Module and import paths move between releases (libdevice did); the source, constants and
    # helpers are what the kernel is, so that a launch pairs with itself on both sides.
    defs = capture._Definitions()

    def record(libdevice_path: str, scale: int) -> dict:
        return {"qualname": "k", "source_hash": "s1", "closure": {},
                "globals": {"libdevice": {"kind": "module", "name": libdevice_path},
                            "SCALE": {"kind": "constexpr", "value": scale}}}  # fmt: skip

    defs.records = {
        "a": record("triton.language.math", 3),
        "b": record("triton.language.extra.libdevice", 3),
        "c": record("triton.language.extra.libdevice", 4),
    }
    assert defs.stable_digest("a") == defs.stable_digest("b") != defs.stable_digest("c")


def test_names_only_the_annotations_read_are_recorded(monkeypatch):
    # `def kernel(X, SIZE: tl.constexpr): pass` reads `tl` only in its annotation, which the
    # rebuilt `def` evaluates: without it the rebuild fails (Triton's test_empty_kernel).
    import types

    fake = types.ModuleType("fake_tl")
    fake.constexpr = object
    ns = {"tl": fake}
    monkeypatch.setattr(capture, "_made_from", {})
    capture._exec("def kernel(X, SIZE: tl.constexpr):\n    pass  # jit\n", ns)
    defs = capture._Definitions()
    record = defs.records[defs.define(ns["kernel"])]
    assert record["globals"] == {"tl": {"kind": "module", "name": "fake_tl"}}, record
