"""The API census: the probe's recording (on the installed release) and matrix.analyze.census's
reading, diffing and works-on query, on two snapshots recorded from real runs (3.8.0 and 3.9.0,
cut down by tests/fixtures/census/cut.py) and on small hand-made documents for the cases those
lack."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from matrix.analyze import census as C
from matrix.analyze import census_diff as D
from matrix.probes.api_surface import probe as probe

FIXTURES = Path(__file__).parent / "fixtures" / "census"


@pytest.fixture(scope="module")
def recorded() -> dict[str, C.Census]:
    return C.load_censuses(FIXTURES)


def doc(version: str, modules: dict, defs: dict | None = None, env: dict | None = None) -> dict:
    return {
        "format": 1,
        "version": version,
        "modules": modules,
        "defs": defs or {},
        "env": env or {},
    }


def module(names: dict, file: str = "x.py") -> dict:
    return {"status": "ok", "file": file, "names": names}


# -- the probe's spelling, read back --------------------------------------------------------
def test_params_round_trip_every_kind() -> None:
    def f(a, /, b, c=1, *args, d, e="x", **kw):
        pass

    texts = probe.params_of(f)
    assert texts == ["a", "/", "b", "c=1", "*args", "d", "e='x'", "**kw"]
    params = C.parse_params(texts)
    assert C.signature_text(params) == "(a, /, b, c=1, *args, d, e='x', **kw)"
    assert [(p.name, p.kind, p.default) for p in params] == [
        ("a", C.POSITIONAL_ONLY, None),
        ("b", C.POSITIONAL_OR_KEYWORD, None),
        ("c", C.POSITIONAL_OR_KEYWORD, "1"),
        ("args", C.VAR_POSITIONAL, None),
        ("d", C.KEYWORD_ONLY, None),
        ("e", C.KEYWORD_ONLY, "'x'"),
        ("kw", C.VAR_KEYWORD, None),
    ]


def test_bare_star_marks_keyword_only() -> None:
    def g(x, *, y=2):
        pass

    assert probe.params_of(g) == ["x", "*", "y=2"]
    assert C.parse_params(probe.params_of(g))[1].kind == C.KEYWORD_ONLY


def test_pybind_enum_repr_and_addresses_are_normalised() -> None:
    assert probe.normal_repr("<PROPAGATE_NAN.NONE: 0>") == "PROPAGATE_NAN.NONE"
    assert probe.normal_repr("<function f at 0x7f00>") == "<function f>"
    assert probe.normal_repr("'<a: 1>'") == "'<a: 1>'"


def test_constexpr_default_is_recorded_and_read_as_its_value() -> None:
    import triton.language as tl

    # The probe sees the value itself: exact, strings keep their quotes.
    assert probe.short_repr(tl.constexpr(10)) == "10"
    assert probe.short_repr(tl.constexpr("global")) == "'global'"
    assert probe.short_repr(tl.constexpr(None)) == "None"
    # Recorded text (censuses written before the rule) reads the same way.
    assert probe.normal_repr("constexpr[10]") == "10"
    assert probe.normal_repr("constexpr[constexpr[1]]") == "1"
    assert probe.normal_repr("'constexpr[10]'") == "'constexpr[10]'"  # a string, left alone
    assert C.parse_params(["n_rounds=constexpr[10]"])[0].default == "10"


# triton.language.random.rand as the api_surface probe recorded it on 3.5.1 and on 3.6.0
# (reports/raw/triton-3.5.1-numpy-2.4.6.json, triton-3.6.0-...): 3.6.0 wrapped the
# module's N_ROUNDS_DEFAULT in tl.constexpr; the default is still 10.
RAND_351 = ["seed", "offset", "n_rounds=10"]
RAND_360 = ["seed", "offset", "n_rounds=constexpr[10]"]


def rand_census(version: str, params: list[str]) -> C.Census:
    key = "triton.language.random.rand"
    defs = {key: {"kind": "jit", "file": "language/random.py", "line": 146, "params": params}}
    return C.Census(doc(version, {"triton.language": module({"rand": key})}, defs))


def test_a_default_wrapped_in_constexpr_is_no_change() -> None:
    old, new = rand_census("3.5.1", RAND_351), rand_census("3.6.0", RAND_360)
    assert D.diff(old, new) == []
    both = {"3.5.1": old, "3.6.0": new}
    assert C.omitted_defaults(both, "triton.language.rand", positional=2) == {}
    # A default that did change is still said (the check above can fail).
    changed = rand_census("3.6.0", ["seed", "offset", "n_rounds=constexpr[7]"])
    [change] = D.diff(old, changed)
    assert change.text == "triton.language.rand: n_rounds default 10 -> 7"


def test_env_reads_every_spelling() -> None:
    source = """
import os
a = os.getenv("TRITON_A")
b = os.environ.get("TRITON_B", "0")
c = os.environ["TRITON_C"]
d = "TRITON_D" in os.environ
e = getenv_bool("TRITON_E")
f = os.environ.get(name_in_a_variable)
g = "not_an_env_name" in os.environ
class compilation_knobs:
    dump: env_bool = env_bool("TRITON_KERNEL_DUMP")
"""
    found = probe.env_reads(ast.parse(source))
    assert sorted(found) == [
        ("TRITON_A", 3, None),
        ("TRITON_B", 4, None),
        ("TRITON_C", 5, None),
        ("TRITON_D", 6, None),
        ("TRITON_E", 7, None),
        ("TRITON_KERNEL_DUMP", 11, "compilation_knobs.dump"),
    ]


# -- the probe on the installed release -----------------------------------------------------
@pytest.fixture(scope="module")
def live() -> dict:
    return probe.census()


def test_live_census_records_what_host_code_uses(live: dict) -> None:
    c = C.Census(live)
    import triton

    assert c.release == triton.__version__
    config = c.lookup("triton.Config")
    assert config is not None and config.kind == "class"
    assert config.fields["kwargs"] == "{}"
    assert config.fields["num_warps"] == repr(triton.Config({}).num_warps)
    assert config.file == "runtime/autotuner.py" and isinstance(config.line, int)
    dot = c.lookup("triton.language.dot")
    assert dot is not None and [p.name for p in dot.public_params][:2] == ["input", "other"]
    assert c.lookup("triton.testing.do_bench") is not None
    # A module this release lacks is recorded as such, and its names are absent, not unknown.
    ops = live["modules"]["triton.ops"]
    assert ops["status"] == "missing" and "triton.ops" in ops["error"]
    assert c.status("triton.ops.matmul") == "absent"
    # Triton reads its interpreter switch; the site is a real line of the named file.
    site_file, site_line = live["env"]["TRITON_INTERPRET"]["sites"][0]
    root = Path(triton.__file__).parent
    assert "TRITON_INTERPRET" in (root / site_file).read_text().splitlines()[site_line - 1]


def test_live_census_is_compact(live: dict) -> None:
    # The committed reports hold one per release: a few hundred kB at most (issue 16).
    size = len(json.dumps(live, separators=(",", ":")))
    assert size < 400_000, size


# -- diff on the recorded snapshots ---------------------------------------------------------
def test_fixtures_are_recorded_runs(recorded: dict[str, C.Census]) -> None:
    assert list(recorded) == ["3.8.0", "3.9.0"]


def test_diff_3_8_to_3_9(recorded: dict[str, C.Census]) -> None:
    changes = D.diff(recorded["3.8.0"], recorded["3.9.0"])
    by_name = {}
    for change in changes:
        by_name.setdefault(change.name, []).append(change)
    (advance,) = by_name["triton.language.advance"]
    assert advance.kind == "removed" and advance.breaking
    assert str(advance.evidence[0]).startswith("3.8.0 language/core.py:")
    load = [c for c in by_name["triton.language.load"] if c.kind == "signature"]
    assert len(load) == 1 and load[0].breaking and "-boundary_check=()" in load[0].text
    assert "boundary_check" in load[0].params
    # Named once: tl.load and tl.core.load are one definition; no entry for tl.core.load.
    assert "triton.language.core.load" not in by_name
    cumprod = by_name["triton.language.cumprod"][0]
    assert cumprod.kind == "signature" and not cumprod.breaking  # a new optional parameter
    # The pybind11 enum spelling change is not a changed default.
    assert not [c for c in changes if "PROPAGATE_NAN" in c.text]


def test_grouped_pairs_in_order(recorded: dict[str, C.Census]) -> None:
    (pair,) = D.changes_by_pair(recorded)
    assert (pair.base, pair.candidate) == ("3.8.0", "3.9.0")
    headings = [h for h, _ in pair.groups]
    assert headings.index("Names removed") < headings.index("Signatures changed")
    assert pair.count == len(D.diff(recorded["3.8.0"], recorded["3.9.0"]))


# -- works on -------------------------------------------------------------------------------
def test_works_on_a_removed_name(recorded: dict[str, C.Census]) -> None:
    w = C.works_on(recorded, "triton.language.advance")
    assert w.ok == ["3.8.0"] and w.oldest == w.newest == "3.8.0"
    assert w.per_release["3.9.0"].status == "absent"


def test_works_on_a_removed_keyword(recorded: dict[str, C.Census]) -> None:
    w = C.works_on(recorded, "triton.language.load", keywords=("mask", "boundary_check"))
    assert w.ok == ["3.8.0"]
    assert w.per_release["3.9.0"].status == "rejects"
    reason = w.per_release["3.9.0"].reason
    assert reason.startswith("no keyword boundary_check (signature: (pointer, mask=None, other=")
    assert ", *, cache_modifier=" in reason
    assert C.works_on(recorded, "triton.language.load", keywords=("mask",)).ok == ["3.8.0", "3.9.0"]


def test_works_on_positional_slots(recorded: dict[str, C.Census]) -> None:
    # 3.9.0 made cache_modifier and later parameters of tl.load keyword-only.
    n38 = len(
        [
            p
            for p in recorded["3.8.0"].lookup("triton.language.load").public_params
            if p.kind == C.POSITIONAL_OR_KEYWORD
        ]
    )
    w = C.works_on(recorded, "triton.language.load", positional=n38)
    assert w.per_release["3.8.0"].status == "ok"
    assert w.per_release["3.9.0"].status == "rejects"


def test_works_on_through_a_submodule_and_members(recorded: dict[str, C.Census]) -> None:
    assert C.works_on(recorded, "triton.language.math.exp").ok == ["3.8.0", "3.9.0"]
    assert recorded["3.9.0"].lookup("triton.Config.all_kwargs") is not None
    assert recorded["3.9.0"].lookup("triton.Config.no_such_member") is None


def test_unknown_is_not_absent() -> None:
    old = C.Census(
        doc(
            "3.0.0",
            {
                "triton.tools.disasm": {
                    "status": "import-error",
                    "error": "ModuleNotFoundError: No module named 'triton.common'",
                }
            },
        )
    )
    w = C.works_on({"3.0.0": old, "3.1.0": None}, "triton.tools.disasm.extract")
    assert [s.status for s in w.per_release.values()] == ["unknown", "unknown"]
    assert w.ok == [] and w.failing() == {}


# -- hand-made documents for what the snapshots lack ----------------------------------------
def config_doc(version: str, stages: str) -> dict:
    return doc(
        version,
        {"triton": module({"Config": "t.Config"})},
        {
            "t.Config": {
                "kind": "class",
                "file": "runtime/autotuner.py",
                "line": 10,
                "params": ["kwargs", "num_warps=4", f"num_stages={stages}"],
                "fields": {"kwargs": "{}", "num_warps": "4", "num_stages": stages},
            }
        },
    )


def test_changed_default_named_once_and_omitted_defaults() -> None:
    a, b = C.Census(config_doc("3.2.0", "2")), C.Census(config_doc("3.3.1", "3"))
    changes = D.diff(a, b)
    assert [(c.kind, c.text) for c in changes] == [
        ("default", "triton.Config: num_stages default 2 -> 3")
    ]
    assert [str(e) for e in changes[0].evidence] == [
        "3.2.0 runtime/autotuner.py:10",
        "3.3.1 runtime/autotuner.py:10",
    ]
    cs = {"3.2.0": a, "3.3.1": b}
    assert C.omitted_defaults(cs, "triton.Config", positional=1) == {
        "num_stages": {"3.2.0": "2", "3.3.1": "3"}
    }
    assert C.omitted_defaults(cs, "triton.Config", passed=("num_stages",), positional=1) == {}


def test_moved_and_module_removed() -> None:
    f = {"kind": "jit", "file": "language/math.py", "line": 5, "params": ["x"]}
    g = {"kind": "jit", "file": "language/standard.py", "line": 9, "params": ["x"]}
    a = C.Census(
        doc(
            "3.0.0",
            {
                "triton.language.math": module({"umulhi": "m.umulhi"}),
                "triton.language": module({}),
                "triton.ops": module({"matmul": "o.matmul"}, "ops/__init__.py"),
            },
            {
                "m.umulhi": f,
                "o.matmul": {
                    "kind": "function",
                    "file": "ops/matmul.py",
                    "line": 1,
                    "params": ["a", "b"],
                },
            },
        )
    )
    b = C.Census(
        doc(
            "3.1.0",
            {
                "triton.language.math": module({}),
                "triton.language": module({"umulhi": "s.umulhi"}),
                "triton.ops": {
                    "status": "missing",
                    "error": "ModuleNotFoundError: No module named",
                },
            },
            {"s.umulhi": g},
        )
    )
    changes = D.diff(a, b)
    assert [(c.kind, c.name) for c in changes] == [
        ("module-removed", "triton.ops"),
        ("moved", "triton.language.math.umulhi"),
    ]
    moved = changes[1]
    assert moved.text == "triton.language.math.umulhi -> triton.language.umulhi"
    assert [str(e) for e in moved.evidence] == [
        "3.0.0 language/math.py:5",
        "3.1.0 language/standard.py:9",
    ]


def test_environment_variables() -> None:
    a = C.Census(
        doc(
            "3.2.0",
            {},
            env={
                "MLIR_ENABLE_REMARK": {"sites": [["backends/nvidia/compiler.py", 211]], "count": 1}
            },
        )
    )
    b = C.Census(
        doc(
            "3.3.1",
            {},
            env={
                "TRITON_X": {
                    "sites": [["knobs.py", 3]],
                    "count": 1,
                    "knobs": ["compilation_knobs.x"],
                },
                "TRITON_CI": {"sites": [["_test_runner.py", 1]], "count": 1, "private": True},
            },
        )
    )
    texts = {c.name: (c.kind, c.text, c.breaking) for c in D.diff(a, b)}
    assert texts["MLIR_ENABLE_REMARK"] == (
        "env-removed",
        "MLIR_ENABLE_REMARK is no longer read by the Python source",
        True,
    )
    assert texts["TRITON_X"] == ("env-added", "TRITON_X is read (knob compilation_knobs.x)", False)
    assert texts["TRITON_CI"] == ("env-private", "TRITON_CI is read", False)


def test_bad_document_names_the_field() -> None:
    with pytest.raises(C.CensusError, match=r"census\.defs: expected dict"):
        C.Census({"format": 1, "version": "3.0.0", "modules": {}, "env": {}})
    with pytest.raises(C.CensusError, match="format"):
        C.Census({"format": 9, "version": "3.0.0", "modules": {}, "defs": {}, "env": {}})


# -- the what-changed page ------------------------------------------------------------------
def test_changes_page_lists_api_changes_with_evidence(tmp_path: Path) -> None:
    from matrix.report import model, render, verdicts
    from matrix.results import read_runs

    runs = read_runs(FIXTURES)
    render.render_site(model.build(runs), tmp_path, claims=verdicts.ClaimsOutcome())
    html = (tmp_path / "changes.html").read_text(encoding="utf-8")
    assert 'id="api"' in html and "3.8.0 → 3.9.0" in html
    (advance,) = [
        c
        for c in D.diff(*C.censuses_from_runs(runs).values())
        if c.name == "triton.language.advance"
    ]
    assert advance.text in html and str(advance.evidence[0]) in html
    # The release page links to the changes instead of dumping the census.
    release = (tmp_path / "releases" / "3.9.0.html").read_text(encoding="utf-8")
    assert "triton.language.core.dot" not in release and "changes.html#api" in release


# -- what the census cannot tell is unknown, never absent -----------------------------------
def test_resolve_says_unknown_where_the_census_did_not_look() -> None:
    c = C.Census(
        doc(
            "3.9.0",
            {
                "triton": module({"runtime": {"kind": "module", "module": "triton.runtime"}}),
                "triton.runtime": module(
                    {"jit": {"kind": "module", "module": "triton.runtime.jit"}, "K": "k.K"}
                ),
            },
            {"k.K": {"kind": "class", "file": "_C/libtriton.so", "line": None, "params": None}},
        )
    )
    assert c.resolve("triton.runtime.jit.JITFunction")[1] == "unknown"
    assert c.resolve("triton.runtime.K.anything")[1] == "unknown"  # a C++ binding's attribute
    assert c.resolve("triton.runtime.nothing_here")[1] == "absent"
    assert c.resolve("torch.compile")[1] == "unknown"
    assert c.resolve("triton.runtime")[1] == "present"


def test_import_failures_are_statuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "exits_on_import.py").write_text("raise SystemExit(2)\n")
    (tmp_path / "needs_missing.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert probe.import_status("no_such_module_xyz")[1]["status"] == "missing"
    assert probe.import_status("needs_missing")[1]["status"] == "import-error"
    failure = probe.import_status("exits_on_import")[1]
    assert failure["status"] == "import-error" and "SystemExit" in failure["error"]


def test_an_object_that_breaks_inspection_is_recorded_not_raised(tmp_path: Path) -> None:
    class Odd:
        @property
        def __signature__(self):  # inspect.signature reads it and gets an exception
            raise RuntimeError("no signature for you")

        def __call__(self) -> None:
            pass

    inspector = probe.Inspector(tmp_path)
    key = inspector.define("m.odd", Odd())
    entry = inspector.defs[key]
    assert entry["kind"] == "uninspectable" and "RuntimeError" in entry["error"]


def test_common_range_of_a_file(recorded: dict[str, C.Census]) -> None:
    both = C.works_on(recorded, "triton.language.dot", positional=2)
    old_only = C.works_on(recorded, "triton.language.advance", positional=2)
    assert C.common_range([both]) == ("3.8.0", "3.9.0", ["3.8.0", "3.9.0"])
    assert C.common_range([both, old_only]) == ("3.8.0", "3.8.0", ["3.8.0"])
    gone = C.works_on(recorded, "triton.language.no_such_name")
    assert C.common_range([both, gone]) == (None, None, [])
    assert C.common_range([]) == (None, None, [])


def test_module_names_keep_its_own_values_not_its_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "census_sample_mod.py").write_text(
        "import os\nfrom typing import TYPE_CHECKING\nBLOCK = 128\n"
        "for leftover in range(2):\n    pass\n"
    )
    (tmp_path / "census_sample_all.py").write_text(
        "__all__ = ['LISTED']\nLISTED = 1\nfor leftover in range(2):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    inspector = probe.Inspector(tmp_path)
    plain = inspector.module_entry("m", importlib.import_module("census_sample_mod"))["names"]
    assert sorted(plain) == ["BLOCK", "leftover"]  # no os, no TYPE_CHECKING
    listed = inspector.module_entry("a", importlib.import_module("census_sample_all"))["names"]
    assert sorted(listed) == ["LISTED"]  # __all__ exists: the loop variable is not API


def test_observe_row(live: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from matrix.probes.support.base import Context

    monkeypatch.setattr(probe, "census", lambda: live)
    obs = probe.observe(Context("aot", None))
    assert obs.status == "recorded" and obs.data["census"] is live
    assert "absent: " in obs.detail and "triton.ops" in obs.detail
    assert "not importable" not in obs.detail.split("absent:")[0]


def test_a_new_parameter_and_its_field_are_one_change() -> None:
    old = config_doc("3.1.0", "3")
    new = config_doc("3.2.0", "3")
    new["defs"]["t.Config"]["params"].append("num_ctas=1")
    new["defs"]["t.Config"]["fields"]["num_ctas"] = "1"
    changes = D.diff(C.Census(old), C.Census(new))
    assert [(c.kind, c.text, c.params, c.breaking) for c in changes] == [
        ("signature", "triton.Config(+num_ctas=1)", ("num_ctas",), False)
    ]


# -- internals: module-level names beyond __all__, members of the classes teams subclass ----
INTERNALS = FIXTURES / "internals"


@pytest.fixture(scope="module")
def internals() -> dict[str, C.Census]:
    return C.load_censuses(INTERNALS)


def _changes(old: C.Census, new: C.Census) -> dict[str, list[D.Change]]:
    by_name: dict[str, list[D.Change]] = {}
    for change in D.diff(old, new):
        for name in (change.name, *change.aliases):
            by_name.setdefault(name, []).append(change)
    return by_name


def test_internal_module_names_beyond_all(internals: dict[str, C.Census]) -> None:
    assert list(internals) == ["3.3.1", "3.4.0", "3.9.0"]
    w = C.works_on(internals, "triton.runtime.cache.default_cache_dir")
    assert [s.status for s in w.per_release.values()] == ["ok", "absent", "absent"]
    assert str(w.per_release["3.3.1"].evidence) == "3.3.1 runtime/cache.py:16"
    (gone,) = _changes(internals["3.3.1"], internals["3.4.0"])[
        "triton.runtime.cache.default_cache_dir"
    ]
    assert gone.kind == "removed" and gone.breaking
    assert [str(e) for e in gone.evidence] == ["3.3.1 runtime/cache.py:16"]


def test_member_signatures_per_release(internals: dict[str, C.Census]) -> None:
    def sig(release: str, name: str) -> str:
        api = internals[release].lookup(name)
        assert api is not None, (release, name)
        return C.signature_text(api.params or ())

    make_ttir = "triton.backends.nvidia.compiler.CUDABackend.make_ttir"
    assert sig("3.3.1", make_ttir) == "(mod, metadata, opt)"
    assert sig("3.4.0", make_ttir) == "(mod, metadata, opt, capability)"
    assert sig("3.9.0", make_ttir) == "(mod, metadata, opt, capability)"
    run = "triton.runtime.jit.JITFunction.run"
    assert {sig(r, run) for r in internals} == {"(*args, grid, warmup, **kwargs)"}
    assert sig("3.3.1", "triton.compiler.CompiledKernel") == "(src, metadata_group, hash)"
    (change,) = [
        c
        for c in _changes(internals["3.3.1"], internals["3.4.0"])[make_ttir]
        if c.kind == "signature"
    ]
    assert change.breaking  # a new required parameter: a subclass's override breaks
    assert change.text.endswith("make_ttir(mod, metadata, opt) -> (mod, metadata, opt, capability)")
    assert [str(e) for e in change.evidence] == [
        "3.3.1 backends/nvidia/compiler.py:162",
        "3.4.0 backends/nvidia/compiler.py:142",
    ]


def test_instance_attributes_and_removed_members(internals: dict[str, C.Census]) -> None:
    old, new, newest = internals["3.3.1"], internals["3.4.0"], internals["3.9.0"]
    # Set on self by __init__: what host code reads off a compiled kernel.
    assert old.status("triton.compiler.CompiledKernel.metadata") == "present"
    assert old.lookup("triton.compiler.CompiledKernel.n_regs").kind == "attribute"
    # 3.9.0's JITFunction gets fn from its base class: still present, not removed.
    assert newest.status("triton.runtime.jit.JITFunction.fn") == "present"
    by_name = _changes(old, new)
    (hooks,) = by_name["triton.compiler.CompiledKernel.launch_enter_hook"]
    assert hooks.kind == "removed" and "launch_exit_hook" in hooks.text
    # CompiledKernel.run: set per instance up to 3.4.0, a property on 3.9.0: read the same way,
    # so neither removed nor changed.
    assert new.lookup("triton.compiler.CompiledKernel.run").kind == "attribute"
    assert newest.lookup("triton.compiler.CompiledKernel.run").kind == "property"
    assert "triton.compiler.CompiledKernel.run" not in _changes(new, newest)


def test_knob_descriptors_are_members(internals: dict[str, C.Census]) -> None:
    knobs = internals["3.4.0"].lookup("triton.knobs.runtime_knobs")
    assert knobs is not None
    # (3.4.0's env_base.default is a method: no default value to record)
    assert knobs.members["interpret"] == {"knob": "env_bool", "env": "TRITON_INTERPRET"}
    newest = internals["3.9.0"].lookup("triton.knobs.runtime_knobs")
    assert newest.members["interpret"]["default"] == "False"
    # A default only one side could record is no change.
    assert "triton.knobs.runtime_knobs.interpret" not in _changes(
        internals["3.4.0"], internals["3.9.0"]
    )
    assert internals["3.3.1"].status("triton.knobs.runtime_knobs") == "absent"


def test_private_members_are_compared_only_where_both_record_them() -> None:
    def one(version: str, members: dict, attrs: list[str] | None = None) -> C.Census:
        entry = {"kind": "class", "file": "runtime/jit.py", "line": 1, "params": [],
                 "members": members, **({"attrs": attrs} if attrs else {})}  # fmt: skip
        return C.Census(doc(version, {"triton": module({"K": "t.K"})}, {"t.K": entry}))

    shallow = one("3.0.0", {"run": ["self"]})
    deep = one("3.1.0", {"run": ["self"], "_bench": ["self", "n"]}, ["cache"])
    assert D.diff(shallow, deep) == []  # the older census did not look: not a change
    deeper = one("3.2.0", {"run": ["self", "x"]}, ["cache"])
    texts = [(c.kind, c.text) for c in D.diff(deep, deeper)]
    assert ("removed", "triton.K: member _bench removed") in texts
    assert ("signature", "triton.K.run() -> (x)") in texts


def test_values_naming_the_environment_compare_from_the_package_root():
    """Recorded on 3.7.1 and 3.8.0 (triton.backends.amd.__path__ in each cell's environment):
    the same package folder, not a change, and no page shows this machine's folders."""
    from matrix.analyze.census import normal_repr

    env = "/work/main/.nox/matrix-envs/triton-{}-numpy-2.4.6/lib/python3.11/site-packages"
    old, new = (f"['{env.format(r)}/triton/backends/amd']" for r in ("3.7.1", "3.8.0"))
    assert normal_repr(old) == normal_repr(new) == "['<site-packages>/triton/backends/amd']"
    assert normal_repr("<function f at 0x7f00>") == "<function f>"
