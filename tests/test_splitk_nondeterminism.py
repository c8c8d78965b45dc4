"""The splitk_nondeterminism probe measures the release's tl.atomic_add with its own kernel:
the interpreter runs programs one after another (always the same order: deterministic), and an
atomic that adds twice breaks the summation bound (broken), whatever order could explain."""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402

import compat  # noqa: E402
from matrix.probes.splitk_nondeterminism import probe  # noqa: E402
from matrix.probes.support.base import Context  # noqa: E402

pytestmark = pytest.mark.interpreter


@pytest.fixture(autouse=True)
def _few_runs(monkeypatch):
    if not compat.FEATURES.interpreter:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(probe, "RUNS", 2)


@triton.jit
def _adds_twice(partials, out, MN, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = (pid // SPLIT) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(partials + (pid % SPLIT) * MN + offs, mask=offs < MN, other=0.0)
    tl.atomic_add(out + offs, x, mask=offs < MN)
    tl.atomic_add(out + offs, x, mask=offs < MN)


def test_interpreter_atomics_are_deterministic_and_within_bound():
    obs = probe.observe(Context("interpret", None))
    assert obs.status == "deterministic", obs
    assert obs.data["max_ulps"] == 0 and obs.data["error_over_bound"] <= 1.0


def test_an_atomic_that_adds_twice_is_broken(monkeypatch):
    monkeypatch.setattr(probe, "atomic_split_sum", _adds_twice)
    obs = probe.observe(Context("interpret", None))
    assert obs.status == "broken", obs


def test_ulp_distance_counts_across_zero():
    zero, neg_zero = torch.tensor([0.0]), torch.tensor([-0.0])
    assert probe.ulp_distance(zero, neg_zero) == 0
    tiny = torch.nextafter(zero, torch.tensor([1.0]))
    assert probe.ulp_distance(tiny, -tiny) == 2
    one = torch.tensor([1.0])
    assert probe.ulp_distance(one, torch.nextafter(one, torch.tensor([2.0]))) == 1
