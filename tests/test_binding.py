"""kernels.binding without a GPU: which launch layer a compiled kernel allows, that the bound
launcher passes every argument in order with only the varying slots replaced, and that
splitk_matmul's cached path still computes (fresh data) and still refuses bad options."""

import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import compat  # noqa: E402
import kernels  # noqa: E402
from kernels import binding, splitk  # noqa: E402
from kernels.numerics import random_operands, reference, rel_err, tolerance  # noqa: E402


class FakeCompiled:
    """What kernel[grid](...) returns on a release with the launcher layer."""

    def __init__(self, names):
        self.src = types.SimpleNamespace(signature={n: "i32" for n in names})
        self.function, self.packed_metadata = "fn", "meta"
        self.calls = []

    def run(self, *args):
        self.calls.append(args)

    def launch_metadata(self, grid, stream, *args):
        return ("meta-for", grid, stream)


class FakeKernel:
    arg_names = ("x_ptr", "n", "BLOCK")

    def __init__(self):
        self.compiled = FakeCompiled(self.arg_names)
        self.jit_calls = []

    def __getitem__(self, grid):
        def launch(**kwargs):
            self.jit_calls.append((grid, dict(kwargs)))
            return self.compiled

        return launch


def test_first_call_goes_through_jit_then_the_launcher(monkeypatch):
    hooks = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    monkeypatch.setattr(binding, "_knob_hooks", lambda: hooks)
    k = FakeKernel()
    bound = binding.BoundKernel(k, (7,), {"x_ptr": None, "n": 5, "BLOCK": 16},
                                {"num_warps": 4}, ("x_ptr",))  # fmt: skip
    bound(99, "t0")
    assert k.jit_calls == [((7, 1, 1), {"x_ptr": "t0", "n": 5, "BLOCK": 16, "num_warps": 4})]
    assert bound.layer == "launcher"
    bound(99, "t1")
    bound.rebind(n=6)
    bound(98, "t2")
    assert k.compiled.calls == [
        (7, 1, 1, 99, "fn", "meta", None, None, None, "t1", 5, 16),
        (7, 1, 1, 98, "fn", "meta", None, None, None, "t2", 6, 16),
    ]
    hooks.launch_enter_hook = "enter"
    bound(97, "t3")
    assert k.compiled.calls[-1][6] == ("meta-for", (7, 1, 1), 97)
    assert len(k.jit_calls) == 1


def test_other_releases_stay_on_the_jit_layer(monkeypatch):
    names = FakeKernel.arg_names
    monkeypatch.setattr(binding, "_knob_hooks", lambda: types.SimpleNamespace(
        launch_enter_hook=None, launch_exit_hook=None))  # fmt: skip
    assert binding.launcher_layer(FakeCompiled(names), names) == "launcher"
    assert binding.launcher_layer(None, names) == "jit"  # the interpreter returns nothing
    fewer = FakeCompiled(names[:2])  # a launcher that takes no constexprs
    assert binding.launcher_layer(fewer, names) == "jit"
    monkeypatch.setattr(binding, "_knob_hooks", lambda: None)
    assert binding.launcher_layer(FakeCompiled(names), names) == "jit"


def test_unbound_arguments_are_refused():
    with pytest.raises(ValueError, match=r"\['BLOCK'\]"):
        binding.BoundKernel(FakeKernel(), (1,), {"x_ptr": None, "n": 1}, {}, ("x_ptr",))


@pytest.mark.interpreter
def test_cached_call_computes_on_fresh_data_and_checks_still_run():
    if not compat.FEATURES.interpreter:
        pytest.skip("needs TRITON_INTERPRET=1")
    splitk.clear_plan_cache()
    for seed in (1, 2):
        a, b = random_operands(20, 24, 96, torch.float32, seed=seed)
        c = kernels.splitk_matmul(a, b, 2)
        assert rel_err(c, reference(a, b)) <= tolerance(a, b, torch.float32)
    assert len(splitk._CALLS) == 1
    with pytest.raises(TypeError, match="split_k"):
        kernels.splitk_matmul(a, b, 2.0)  # equal to 2 and hashed alike: must not hit the cache
    with pytest.raises(TypeError, match="deterministic"):
        kernels.splitk_matmul(a, b, 2, deterministic=0)
