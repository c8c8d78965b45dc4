"""The benchmark's lines: each implementation by name, as a registry (no ``if impl ==`` chain).

An ``Impl`` builds the callable ``(a, b) -> c`` timed for a case (``plan`` forces a split-K
configuration, for the sweep) and says which configuration a record ran. Adding a line is one
entry in ``IMPLS``. Everything here imports torch and the kernels lazily, when a line is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernels.bench.suite import Case

Fn = Callable[[Any, Any], Any]


def _cublas(case: Case, plan: Any = None) -> Fn:
    import torch

    return torch.matmul


def _tiled(case: Case, plan: Any = None) -> Fn:
    import kernels

    prec = case.precision
    return lambda a, b: kernels.tiled_matmul(a, b, precision=prec)


def _splitk(deterministic: bool) -> Callable[[Case, Any], Fn]:
    def make(case: Case, plan: Any = None) -> Fn:
        import kernels

        prec = case.precision
        if plan is None:
            return lambda a, b: kernels.splitk_matmul(
                a, b, precision=prec, deterministic=deterministic
            )
        return _forced(case, plan, deterministic)

    return make


def _forced(case: Case, plan: Any, deterministic: bool) -> Fn:
    """``plan`` bound once on the first call's operands (later calls are like it)."""
    from kernels import splitk
    from kernels.checks import check_matmul

    bound: list[Fn] = []

    def forced(a, b):
        if not bound:
            p = check_matmul(a, b, None, case.precision, interpreted=False)
            bound.append(splitk.bind_plan(a, b, plan, p, precision=case.precision,
                                          deterministic=deterministic))  # fmt: skip
        return bound[0](a, b)

    return forced


def _classic_plan(a: Any, b: Any):
    from kernels import splitk
    from kernels.config import cdiv, choose_split_k, tile_config
    from kernels.launch import loader_plan, target_programs

    cfg = tile_config("cuda", a.element_size())
    m, k = a.shape
    split = choose_split_k(m, b.shape[1], k, cfg, target_programs(a.device))
    chunk = cdiv(cdiv(k, split), cfg.block_k) * cfg.block_k
    return splitk.SplitKPlan(cfg, split, chunk, loader_plan(a, b, cfg))


def _classic(case: Case, plan: Any = None) -> Fn:
    """The kernel before the fused one: zeroing launch, classic kernel, cast launch."""
    bound: list[Fn] = []

    def classic(a, b):
        if not bound:
            bound.append(_forced(case, _classic_plan(a, b), False))
        return bound[0](a, b)

    return classic


def _describe_splitk(deterministic: bool) -> Callable[[Case, Any, Any], tuple[int | None, str]]:
    def describe(case: Case, a: Any, b: Any) -> tuple[int | None, str]:
        from kernels import splitk

        plan = splitk.plan_splitk(a, b, precision=case.precision, deterministic=deterministic)
        form = "" if plan.product == "dot" else f"-{plan.product}"
        return plan.split_k, (
            f"{plan.config}-S{plan.split_k}-{plan.loader.loader}{form} [{plan.source}]"
        )

    return describe


def _describe_tiled(case: Case, a: Any, b: Any) -> tuple[int | None, str]:
    from kernels.config import tile_config

    return None, str(tile_config("cuda", a.element_size()))


@dataclass(frozen=True)
class Impl:
    """One line: how to build its callable, and how to describe what a record ran."""

    make: Callable[[Case, Any], Fn]
    describe: Callable[[Case, Any, Any], tuple[int | None, str]]


IMPLS: dict[str, Impl] = {
    "cublas": Impl(_cublas, lambda case, a, b: (None, "torch.matmul")),
    "tiled": Impl(_tiled, _describe_tiled),
    "splitk": Impl(_splitk(False), _describe_splitk(False)),
    "splitk_deterministic": Impl(_splitk(True), _describe_splitk(True)),
    "splitk_classic": Impl(
        _classic,
        lambda case, a, b: (None, "classic kernel, kernels.config tiles, zero + kernel + cast"),
    ),
}
# The line every ratio is taken against, and the ones the summary compares with it.
BASELINE = "cublas"
ATOMIC, DETERMINISTIC = "splitk", "splitk_deterministic"


def impl_fn(case: Case, impl: str, plan: Any = None) -> Fn:
    """The callable timed for ``impl``; KeyError names the known lines."""
    if impl not in IMPLS:
        raise KeyError(f"impl {impl!r}: expected one of {sorted(IMPLS)}")
    return IMPLS[impl].make(case, plan)


class cublas_mode:
    """TF32 allowed for the tf32 cases only, around every check and timing; restored after."""

    def __init__(self, case: Case):
        self.tf32 = case.dtype == "fp32-tf32"

    def __enter__(self):
        import torch

        self.saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = self.tf32

    def __exit__(self, *exc):
        import torch

        torch.backends.cuda.matmul.allow_tf32 = self.saved
