"""The fingerprint's layout group (matrix/probes/fp/fp_layout.py): block-pointer and
tensor-descriptor rules asked of the interpreter and of a cuda:90 compile. The disagreements are
read from rows recorded on real releases (tests/fixtures/fp_layout/: Triton 3.4.0 and 3.9.0,
interpreter with numpy 2.4.6 and aot, 2026-12-02, by ``layout_rows`` on this battery); the case
parsing, the rule's expected block and the crash handling run here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from matrix.analyze.fingerprint import disagreements
from matrix.probes.fp import battery as bt
from matrix.probes.fp import fp_layout as L
from matrix.probes.support.base import Context
from matrix.results import Result

FIXTURES = Path(__file__).parent / "fixtures" / "fp_layout"


def recorded(release: str) -> list[Result]:
    rows = []
    for backend, target in (("interpret", None), ("aot", "cuda:90")):
        data = json.loads((FIXTURES / f"{release}-{backend}.json").read_text())
        rows.append(Result("fp.layout", backend, target, "observed", data=data))
    return rows


def parted(release: str) -> dict[str, dict[str, str]]:
    return {case: cols for _, case, cols in disagreements(recorded(release))}


def test_every_battery_case_parses_and_the_recordings_cover_them() -> None:
    cases = L.parse_cases(bt.load().raw["layout"]["case"])
    names = {c.name for c in cases}
    for release in ("3.4.0", "3.9.0"):
        for row in recorded(release):
            assert set(row.data["cells"]) == names, (release, row.backend)


def test_recorded_3_4_0_interpreter_checks_strides_in_elements() -> None:
    """3.4.0's interpreter asserts ``stride % 16 == 0`` on the stride in elements: an fp32
    row stride of 8 (32 bytes) is refused, which the compile (and 3.9.0's interpreter) accept."""
    cols = parted("3.4.0")
    assert cols["descriptor.ragged"] == {"interpret": "rejected", "aot:cuda:90": "accepted"}
    assert cols["descriptor.inner_block_16B_fp16"]["interpret"] == "rejected"
    interp = recorded("3.4.0")[0].data
    assert (
        interp["details"]["descriptor.ragged"] == "AssertionError: stride must be 16-byte aligned"
    )
    assert "descriptor.ragged" not in parted("3.9.0")


def test_recorded_3_9_0_runtime_values_only_the_interpreter_checks() -> None:
    cols = parted("3.9.0")
    for case in ("descriptor.base_misaligned", "descriptor.offset_not_16B",
                 "descriptor.stride_runtime_not_16B"):  # fmt: skip
        assert cols[case] == {"interpret": "rejected", "aot:cuda:90": "accepted"}, case
    # A constexpr stride is checked by both, with the same frontend message.
    assert "descriptor.stride_constexpr_not_16B" not in cols
    # The last stride 1 as an unspecialized runtime i32: the compile's frontend compares a
    # tensor outside a kernel and fails; the interpreter accepts.
    aot = recorded("3.9.0")[1].data
    assert aot["cells"]["descriptor.strides_runtime_unspecialized"] == "rejected"
    assert "Did you forget to add @triton.jit" in aot["details"][
        "descriptor.strides_runtime_unspecialized"]  # fmt: skip
    # 3.9.0 removed block pointers on both sides alike: no disagreement, every case rejected.
    assert not [c for c in cols if c.startswith("block_ptr.")]


def test_the_expected_block_pads_only_where_the_rule_says() -> None:
    import torch

    src = torch.arange(1, 145, dtype=torch.float32).reshape(12, 12)
    zero = L.LayoutCase("z", "block_ptr", shape=(12, 12), boundary=(0, 1), padding="zero")
    values, judged = L.expected(zero, src)
    assert judged.all() and values[11, 11] == 144 and values[12, 0] == 0 and values[0, 12] == 0
    # Rows checked, columns not: out-of-range columns are undefined, not judged.
    rows = L.LayoutCase("r", "block_ptr", shape=(12, 12), boundary=(0,), padding="zero")
    _, judged = L.expected(rows, src)
    assert judged[:, :12].all() and not judged[:, 12:].any()
    # No padding option: nothing out of bounds is defined.
    plain = L.LayoutCase("p", "block_ptr", shape=(12, 12), boundary=(0, 1))
    _, judged = L.expected(plain, src)
    assert int(judged.sum()) == 144
    # A descriptor always pads: with zeros, or NaN when asked.
    nan = L.LayoutCase("n", "descriptor", shape=(12, 12), padding="nan", offsets=(8, 8),
                       block=(8, 8))  # fmt: skip
    values, judged = L.expected(nan, src)
    assert judged.all() and values[0, 0] == src[8, 8] and values[7, 7].isnan()


def test_a_malformed_case_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="blok"):
        L.parse_cases([{"name": "x", "kind": "descriptor", "blok": [16, 16]}])
    with pytest.raises(ValueError, match="strides"):
        L.parse_cases([{"name": "x", "kind": "descriptor", "strides": "sideways"}])
    with pytest.raises(ValueError, match="repeat"):
        L.parse_cases([{"name": "x", "kind": "block_ptr"}, {"name": "x", "kind": "block_ptr"}])


def test_a_case_that_kills_its_child_costs_only_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    real = L.run_case

    def dies_on_the_second(ctx: Context, case: L.LayoutCase):
        if case.name == "b":
            os._exit(9)
        return ("accepted", "", None) if case.name != "c" else real(ctx, case)

    monkeypatch.setattr(L, "run_case", dies_on_the_second)
    cases = [L.LayoutCase(n, "descriptor") for n in ("a", "b", "c")]
    results = L.run_batch(Context("interpret", None), cases)
    assert results["a"] == ("accepted", "", None)
    assert results["b"][0] == "crashed" and "exit code 9" in results["b"][1]
    assert results["c"][0] in ("accepted", "absent"), results["c"]  # run by the installed release


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter cells")
def test_the_installed_release_gives_its_recorded_interpreter_cells() -> None:
    """The live interpreter on three cases, against the recording of the same release."""
    import triton

    fixture = FIXTURES / f"{triton.__version__}-interpret.json"
    if not fixture.exists():
        pytest.skip(f"no recording of Triton {triton.__version__}'s interpreter")
    want = json.loads(fixture.read_text())
    names = ["descriptor.ok", "descriptor.base_misaligned", "descriptor.inner_block_8B"]
    entries = [e for e in bt.load().raw["layout"]["case"] if e["name"] in names]
    (row,) = L.layout_rows(Context("interpret", None), entries)
    assert row.data["cells"] == {n: want["cells"][n] for n in names}, row.data.get("details")
    assert row.data.get("details", {}) == {
        n: want["details"][n] for n in names if n in want.get("details", {})
    }
