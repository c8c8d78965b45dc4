"""What a kernel's parameters no launch typed hold: a dtype constexpr or a pointer takes the
team's declared dtypes where the host decides none, else a type variable whose dtypes are what
the code admits (``_domain``: the host's checks, what the code rules out, and otherwise what
tensors carry in practice, ``[open_types]``), with the host's per-dtype images (a float32
buffer made for an fp16 or bf16 input) where it makes one. A mixin of ``KernelReader``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from matrix.analyze.profile.context import Context
from matrix.analyze.profile.declaration import WIDE
from matrix.analyze.profile.model import (
    ELEM_DTYPES,
    Launch,
    Per,
    UsageMap,
    Val,
    identity,
    type_var,
)


class ParamTypes:
    """The parameter part of ``KernelReader`` (which sets the attributes below)."""

    fn: Any
    ctx: Context
    map: UsageMap
    launch: Launch | None
    variant: int
    narrow: Mapping[str, frozenset[str]]
    decided: frozenset[str]
    half: str | None
    path: str
    lines: Sequence[str]

    def _dtype_param(self, name: str) -> Val:
        """A constexpr parameter used as a dtype (``x.to(OUT_DTYPE)``) that no launch gave:
        the declared dtypes, else a type variable (``_domain``)."""
        declared = self.ctx.declaration.dtypes_of(self.fn.name, name)
        if declared and declared != WIDE:
            pick = declared[self.variant] if self.variant < len(declared) else None
            return Val(dtype=frozenset({pick} if pick else declared))
        tied = self.launch.ties.get(name) if self.launch else None
        # tied by the host to a pointer's dtype (``D[x.dtype]``): that pointer's variable
        var = type_var(self.fn.name, tied) if tied else type_var(self.fn.name, name, dtype=True)
        names = self.ctx.domains[var] = self._domain(var, wide=declared == WIDE, params=(name,))
        per = self._imaged(name, names)
        return Val(dtype=frozenset().union(*(ks for _, ks in per)) if per else names,
                   vars=frozenset({var}), per=per or identity(names))  # fmt: skip

    def _pointer_param(self, name: str) -> Val:
        """A pointer parameter no launch typed: the team's declared dtypes, else a type
        variable (its element type, ``_domain``)."""
        declared = self.ctx.declaration.dtypes_of(self.fn.name, name)
        # host code passing one dtype to several pointers (``y = torch.empty_like(x)``): one
        # variable, named by the first of them
        ties = self.launch.ties if self.launch else {}
        tied = ties.get(name, name)
        images = self.launch.images.get(name) if self.launch else None
        if declared and declared != WIDE and not (self.launch and tied in self.launch.domains):
            # the team's dtypes, where the host decides none (what it checks, a choice of
            # named dtypes: stronger); a buffer the host makes of another dtype than its
            # variable's (``images``) takes that one for the variable's declared dtype
            if images:
                declared = self.ctx.declaration.dtypes_of(self.fn.name, tied) or declared
            pick = declared[self.variant] if self.variant < len(declared) else None
            chosen = frozenset({pick} if pick else declared)
            if images:
                chosen = frozenset().union(*(images.get(d, frozenset({d})) for d in chosen))
            return Val(chosen, pointer=True)
        var = type_var(self.fn.name, tied)
        # every parameter of this variable: what the code names for any of them
        params = {name, tied, *(p for p, t in ties.items() if t == tied)}
        kinds = self.ctx.domains[var] = self._domain(var, wide=declared == WIDE, params=params)
        per = self._imaged(name, kinds)
        return Val(frozenset().union(*(ks for _, ks in per)) if per else kinds, pointer=True,
                   vars=frozenset({var}), per=per or identity(kinds))  # fmt: skip

    def _imaged(self, name: str, kinds: frozenset[str]) -> Per:
        """Where the host makes ``name`` of other dtypes than its variable's own (``images``:
        a float32 buffer for an fp16 or bf16 input), its dtypes per dtype of the variable."""
        images = self.launch.images.get(name) if self.launch else None
        if not images:
            return None
        return tuple((d, images.get(d, frozenset({d}))) for d in sorted(kinds))

    def _domain(self, var: str, wide: bool = False, params: Iterable[str] = ()) -> frozenset[str]:
        """The dtypes type variable ``var`` takes: those the code admits (``narrow``: what
        the host admits, what the code rules out); where nothing decides it (no host domain,
        no declared ``"*"``: ``wide``), only what tensors carry in practice
        (``[open_types]``: open_types.py). Either way (a declared ``"*"`` aside) the 16-bit
        format is this reading's (``half``): a host that admits fp16 and bf16 for two tensors
        still passes one of them to a launch."""
        admitted = self.narrow.get(var, ELEM_DTYPES)
        if wide:
            return admitted
        rule = self.map.open_types
        if var in self.decided:
            return rule.domain(admitted, frozenset(), self.half, practice=False)
        # the dtypes the file names where they may be what these parameters hold (not a
        # cast's target: OpenTypes.evidence)
        evidence = self.ctx.evidence(self.path, self.lines, rule)
        mentioned = evidence.of(self.fn.lineno, params)
        got = rule.domain(admitted, mentioned, self.half)
        if rule.domain(admitted, mentioned, None) != admitted:
            self.ctx.assumed.add(var)
        return got
