"""The probe registry: one folder per probe, read in order, checked key by key, errors that
name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.catalog import DEFAULT_AOT_TARGETS, PROBES, PROBES_BY_NAME, load_catalog
from matrix.core import DataFileError

GOOD_ROW = """
order = 10
summary = "a probe"
statuses = ["yes", "no"]
backends = ["interpret"]
good = ["yes"]

[usage]
names = ["triton.language.dot"]
"""


def _probe(probes: Path, name: str, text: str, module: str = "def observe(ctx): ...\n") -> Path:
    (probes / name).mkdir(parents=True)
    (probes / name / "probe.toml").write_text(text, encoding="utf-8")
    (probes / name / "probe.py").write_text(module, encoding="utf-8")
    return probes / name / "probe.toml"


def _load(tmp_path: Path, text: str):
    _probe(tmp_path, "p", text)
    return load_catalog(tmp_path)


def test_the_committed_registry_is_read_with_its_defaults() -> None:
    assert PROBES[0].name == "splitk" and PROBES_BY_NAME["splitk"].behavioural is False
    assert PROBES_BY_NAME["block_ptr"].aot_targets == DEFAULT_AOT_TARGETS
    assert PROBES_BY_NAME["allow_tf32"].aot_targets == ("cuda:90",)
    # An empty list: runs once per release on aot with no target.
    assert PROBES_BY_NAME["api_surface"].aot_targets == (None,)
    env = PROBES_BY_NAME["dot_f32_default_precision_env_ieee"].env
    assert env == (("TRITON_F32_DEFAULT", "ieee"),)
    assert PROBES_BY_NAME["descriptor_misaligned"].isolated is True
    assert PROBES_BY_NAME["loader"].isolated is False
    assert PROBES_BY_NAME["loader"].usage == {"project": True}
    assert "never" in PROBES_BY_NAME["api_surface"].usage


def test_the_order_is_the_committed_order_of_the_rows() -> None:
    """The order of the results, the pages and the tables: what probes.toml had, row by row,
    before the probes moved into folders (each probe.toml's ``order``); a probe added since
    goes where its order puts it."""
    moved = [
        "splitk", "tiled", "aot_target", "loader", "block_ptr", "tensor_descriptor",
        "descriptor_misaligned", "descriptor_misaligned_stride", "dot_f32_default_precision",
        "dot_f32_default_precision_env_ieee", "dot_acc_out_dtype", "allow_tf32",
        "boundary_check", "atomic_add_fp16", "atomic_add_bf16", "python_min_runtime",
        "true_div_program_id", "python_in_kernel", "autotune_validation", "aot_launcher_abi",
        "interpreter_bf16_dot", "splitk_nondeterminism", "dot_f32_precision_error",
        "allocator_required", "api_surface", "fp",
    ]  # fmt: skip
    assert [p.name for p in PROBES if p.name in moved] == moved


def test_probes_are_read_by_their_order_not_their_folder_name(tmp_path: Path) -> None:
    _probe(tmp_path, "a_last", GOOD_ROW.replace("order = 10", "order = 30"))
    _probe(tmp_path, "b_first", GOOD_ROW.replace("order = 10", "order = 5"))
    (tmp_path / "support").mkdir()  # shared code, not a probe
    (tmp_path / "support" / "x.py").write_text("")
    assert [p.name for p in load_catalog(tmp_path)] == ["b_first", "a_last"]


def test_a_minimal_row_gets_every_default(tmp_path: Path) -> None:
    (spec,) = _load(tmp_path, GOOD_ROW)
    assert (spec.name, spec.statuses, spec.backends, spec.good) == (
        "p", ("yes", "no"), ("interpret",), ("yes",)
    )  # fmt: skip
    assert (spec.breaking, spec.wrong, spec.changed, spec.env) == ((), (), (), ())
    assert spec.behavioural is True and spec.isolated is False
    assert spec.aot_targets == DEFAULT_AOT_TARGETS
    assert spec.meaning("yes") == "good" and spec.meaning("no") == "neutral"


S = 'statuses = ["yes", "no"]'  # the good row's statuses, then the change under test
U = '[usage]\nnames = ["triton.language.dot"]'  # its usage entry
H = 'code_hash = "0123456789abcdef"'
# (text of GOOD_ROW, what replaces it, the key named, what the error says was expected)
BAD_ROWS = {
    "unknown key": (S, S + '\ncolour = "red"', "", "only the keys"),
    "a name key": (S, S + '\nname = "p"', "", "only the keys"),
    "meaning outside statuses": (S, S + '\nwrong = ["maybe"]', "wrong", "distinct names"),
    "two meanings": (S, S + '\nbreaking = ["yes"]', "statuses", "at most one of"),
    "status twice": (S, 'statuses = ["yes", "yes"]', "statuses", "distinct"),
    "no status": (S, "statuses = []", "statuses", "at least one name"),
    "flag not bool": (S, S + '\nisolated = "yes"', "isolated", "true or false"),
    "env not strings": (S, S + "\nenv = {A = 1}", "env", "a table of strings"),
    "unknown target": (S, S + '\naot_targets = ["cuda:70"]', "aot_targets", "cuda:80"),
    "cache not bool": (S, S + '\ncompile_cache = "yes"', "compile_cache", "true or"),
    # A cached compile would answer what the variable changes (3.0-3.2's cache key lacks it).
    "cache with env": (
        S,
        S + '\ncompile_cache = true\nenv = {TRITON_F32_DEFAULT = "ieee"}',
        "compile_cache",
        "false for a probe with env",
    ),
    "order not an integer": ("order = 10", 'order = "10"', "order", "an integer"),
    "no order": ("order = 10", "", "order", "an integer"),
    "version without its code hash": (S, S + '\nversion = "1"', "code_hash", "16 hex digits"),
    "code hash without a version": (S, S + "\n" + H, "version", "a non-empty string"),
    "code hash not a hash": (S, S + '\nversion = "1"\ncode_hash = "x"', "code_hash", "16 hex"),
    # A probe nobody mapped would block every team's verdict on any change of its row.
    "no usage": (U, "", "usage", 'never = "why"'),
    "never beside names": (U, U + '\nnever = "why"', "usage", "alone"),
    "empty never": (U, '[usage]\nnever = " "', "usage.never", "why it never concerns"),
    "usage names not strings": (U, "[usage]\nnames = [1]", "usage.names", "non-empty strings"),
    "usage unknown key": (U, "[usage]\nnamse = []", "usage", "only the keys"),
    "project not true": (U, "[usage]\nproject = false", "usage.project", "true"),
}


@pytest.mark.parametrize(("old", "new", "key", "expected"), BAD_ROWS.values(), ids=BAD_ROWS)
def test_a_bad_row_names_the_file_the_key_and_what_was_expected(
    tmp_path: Path, old: str, new: str, key: str, expected: str
) -> None:
    assert old in GOOD_ROW
    with pytest.raises(DataFileError) as e:
        _load(tmp_path, GOOD_ROW.replace(old, new))
    assert e.value.key == key and str(tmp_path / "p" / "probe.toml") in str(e.value)
    assert expected in e.value.expected


def test_a_bad_backend_a_shared_order_half_a_probe_and_no_probe_are_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(DataFileError, match=r"p/probe\.toml: backends: .*'gpu'"):
        _load(tmp_path / "a", GOOD_ROW.replace('["interpret"]', '["cpu"]'))
    _probe(tmp_path / "b", "p", GOOD_ROW)
    _probe(tmp_path / "b", "q", GOOD_ROW)
    with pytest.raises(DataFileError, match=r"q/probe\.toml: order: expected an order no other "
                       r"probe has \(.*p/probe\.toml has it\)"):  # fmt: skip
        load_catalog(tmp_path / "b")
    (tmp_path / "c" / "half").mkdir(parents=True)
    (tmp_path / "c" / "half" / "probe.py").write_text("def observe(ctx): ...\n")
    with pytest.raises(DataFileError, match=r"half/probe\.toml: expected a file beside probe\.py"):
        load_catalog(tmp_path / "c")
    (tmp_path / "d").mkdir()
    with pytest.raises(DataFileError, match="one or more probe folders"):
        load_catalog(tmp_path / "d")
    _probe(tmp_path / "e", "not-a-module", GOOD_ROW)
    with pytest.raises(DataFileError, match="a folder named like a Python module"):
        load_catalog(tmp_path / "e")
