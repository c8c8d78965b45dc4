"""A team's usage profile: what its kernels do, with operand kinds, file:line, kernel and test.

The gate asks one question of every change it finds: does this team's code use it? The profile
answers it. It is built by reading each ``@triton.jit`` function with ``ast`` and inferring,
as far as the source allows, the kind of every value: a dtype as the fingerprint spells it
(``float16``, ``uint8``), or a scalar kind (``lit_int`` a literal, ``cx_int`` a
``tl.constexpr``, ``arg_i32`` a runtime argument, ...). Each operation becomes a ``Use``:
``binary.sub`` with operands ``(uint8, cx_int)`` at ``k.py:12`` in kernel ``dequant``.

Kinds come from the code itself (``.to(tl.bfloat16)``, ``dtype=`` arguments, ``tl.zeros``,
``tl.arange``, ``tl.constexpr`` parameters and their defaults, bitcasts, literals), and from a
captured launch where a test ran the kernel (its signature types the pointer and scalar
arguments, its constexprs their values: ``Launch``). Where a kind cannot be inferred the
operand is unknown (``None``) and a change to that op "may affect" the code: it blocks, naming
the line (fail closed, but precisely).

``match`` maps a fingerprint cell, a probe row or a Triton name onto the profile
(``matrix/data/usage_map.toml`` holds every table): ``USED`` with the uses that do it,
``MAY_AFFECT`` with the uses whose kinds are unknown, or ``NOT_USED``.

This module reads trees; resolving names across a scanned tree (re-exported ``tl``, relative
imports) is the scanner's job: ``profile_module`` takes any object with the scanner's
``Imports`` methods (``tl_name``, ``qualname``, ``is_jit``), so that analyze/ never imports
the scanner (the gate passes them in).
"""

from matrix.analyze.profile.context import Context
from matrix.analyze.profile.host import HostTypes
from matrix.analyze.profile.match import Match, Matcher, match_uses, parse_op_spec
from matrix.analyze.profile.model import (
    MAY_AFFECT,
    NOT_USED,
    USED,
    Launch,
    Profile,
    UsageMap,
    Use,
    load_map,
)
from matrix.analyze.profile.modules import jit_functions, profile_module
from matrix.analyze.profile.reader import KernelReader

__all__ = [
    "MAY_AFFECT",
    "NOT_USED",
    "USED",
    "Context",
    "HostTypes",
    "KernelReader",
    "Launch",
    "Match",
    "Matcher",
    "Profile",
    "UsageMap",
    "Use",
    "jit_functions",
    "load_map",
    "match_uses",
    "parse_op_spec",
    "profile_module",
]
