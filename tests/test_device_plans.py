"""Which tuned plans a GPU gets, checked on the CPU with fake devices: the same hardware, another
card of a measured architecture, an architecture never measured (issue 45)."""

from __future__ import annotations

import json

import pytest

from kernels import gpu_plan, plan_search
from kernels.config import TileConfig
from kernels.devices import DeviceTraits, nearest_measured

H200 = DeviceTraits("NVIDIA H200", "9.0", 132, 62914560, 232448)
H100 = DeviceTraits("NVIDIA H100 80GB HBM3", "9.0", 132, 52428800, 232448)
H100_PCIE = DeviceTraits("NVIDIA H100 PCIe", "9.0", 114, 52428800, 232448)
A100 = DeviceTraits("NVIDIA A100-SXM4-80GB", "8.0", 108, 41943040, 166912)
B200 = DeviceTraits("NVIDIA B200", "10.0", 148, 132120576, 232448)

ENTRY = {
    "device": "NVIDIA H200", "dtype": "fp16", "layout": "kn", "mode": "atomic", "m": 64,
    "n": 64, "k": 8192, "block_m": 32, "block_n": 32, "block_k": 128, "num_warps": 4,
    "num_stages": 4, "split_k": 33, "loader": "pointer",
}  # fmt: skip
A100_ENTRY = {**ENTRY, "device": A100.name, "block_m": 64, "split_k": 8}
TABLE = (ENTRY, A100_ENTRY)
DEVICES = {H200.name: H200, A100.name: A100}


def choose(device: DeviceTraits | str, m: int = 64, k: int = 8192, mode: str = "atomic"):
    return gpu_plan.choose(device, "fp16", "kn", mode, m, 64, k, 264, element_size=2,
                           table=TABLE, devices=DEVICES)  # fmt: skip


def test_the_same_hardware_takes_its_own_entries_whatever_its_name():
    renamed = DeviceTraits("H200 by another name", "9.0", 132, 62914560, 232448)
    for device in (H200, renamed):
        got = choose(device)
        assert got.source == "table" and got.tuned
        assert (got.tile, got.split_k) == (TileConfig(32, 32, 128, 4, 4), 33)


def test_another_card_of_a_measured_architecture_borrows_the_nearest_ones_table():
    got = choose(H100)
    assert got.tuned and (got.tile, got.split_k) == (TileConfig(32, 32, 128, 4, 4), 33)
    assert "NVIDIA H200's, the nearest measured sm90 device" in got.source
    near = choose(H100, k=16384)
    assert not near.tuned and near.source.startswith("nearest tuned 64x64x8192 (NVIDIA H200's")
    # An sm80 card never takes the sm90 table, and the other way round.
    assert choose(A100).split_k == 8 and choose(A100).source == "table"


def test_an_architecture_never_measured_gets_no_borrowed_table():
    got = choose(B200)
    assert not got.tuned and got.source == "default (no measured sm100 device)"
    assert nearest_measured(B200, DEVICES.values()) is None


def test_nearest_measured_prefers_the_same_hardware_then_the_closest_traits():
    h100_row = DeviceTraits("H100 as measured", "9.0", 132, 52428800, 232448)
    measured = [H200, h100_row]
    assert nearest_measured(H100, measured) is h100_row
    assert nearest_measured(H100_PCIE, measured) is h100_row  # same L2: closer than the H200
    assert nearest_measured(H200, measured) is H200
    # Unknown L2/shared memory (0) in a row are not compared.
    assert DeviceTraits("x", "9.0", 132).same_hardware(H100)


def test_a_plain_name_keeps_the_old_exact_lookup():
    assert choose("NVIDIA H200").source == "table"
    assert choose("NVIDIA H100 80GB HBM3").source == "default"


def test_the_committed_table_names_a_device_row_for_every_entry():
    devices = gpu_plan.load_devices()
    assert devices, "kernels/data/splitk_tuned.toml has no [[device]] rows"
    names = {e["device"] for e in gpu_plan.load_table()}
    assert names <= set(devices), f"entries of devices without a row: {names - set(devices)}"
    # An H100 (measured traits of 2026-11-13: 132 SMs, 50 MB L2) has its own row and entries
    # since session 15's H100 tune (notes/gpu-logs/session15); an H100 PCIe (114 SMs) takes
    # the nearest measured sm90 device's.
    assert gpu_plan.table_device(H100, devices) == ("NVIDIA H100 80GB HBM3", "")
    owner, note = gpu_plan.table_device(H100_PCIE, devices)
    assert owner in ("NVIDIA H100 80GB HBM3", "NVIDIA H200") and "sm90" in note


def test_a_device_row_missing_a_field_is_refused(tmp_path):
    bad = tmp_path / "t.toml"
    bad.write_text('[[device]]\nname = "X"\nsms = 10\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"lacks \['capability'\]"):
        gpu_plan.load_devices(bad)


def test_first_use_search_times_the_nearest_configurations_and_caches_them(tmp_path, monkeypatch):
    monkeypatch.setenv(plan_search.CACHE_ENV, str(tmp_path))
    monkeypatch.delenv(plan_search.SEARCH_ENV, raising=False)
    table = [ENTRY, {**ENTRY, "m": 128, "block_m": 64, "split_k": 16},
             {**ENTRY, "m": 4096, "block_m": 128, "split_k": 2}]  # fmt: skip
    options = plan_search.candidates(table, "fp16", "kn", "atomic", 64, 64, 8192)
    assert [c.split_k for c in options] == [33, 16, 2]  # nearest shape first
    timed: list[str] = []

    def time_us(c: plan_search.Candidate) -> float:
        timed.append(str(c))
        if c.split_k == 2:
            raise RuntimeError("out of shared memory")
        return {33: 9.0, 16: 7.5}[c.split_k]

    best, why = plan_search.search(B200, "k1", options, time_us, capturing=False)
    assert best.split_k == 16 and "fastest of 2" in why and len(timed) == 3
    cached = json.loads(plan_search.cache_file(B200).read_text())
    assert cached["k1"]["failed"] and cached["k1"]["us"] == 7.5
    # A second process (the same file) times nothing.
    again = plan_search.search(B200, "k1", options, lambda c: pytest.fail("timed"),
                               capturing=False)  # fmt: skip
    assert again is not None and again[0] == best and "cached" in again[1]


def test_first_use_search_never_runs_while_capturing_or_when_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv(plan_search.CACHE_ENV, str(tmp_path))
    options = plan_search.candidates([ENTRY], "fp16", "kn", "atomic", 64, 64, 8192)

    def never(c: plan_search.Candidate) -> float:
        raise AssertionError("timed")

    assert plan_search.search(B200, "k", options, never, capturing=True) is None
    monkeypatch.setenv(plan_search.SEARCH_ENV, "0")
    assert plan_search.search(B200, "k", options, never, capturing=False) is None
    monkeypatch.setenv(plan_search.SEARCH_ENV, "maybe")
    with pytest.raises(ValueError, match="KERNELS_SPLITK_SEARCH='maybe'"):
        plan_search.search(B200, "k", options, never, capturing=False)
    assert not list(tmp_path.iterdir())  # nothing cached
