"""compat's detection against stand-in modules that lack, or raise on, each feature; the loader
choice and its override; ``python -m compat --json``."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("triton")

import compat
from compat import features
from compat.loader import LoaderError, choose_loader


def _features(**overrides):
    base = dict(
        tensor_descriptor="supported",
        descriptor_constructor="tl.make_tensor_descriptor",
        descriptor_trial="ok",
        dot_input_precision=True,
        dot_out_dtype=True,
        block_ptr_present=True,
        block_ptr_trial="ok",
        set_allocator=True,
        interpreter=True,
        bf16_dot_trial="ok",
    )
    base.update(overrides)
    return features.Features(**base)


def _builtin(*names):
    """A function whose signature has the given parameter names."""
    ns = {}
    exec(f"def fn({', '.join(names)}): pass", ns)
    return ns["fn"]


class TestDescriptorConstructor:
    def test_public_name_wins(self):
        lang = SimpleNamespace(
            make_tensor_descriptor=_builtin("base"),
            _experimental_make_tensor_descriptor=_builtin("base"),
        )
        assert features.find_descriptor_constructor(lang)[0] == "supported"

    def test_experimental_only(self):
        lang = SimpleNamespace(_experimental_make_tensor_descriptor=_builtin("base"))
        assert features.find_descriptor_constructor(lang)[0] == "experimental"

    def test_absent(self):
        assert features.find_descriptor_constructor(SimpleNamespace()) is None

    def test_non_callable_attribute_is_not_a_constructor(self):
        assert (
            features.find_descriptor_constructor(SimpleNamespace(make_tensor_descriptor=None))
            is None
        )


class TestKeywords:
    def test_signature_with_and_without(self):
        assert features.accepts_keyword(_builtin("a", "b", "input_precision"), "input_precision")
        assert not features.accepts_keyword(_builtin("a", "b", "allow_tf32"), "input_precision")

    def test_no_signature_is_false(self):
        assert not features.accepts_keyword(object(), "out_dtype")


class TestTrials:
    def test_raising_trial_is_recorded_not_raised(self):
        def boom(device):
            raise NotImplementedError("descriptors are not supported\nsecond line")

        verdict = features.run_trial(boom, device="cpu")
        assert verdict == "failed: NotImplementedError: descriptors are not supported"

    def test_wrong_trial_is_kept(self):
        assert features.run_trial(lambda d: "wrong: element [0, 0]", device="cpu").startswith(
            "wrong"
        )

    def test_no_device_is_not_tried(self, monkeypatch):
        monkeypatch.setattr(features, "trial_device", lambda: None)
        assert features.run_trial(lambda d: "ok").startswith("not tried")

    def test_real_bf16_trial_has_a_verdict(self):
        verdict = features.bf16_dot_trial()
        assert verdict == "ok" or verdict.split(":")[0] in ("wrong", "failed"), verdict


class TestBlockPtr:
    def test_the_trial_runs_and_its_verdict_names_what_happened(self):
        """3.9.0 (this environment) keeps tl.make_block_ptr but raises when it is used."""
        verdict = features.block_ptr_trial()
        assert features.detect().block_ptr_present  # the name is there...
        assert verdict == "ok" or verdict.split(":")[0] in ("ok, warns", "failed"), verdict
        import triton

        if triton.__version__.startswith("3.9."):  # ...and on 3.9.0 it does not work
            assert verdict.startswith("failed: "), verdict

    def test_cli_text_says_presence_and_what_was_tried(self):
        out = _python_m_compat()
        assert out.returncode == 0, out.stderr
        (line,) = [ln for ln in out.stdout.splitlines() if "block_ptr" in ln]
        assert "was tried: " + compat.FEATURES.block_ptr_trial in line
        assert "block_ptr_present: True" not in out.stdout


class TestLoaderChoice:
    def test_descriptor_when_trial_passes(self):
        assert choose_loader(_features()).name == "descriptor"

    def test_pointer_without_constructor(self):
        f = _features(tensor_descriptor="absent", descriptor_constructor=None,
                      descriptor_trial="not tried: no in-kernel constructor")  # fmt: skip
        choice = choose_loader(f)
        assert choice.name == "pointer" and "no in-kernel" in choice.reason

    def test_pointer_when_trial_fails(self):
        choice = choose_loader(_features(descriptor_trial="failed: NotImplementedError: x"))
        assert choice.name == "pointer" and "NotImplementedError" in choice.reason

    def test_override(self):
        assert choose_loader(_features(), "pointer").name == "pointer"
        assert "COMPAT_LOADER" in choose_loader(_features(), "pointer").reason

    def test_override_unknown(self):
        with pytest.raises(LoaderError, match="COMPAT_LOADER='tma'"):
            choose_loader(_features(), "tma")

    def test_override_descriptor_without_constructor(self):
        with pytest.raises(LoaderError, match="no in-kernel tensor-descriptor constructor"):
            choose_loader(_features(descriptor_constructor=None), "descriptor")


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python_m_compat(*args, **env):
    full_env = {**os.environ, "TRITON_INTERPRET": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "compat", *args],
        capture_output=True, text=True, env=full_env, timeout=300,
        cwd=ROOT,
    )  # fmt: skip


def test_cli_json_names_loader_and_reason():
    out = _python_m_compat("--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["loader"] in ("pointer", "descriptor") and info["reason"]
    assert info["triton"] == str(compat.TRITON_VERSION)
    assert set(info["features"]) == set(compat.FEATURES.to_dict())


def test_env_override_pointer():
    out = _python_m_compat("--json", COMPAT_LOADER="pointer")
    assert json.loads(out.stdout)["loader"] == "pointer"


def test_env_override_bad_value_fails_loudly():
    out = _python_m_compat(COMPAT_LOADER="fastest")
    assert out.returncode != 0 and "COMPAT_LOADER='fastest'" in out.stderr


def test_import_stays_light():
    """Importing compat and kernels must not pull in the report, the gate, Jinja2 or nox."""
    code = (
        "import sys, kernels, compat; "
        "bad = [m for m in ('jinja2', 'nox', 'matrix') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, env={**os.environ, "TRITON_INTERPRET": "1"},
        timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


BLOCK_PACKAGING = """
import sys

# Triton is imported first, with packaging: some releases need it themselves (3.2.0's AMD
# driver imports setuptools, which imports packaging). What is asked is whether *our* code
# needs it, so it is then dropped from sys.modules and refused.
import triton
for name in [m for m in sys.modules if m == "packaging" or m.startswith("packaging.")]:
    del sys.modules[name]

class Blocker:  # as if packaging were not installed
    def find_spec(self, name, path=None, target=None):
        if name == "packaging" or name.startswith("packaging."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Blocker())
import kernels, compat
assert "packaging" not in sys.modules, "imported packaging"
print(compat.LOADER, compat.report()["triton"])
try:
    compat.TRITON_VERSION
except ModuleNotFoundError as e:
    print("asked for the Version:", e.name)
"""


def test_importing_kernels_needs_no_packaging():
    """Issue 11: ``import kernels`` needed ``packaging`` through compat, which nothing declares
    for a user who only wants the kernels; only ``compat.TRITON_VERSION`` (a Version) needs it."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", BLOCK_PACKAGING], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    chosen, asked = proc.stdout.splitlines()
    loader, version = chosen.split()
    import triton

    assert loader in ("pointer", "descriptor") and version == triton.__version__
    assert asked == "asked for the Version: packaging"
