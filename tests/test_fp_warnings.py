"""The fingerprint's warnings group (matrix/probes/fp/fp_warnings.py), on warnings and
errors recorded from real compiles (Triton 3.9.0 for cuda:90, 2026-12-01): the compile itself is
replaced, so that these tests take seconds; the forked child, the cell keys, the settings and
the texts are the probe's own."""

from __future__ import annotations

import json
import warnings

import pytest

from matrix.backends import aot
from matrix.probes.fp import fp_warnings as W
from matrix.probes.support.base import Context

# Recorded: every 3.9.0 compile warns this with TRITON_DEFAULT_FP_FUSION unset.
FP_FUSION = (
    "TRITON_DEFAULT_FP_FUSION is unset: defaulting to FP fusion ENABLED for backward "
    "compatibility in Triton 3.9. The default will change to DISABLED in Triton 3.10; set "
    "TRITON_DEFAULT_FP_FUSION=1 to keep the current behavior or =0 to opt in early."
)
# Recorded: 3.9.0 refusing the block_ptr kernel.
BLOCK_PTR = "Block pointers have been removed in favor of the tensor descriptor API"


def recorded_compile(fn, signature, constexprs, target, **kwargs):
    import os

    if os.environ.get("TRITON_DEFAULT_FP_FUSION") is None:
        warnings.warn(FP_FUSION, UserWarning, stacklevel=2)
    if fn is W.block_ptr:
        raise NotImplementedError(BLOCK_PTR)
    return {"target": target, "signature": signature}


@pytest.fixture()
def patched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aot, "compile_for_target", recorded_compile)
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)


def test_cells_per_kernel_and_setting(patched: None) -> None:
    env = [["none", ""], ["TRITON_DEFAULT_FP_FUSION", "1"], ["TRITON_NO_SUCH_VARIABLE", "1"]]
    (row,) = W.warning_rows(Context("aot", "cuda:90"), ["plain_kernel", "block_ptr"], env,
                            ["plain_kernel"], fresh=False)  # fmt: skip
    assert row.name == "fp.warnings"
    assert row.data["cells"] == {
        "plain_kernel|none": "UserWarning",
        "block_ptr|none": "rejected",
        # set in the child only: the warning goes away
        "plain_kernel|TRITON_DEFAULT_FP_FUSION=1": "silent",
        # no file of the release names it: not compiled
        "plain_kernel|TRITON_NO_SUCH_VARIABLE=1": "not-read",
    }
    assert row.data["warnings"]["plain_kernel|none"] == f"UserWarning: {FP_FUSION}"[:300]
    assert row.data["details"]["block_ptr|none"] == f"NotImplementedError: {BLOCK_PTR}"


def test_the_setting_stays_in_the_child(patched: None) -> None:
    import os

    status, texts, _ = W.compile_in_child(Context("aot", "cuda:90"), "plain_kernel",
                                          "TRITON_DEFAULT_FP_FUSION", "0")  # fmt: skip
    assert status == "silent" and texts == []
    assert "TRITON_DEFAULT_FP_FUSION" not in os.environ


def test_unknown_kernel_is_refused() -> None:
    with pytest.raises(ValueError, match="no_such_kernel"):
        W.warning_rows(Context("aot", "cuda:90"), ["no_such_kernel"], [["none", ""]], [], False)


def test_a_once_per_process_warning_this_process_gave_is_still_seen() -> None:
    """A real compile of plain_kernel for cuda:90 on the installed release, in the fresh
    interpreter: what it warns does not depend on what this process warned before."""
    import os
    import subprocess
    import sys

    code = (
        "import json; from matrix.probes.fp import fp_warnings as W\n"
        "from matrix.probes.support.base import Context\n"
        "c = Context('aot', 'cuda:90')\n"
        "first = W.warning_rows(c, ['plain_kernel'], [['none', '']], [], fresh=False)\n"
        "W._compile(c, 'plain_kernel', 'none', '')  # this process warns (once) here\n"
        "fresh = W.warning_rows(c, ['plain_kernel'], [['none', '']], [])\n"
        "print(json.dumps([first[0].data, fresh[0].data]))\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TRITON_INTERPRET", "TRITON_DEFAULT_FP_FUSION")
    }
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, check=True)  # fmt: skip
    first, fresh = json.loads(done.stdout.strip().splitlines()[-1])
    # Whatever the release warns on a first compile, the fresh interpreter sees it again.
    assert fresh == first


def test_a_warm_up_that_warned_is_not_forked_from(patched: None, tmp_path, monkeypatch) -> None:
    """The fresh interpreter warms the compiler before forking the compiles; had the warm-up
    itself warned, the forks could miss a once-per-process warning, so that interpreter answers
    'tainted' and the parent asks a cold one instead."""
    import pickle

    monkeypatch.setattr(W, "warm_compiler", lambda: ["UserWarning: given once"])
    args = (["plain_kernel"], [["none", ""]], [])
    out = tmp_path / "out.pickle"
    W._fresh_main(Context("aot", "cuda:90"), args, str(out), True)
    assert pickle.loads(out.read_bytes()) == ("tainted", ["UserWarning: given once"])
    W._fresh_main(Context("aot", "cuda:90"), args, str(out), False)
    kind, data = pickle.loads(out.read_bytes())
    assert kind == "ok" and data["cells"] == {"plain_kernel|none": "UserWarning"}


def test_warming_the_installed_release_raises_no_warning() -> None:
    """On the installed release the warm-up warns nothing (else every fingerprint would pay
    the cold path), in a process of its own so that nothing imported before counts."""
    import os
    import subprocess
    import sys

    code = "from matrix.probes.fp.fp_warnings import warm_compiler; print(warm_compiler())"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "[]"
