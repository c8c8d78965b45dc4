"""The launches that probes describe by hand name every parameter of their kernel.

The aot probes compile our kernels from a hand-written description (launch arguments and
constexprs). A kernel that gains a parameter (the fused split-K's ``PRODUCT``) made the
``splitk`` probe fail on every release with "arguments ['PRODUCT'] are in neither signature
nor constexprs": our bug, recorded as the release's. This catches it before a matrix run.
"""

from __future__ import annotations

import inspect

import pytest

from matrix.probes.splitk import probe as splitk
from matrix.probes.tiled import probe as tiled


def _assert_every_parameter_named(variants: dict) -> None:
    for name, (kernel, args, constexprs) in variants.items():
        wanted, given = set(inspect.signature(kernel.fn).parameters), set(args) | set(constexprs)
        assert wanted == given, (
            f"{name}: missing {sorted(wanted - given)}, unknown {sorted(given - wanted)}"
        )


@pytest.mark.parametrize("target", ["cuda:80", "cuda:90", "hip:gfx942"])
def test_splitk_probe_variants_name_every_kernel_parameter(target):
    variants = splitk._aot_variants(target)
    assert "pointer" in variants and ("fused" in variants) == target.startswith("cuda:")
    _assert_every_parameter_named(variants)


def test_tiled_probe_variants_name_every_kernel_parameter():
    _assert_every_parameter_named(tiled._aot_variants())
