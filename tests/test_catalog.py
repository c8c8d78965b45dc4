"""The probe registry file: read in order, checked key by key, errors that name file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.catalog import DEFAULT_AOT_TARGETS, PROBES, PROBES_BY_NAME, load_catalog
from matrix.core import DataFileError

GOOD_ROW = """
[[probe]]
name = "p"
summary = "a probe"
statuses = ["yes", "no"]
backends = ["interpret"]
good = ["yes"]
"""


def _load(tmp_path: Path, text: str):
    path = tmp_path / "probes.toml"
    path.write_text(text, encoding="utf-8")
    return load_catalog(path)


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


def test_a_minimal_row_gets_every_default(tmp_path: Path) -> None:
    (spec,) = _load(tmp_path, GOOD_ROW)
    assert (spec.name, spec.statuses, spec.backends, spec.good) == (
        "p", ("yes", "no"), ("interpret",), ("yes",)
    )  # fmt: skip
    assert (spec.breaking, spec.wrong, spec.changed, spec.env) == ((), (), (), ())
    assert spec.behavioural is True and spec.isolated is False
    assert spec.aot_targets == DEFAULT_AOT_TARGETS
    assert spec.meaning("yes") == "good" and spec.meaning("no") == "neutral"


S = 'statuses = ["yes", "no"]\n'  # the good row's statuses, then the change under test
BAD_ROWS = {
    "unknown key": (S + 'colour = "red"', "probe[0] (p)", "only the keys"),
    "meaning outside statuses": (S + 'wrong = ["maybe"]', "probe[0] (p).wrong", "distinct names"),
    "two meanings": (S + 'breaking = ["yes"]', "probe[0] (p)", "at most one of"),
    "status twice": ('statuses = ["yes", "yes"]', "probe[0] (p).statuses", "distinct"),
    "no status": ("statuses = []", "probe[0] (p).statuses", "at least one name"),
    "flag not bool": (S + 'isolated = "yes"', "probe[0] (p).isolated", "true or false"),
    "env not strings": (S + "env = {A = 1}", "probe[0] (p).env", "a table of strings"),
    "unknown target": (S + 'aot_targets = ["cuda:70"]', "probe[0] (p).aot_targets", "cuda:80"),
    "cache not bool": (S + 'compile_cache = "yes"', "probe[0] (p).compile_cache", "true or"),
    # A cached compile would answer what the variable changes (3.0-3.2's cache key lacks it).
    "cache with env": (
        S + 'compile_cache = true\nenv = {TRITON_F32_DEFAULT = "ieee"}',
        "probe[0] (p).compile_cache",
        "false for a probe with env",
    ),
}


@pytest.mark.parametrize(("change", "key", "expected"), BAD_ROWS.values(), ids=BAD_ROWS)
def test_a_bad_row_names_the_file_the_key_and_what_was_expected(
    tmp_path: Path, change: str, key: str, expected: str
) -> None:
    with pytest.raises(DataFileError) as e:
        _load(tmp_path, GOOD_ROW.replace('statuses = ["yes", "no"]', change))
    assert e.value.key == key and str(tmp_path / "probes.toml") in str(e.value)
    assert expected in e.value.expected


def test_a_bad_backend_a_repeated_name_and_no_rows_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"probe\[0\] \(p\)\.backends: .*'gpu'"):
        _load(tmp_path, GOOD_ROW.replace('["interpret"]', '["cpu"]'))
    with pytest.raises(DataFileError, match=r"probe\[1\]\.name: expected a name no other"):
        _load(tmp_path, GOOD_ROW + GOOD_ROW)
    with pytest.raises(DataFileError, match="one or more"):
        _load(tmp_path, "# nothing\n")
    with pytest.raises(DataFileError, match=r"probe\[0\] \(\?\)\.name: expected a non-empty"):
        _load(tmp_path, GOOD_ROW.replace('name = "p"', ""))
