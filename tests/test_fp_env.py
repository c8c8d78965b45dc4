"""The fingerprint's env_values group (matrix/probes/fp/fp_env.py): which spellings of a
boolean environment variable turn it on. The source readers run on lines recorded from real
releases (3.3.1's backends and runtime, cited per case); the knob and interpreter readers on
the installed release."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from matrix.probes.fp import fp_env

SPELLINGS = ["1", "true", "TRUE", "yes", "on", "0", ""]

# Lines of Triton 3.3.1's source: runtime/jit.py:790, backends/amd/compiler.py:22 and :306
# (the AMD line-info test), backends/nvidia/compiler.py:411 (ptxas's -lineinfo); placed at
# other line numbers here. runtime/lowered.py, TRITON_LEVEL and the private runner are made-up
# shapes the reader must also handle (a lowered membership test, a non-comparison, a private file).
RECORDED = {
    "runtime/jit.py": "import os\n\n\ndef interpret():\n"
    '    return os.getenv("TRITON_INTERPRET", "0") == "1"\n',
    "backends/amd/compiler.py": "import os\n"
    'LINE = os.environ.get("TRITON_DISABLE_LINE_INFO", "0") == "0"\n'
    'PINGPONG = os.getenv("TRITON_HIP_USE_BLOCK_PINGPONG", default) == "1"\n',
    "backends/nvidia/compiler.py": "import os\n"
    'LINE = os.environ.get("TRITON_DISABLE_LINE_INFO", "0") == "1"\n'
    # A read that is no comparison: not classified, never guessed.
    'LEVEL = int(os.environ.get("TRITON_LEVEL", "3"))\n',
    "runtime/lowered.py": "import os\n"
    'ON = os.environ.get("TRITON_X", "0").lower() in ("1", "true", "on")\n',
    "_private/runner.py": 'import os\nX = os.getenv("TRITON_PRIVATE", "0") == "1"\n',
}


@pytest.fixture()
def source_root(tmp_path: Path) -> Path:
    for rel, text in RECORDED.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def cells_of(data: dict, var: str) -> dict[str, str]:
    prefix = var + "="
    return {k[len(prefix) :]: v for k, v in data["cells"].items() if k.startswith(prefix)}


def test_source_comparisons_are_evaluated(source_root: Path) -> None:
    readers = fp_env.source_readers(source_root)
    assert sorted(readers) == [
        "TRITON_DISABLE_LINE_INFO", "TRITON_HIP_USE_BLOCK_PINGPONG", "TRITON_INTERPRET",
        "TRITON_X",
    ]  # fmt: skip
    data = fp_env.classify(readers, SPELLINGS)
    assert cells_of(data, "TRITON_INTERPRET") == {
        "(unset)": "off", "1": "on", "true": "off", "TRUE": "off", "yes": "off", "on": "off",
        "0": "off", "(empty)": "off",
    }  # fmt: skip
    assert cells_of(data, "TRITON_X") == {
        "(unset)": "off", "1": "on", "true": "on", "TRUE": "on", "yes": "off", "on": "on",
        "0": "off", "(empty)": "off",
    }  # fmt: skip
    # Two readers that disagree: the AMD backend's "== '0'" takes any other value as on.
    line = cells_of(data, "TRITON_DISABLE_LINE_INFO")
    assert line["1"] == "on" and line["0"] == "off" and line["true"] == "mixed"
    reason = data["reasons"][data["details"]["TRITON_DISABLE_LINE_INFO=true"]]
    assert "on by backends/amd/compiler.py:2 " in reason
    assert "off by backends/nvidia/compiler.py:2 " in reason
    # A default that is a variable: the unset state is unknown, with why.
    pingpong = cells_of(data, "TRITON_HIP_USE_BLOCK_PINGPONG")
    assert pingpong["(unset)"] == "unknown" and pingpong["1"] == "on"
    assert (
        "not a constant"
        in data["reasons"][data["details"]["TRITON_HIP_USE_BLOCK_PINGPONG=(unset)"]]
    )


def test_evaluation_runs_nothing_but_the_comparison(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        'import os\nX = os.getenv("TRITON_Y", "0") == compute()\n'
        'Z = os.getenv("TRITON_Z", "0").startswith(prefix())\n',
        encoding="utf-8",
    )
    assert fp_env.source_readers(tmp_path) == {}


def test_installed_release_knobs_and_interpreter_agree() -> None:
    before = os.environ.get("TRITON_INTERPRET")
    (row,) = fp_env.env_value_rows(SPELLINGS)
    assert os.environ.get("TRITON_INTERPRET") == before  # restored
    assert row.name == "fp.env_values" and row.status == "observed"
    interpret = cells_of(row.data, "TRITON_INTERPRET")
    assert interpret["1"] == "on" and interpret["0"] == "off"
    assert "mixed" not in interpret.values()  # observed and parsed say the same
    reason = row.data["reasons"][row.data["details"]["TRITON_INTERPRET=1"]]
    assert reason.startswith("on by observed: type(triton.jit(f)) is InterpretedFunction")


def test_asked_variables_get_a_cell_on_every_release(source_root: Path) -> None:
    """A variable of another release's list: `unread` where this release's package names it in
    no file, `skipped` (not an observation) where it is read in a shape the part does not
    evaluate (TRITON_LEVEL above), nothing added for one that is classified."""
    (source_root / "libtriton.so").write_bytes(b"\x7fELF\x00MLIR_ENABLE_DUMP\x00")
    asked = ["TRITON_INTERPRET", "TRITON_LEVEL", "MLIR_ENABLE_DUMP", "TRITON_NEW_IN_3_9"]
    classified = set(fp_env.source_readers(source_root))
    extra = fp_env.asked_rows(asked, classified, SPELLINGS, source_root)
    statuses = {key.split("=")[0]: v for key, v in extra["cells"].items()}
    assert statuses == {
        "TRITON_LEVEL": fp_env.UNCLASSIFIED,
        "MLIR_ENABLE_DUMP": fp_env.UNCLASSIFIED,
        "TRITON_NEW_IN_3_9": fp_env.UNREAD,
    }
    assert len(extra["cells"]) == 3 * (len(SPELLINGS) + 1)
    assert "libtriton.so" in extra["texts"]["MLIR_ENABLE_DUMP=1"]
    assert "no file" in extra["texts"]["TRITON_NEW_IN_3_9=(unset)"]


def test_one_pass_search_finds_what_a_find_per_name_finds(tmp_path: Path, monkeypatch) -> None:
    """grep -o prints non-overlapping matches: a name inside or behind another name's match is
    still found (by the next pass), and an absent one is not."""
    import mmap

    names = ["ABCDEF_GHIJ", "GHIJ_KLMNOP", "CDEF", "AMDGCN_X", "NOT_THERE_AT_ALL", "TRITON_Y"]
    blob = b"\0" * 1000 + b"ABCDEF_GHIJ_KLMNOP\0" + b"x" * 500 + b"TRITON_Y=1\0AMDGCN_X"
    path = tmp_path / "libfake.so"
    path.write_bytes(blob)
    monkeypatch.setattr(fp_env, "ONE_PASS_BYTES", 0)
    monkeypatch.setattr(fp_env, "ONE_PASS_NAMES", 1)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        one_pass = fp_env._names_in(path, m, names)
        per_name = [n for n in names if m.find(n.encode()) != -1]
    assert sorted(one_pass) == sorted(per_name)
    assert "NOT_THERE_AT_ALL" not in one_pass and {"GHIJ_KLMNOP", "CDEF"} <= set(one_pass)
