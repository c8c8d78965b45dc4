"""What ``triton.autotune`` accepts at decoration and at launch (issue 44, autotuner validation).

A library that named something other than a kernel argument in ``key`` (or ``reset_to_zero``,
``restore_value``) imported fine on older releases, the name silently dropped; a newer release
refuses it when the kernel is decorated, so the library no longer imports. This probe decorates
one small kernel per case and, under the interpreter, launches it (one config: no benchmarking,
which needs a GPU), recording in ``data.cells`` per case:

- ``accepted``: decorated (aot) and, under the interpreter, launched and stored the right values;
- ``rejected-decoration`` / ``rejected-launch``: refused there; ``data.errors[case]`` keeps why;
- ``absent``: the keyword itself is not a parameter of ``triton.autotune`` on the release;
- ``wrong``: launched without an error but stored something else;
- ``skipped``: the release looked for a GPU driver to decorate and this machine has none.

Every case passes ``warmup``/``rep`` where ``triton.autotune`` has them: without them 3.2.0 asks
the active GPU driver for its benchmarker at decoration, which a machine without a GPU has not.

The row's status is ``restricted`` when any case is refused, ``wrong`` when any stored a wrong
value, ``accepted`` otherwise. Nothing is compiled: aot runs it once per release, no target.
"""

import inspect
from typing import Any

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, attempt, cause_text


@triton.jit
def k_store(out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, offs, mask=offs < n)


NO_DRIVER = "active drivers"


def _keep_all(configs, nargs, **kwargs):
    return configs


# case: the keywords of triton.autotune besides configs
CASES: dict[str, dict[str, Any]] = {
    "key_argument": {"key": ["n"]},
    "key_non_argument": {"key": ["not_an_argument"]},
    "reset_to_zero_argument": {"key": ["n"], "reset_to_zero": ["out"]},
    "reset_to_zero_non_argument": {"key": ["n"], "reset_to_zero": ["not_an_argument"]},
    "restore_value_argument": {"key": ["n"], "restore_value": ["out"]},
    "restore_value_non_argument": {"key": ["n"], "restore_value": ["not_an_argument"]},
    "prune_configs_by": {"key": ["n"], "prune_configs_by": {"early_config_prune": _keep_all}},
}


def _one(ctx: Context, case: str) -> tuple[str, str]:
    """(cell, error text) of one case."""
    kwargs = CASES[case]
    params = inspect.signature(triton.autotune).parameters
    missing = [k for k in kwargs if k not in params]
    if missing:
        return "absent", f"triton.autotune has no parameter {', '.join(missing)}"
    configs = [triton.Config({"BLOCK": 4})]
    bench = {k: v for k, v in (("warmup", 25), ("rep", 100)) if k in params}
    decorated = attempt(lambda: triton.autotune(configs=configs, **bench, **kwargs)(k_store))
    if decorated.raised:
        assert decorated.exception is not None
        text = cause_text(decorated.exception, 300)
        if NO_DRIVER in text:  # this machine has no GPU: nothing Triton decided about the code
            return "skipped", text
        return "rejected-decoration", text
    if ctx.backend == "aot":
        return "accepted", ""
    import torch

    out = torch.full((8,), -1, dtype=torch.int32)
    launched = attempt(lambda: decorated.value[(1,)](out, 8))
    if launched.raised:
        assert launched.exception is not None
        return "rejected-launch", cause_text(launched.exception, 300)
    got = out[:4].tolist()
    return ("accepted", "") if got == [0, 1, 2, 3] else ("wrong", f"stored {got}")


def observe(ctx: Context) -> Observation:
    cells: dict[str, str] = {}
    errors: dict[str, str] = {}
    for case in CASES:
        cell, error = _one(ctx, case)
        cells[case] = cell
        if error:
            errors[case] = error
    data = {"cells": cells, "errors": errors}
    refused = sorted(c for c, s in cells.items() if s.startswith("rejected"))
    wrong = sorted(c for c, s in cells.items() if s == "wrong")
    if wrong:
        return Observation("wrong", f"ran with a wrong value: {', '.join(wrong)}", data)
    if refused:
        return Observation("restricted", f"refused: {', '.join(refused)}", data)
    return Observation("accepted", "every case accepted", data)
