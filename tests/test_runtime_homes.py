"""Where hooks, knobs and driver utilities live (issue 44): the homes table, the census's
resolution of instance paths (``triton.knobs.runtime.X``, ``driver.active.X``), the diff's
"moved" entries and the scanner rule TRI022 that names the new path.

Synthetic censuses test the logic; the committed censuses check the data file (every path it
lists resolves on some recorded release) and the rule end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.analyze import homes
from matrix.analyze.census import Census, censuses_from_runs, load_homes
from matrix.analyze.census_diff import diff
from matrix.results import Run, read_runs
from tests.test_scan_release import RAW, scan_for

FIXTURE = Path(__file__).parent / "fixtures" / "runtime_homes" / "profiler_hooks.py"


def _census(version: str, hook_on_class: bool) -> Census:
    """A census with CompiledKernel (its hook a class member where ``hook_on_class``) and a
    knobs module whose ``runtime`` instance has the hook otherwise."""
    compiled = {"kind": "class", "file": "compiler/compiler.py", "line": 1, "params": [],
                "members": {"run": ["self"]}}  # fmt: skip
    if hook_on_class:
        compiled["members"]["launch_enter_hook"] = {"value": "None"}
    knobs_class = {"kind": "class", "file": "knobs.py", "line": 5, "params": [],
                   "members": {"launch_enter_hook": {"value": "None"}}}  # fmt: skip
    modules = {
        "triton.compiler": {"status": "ok", "file": "compiler/__init__.py",
                            "names": {"CompiledKernel": "triton.compiler.compiler.CompiledKernel"}},
        "triton.compiler.compiler": {"status": "ok", "file": "compiler/compiler.py",
                            "names": {"CompiledKernel": "triton.compiler.compiler.CompiledKernel"}},
        "triton.knobs": (
            {"status": "missing", "error": "ModuleNotFoundError"}
            if hook_on_class
            else {"status": "ok", "file": "knobs.py", "names": {"runtime": {
                "kind": "value", "type": "runtime_knobs",
                "repr": "<triton.knobs.runtime_knobs object at 0x7f>"}}}
        ),
    }  # fmt: skip
    defs = {"triton.compiler.compiler.CompiledKernel": compiled}
    if not hook_on_class:
        defs["triton.knobs.runtime_knobs"] = knobs_class
    return Census({"format": 1, "version": version, "modules": modules, "defs": defs, "env": {}})


def test_an_instance_bound_in_a_module_resolves_through_its_class():
    new = _census("3.4.0", hook_on_class=False)
    assert new.status("triton.knobs.runtime.launch_enter_hook") == "present"
    assert new.status("triton.knobs.runtime.no_such_knob") == "absent"
    assert new.status("triton.compiler.CompiledKernel.launch_enter_hook") == "absent"


def test_a_hook_that_moved_is_one_moved_change_naming_both_paths():
    old, new = _census("3.3.1", True), _census("3.4.0", False)
    moved = [c for c in diff(old, new) if c.kind == "moved"]
    assert [c.name for c in moved] == ["triton.compiler.compiler.CompiledKernel.launch_enter_hook"]
    assert "-> triton.knobs.runtime.launch_enter_hook" in moved[0].text
    assert moved[0].breaking
    # nothing moved between two releases with the same paths
    assert not [c for c in diff(new, _census("3.5.1", False)) if c.kind == "moved"]


def test_home_of_matches_a_re_exported_spelling():
    censuses = {"3.3.1": _census("3.3.1", True), "3.4.0": _census("3.4.0", False)}
    home = homes.home_of(censuses, "triton.compiler.CompiledKernel.launch_enter_hook")
    assert home is not None and home.name == "launch_enter_hook"
    assert homes.home_text(censuses, home) == (
        "triton.compiler.compiler.CompiledKernel.launch_enter_hook on 3.3.1; "
        "triton.knobs.runtime.launch_enter_hook on 3.4.0"
    )
    assert homes.home_of(censuses, "triton.compiler.CompiledKernel.run") is None


def test_a_malformed_homes_file_names_the_row(tmp_path):
    bad = tmp_path / "h.toml"
    bad.write_text('[[home]]\nname = "x"\nwhat = "y"\nat = ["CompiledKernel.hook"]\n')
    with pytest.raises(Exception, match=r"home\[0\]\.at"):
        load_homes.__wrapped__(bad)


# -- on the committed censuses ----------------------------------------------------------------
@pytest.fixture(scope="module")
def recorded() -> tuple[list[Run], dict]:
    runs = read_runs(RAW)
    return runs, censuses_from_runs(runs)


def test_every_listed_path_exists_on_some_recorded_release(recorded):
    _, censuses = recorded
    for home in load_homes():
        per = homes.where(censuses, home)
        for path in home.at:
            assert any(path in paths for paths in per.values()), f"{home.name}: {path}"


def test_driver_active_is_the_drivers_own_not_a_missing_module_name(recorded):
    _, censuses = recorded
    for census in censuses.values():
        assert census.status("triton.runtime.driver.active.get_current_device") == "present"
        assert census.status("triton.runtime.driver.active.no_such_method") == "absent"


def test_tri022_names_the_new_path_and_breaks_only_where_the_old_one_is_gone(recorded):
    def found(release: str) -> dict[int, tuple[str, str]]:
        report = scan_for(recorded, [FIXTURE], release)
        return {f.line: (f.effect, f.detail) for f in report.findings if f.rule.id == "TRI022"}

    old, new = found("3.3.1"), found("3.4.0")
    assert old[9][0] == "does-not-affect" and new[9][0] == "breaks"
    assert old[13][0] == "breaks" and new[13][0] == "does-not-affect"
    assert "triton.knobs.runtime.launch_enter_hook on 3.4.0" in new[9][1]
    assert new[25][0] == "breaks" and "triton.knobs.runtime.launch_exit_hook" in new[25][1]
    # driver.active exists on every release: neither this rule nor the census reports it
    report = scan_for(recorded, [FIXTURE], "3.4.0")
    assert not [f for f in report.findings if f.line == 21], [f.text() for f in report.findings]
