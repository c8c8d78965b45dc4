"""What an open element type admits: a pointer's element type (or a dtype constexpr) that no
captured launch, host launch site or team declaration decides (``[open_types]`` of
``matrix/data/usage_map.toml``, read by ``load_map``, applied by the kernel reader).

"Any dtype the code does not rule out" made nearly every may-affect entry on real libraries
an fp8 division or a bf16 -> fp16 cast that no launch of that code performs. So an open
element type admits only what torch tensors passed to Triton kernels carry in practice:

- the ``floats`` (fp16, bf16, fp32); where the code rules every one of them out (a loaded
  value used as an offset, a bit op the baseline refuses on floats), the ``ints`` (int32,
  int64);
- any other dtype only with evidence: the kernel's file names it (``tl.float8e4nv``,
  ``torch.uint8``: ``mentions``), or a launch, host site or declaration types the pointer
  (those never reach this default);
- one 16-bit format per launch (``one_per_launch``): every open variable of one reading of a
  kernel takes the same one of fp16 / bf16 (or fp32), so two open variables are never paired
  as a bf16 and an fp16 (``x.to(y.dtype)``); a format the code spells (``.to(tl.float16)``)
  is a value of its own and still pairs with either.

A team widens it back to every dtype the code admits with ``"*" = ["*"]`` in
``[tool.triton-compat.dtypes]`` (or per kernel / parameter).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from matrix.core import DataFileError


@dataclass(frozen=True)
class OpenTypes:
    """The default of an open element type (``[open_types]``); ``OpenTypes()`` admits every
    dtype the code does not rule out (no default: what a declared ``"*"`` asks for)."""

    floats: tuple[str, ...] | None = None  # None: no default (every dtype the code admits)
    ints: tuple[str, ...] = ()
    one_per_launch: tuple[str, ...] = ()  # the 16-bit formats one launch takes one of
    computed: tuple[str, ...] = ()  # dtypes computing alone makes (a compare, an index, rand)
    # source spellings (``tl.X``, ``torch.X``: the modules in ``mention_modules``) -> dtype
    spellings: Mapping[str, str] = field(default_factory=dict)
    mention: re.Pattern[str] | None = None

    @classmethod
    def parse(
        cls, table: Mapping[str, Any], spellings: Mapping[str, str], elem: Iterable[str], path: Any
    ) -> OpenTypes:
        """``[open_types]`` checked against the element dtypes ``elem`` (``spellings``: the map's
        ``[dtypes]``, what a mention in the source names)."""
        known = frozenset(elem)

        def dtypes(key: str) -> tuple[str, ...]:
            got = table.get(key)
            if not isinstance(got, list) or not all(isinstance(d, str) and d in known for d in got):
                raise DataFileError(
                    path, f"open_types.{key}", f"a list of dtypes from {sorted(known)}", got
                )
            return tuple(got)

        floats, ints, halves = dtypes("floats"), dtypes("ints"), dtypes("one_per_launch")
        computed = dtypes("computed")
        if not set(halves) <= set(floats):
            raise DataFileError(path, "open_types.one_per_launch", "dtypes of floats", halves)
        mods = table.get("mention_modules")
        if not isinstance(mods, list) or not mods or not all(isinstance(m, str) for m in mods):
            raise DataFileError(
                path, "open_types.mention_modules", "module names (tl, torch)", mods
            )
        names = "|".join(re.escape(m) for m in sorted(mods, key=len, reverse=True))
        # `tl.float8e4nv`, `torch . uint8` (not `x.tl.float16`: the module name starts a name)
        pattern = re.compile(rf"(?<![\w.])(?:{names})\s*\.\s*(\w+)")
        return cls(floats, ints, halves, computed, dict(spellings), pattern)

    def mentioned(self, source: str) -> frozenset[str]:
        """The dtypes ``source`` names as ``tl.X`` / ``torch.X`` (evidence that its kernels
        may see them)."""
        if self.mention is None:
            return frozenset()
        found = {self.spellings.get(m.group(1)) for m in self.mention.finditer(source)}
        return frozenset(d for d in found if d)

    def domain(
        self,
        admitted: frozenset[str],
        mentioned: frozenset[str],
        half: str | None,
        practice: bool = True,
    ) -> frozenset[str]:
        """What an open element type takes: of the dtypes the code ``admitted``, the floats
        (else the ints) and the ``mentioned`` ones (``practice=False``: all of them, a domain
        the host decided), with ``half`` the one 16-bit format of this launch; ``admitted``
        itself where none of those is admitted (a contradiction is never narrowed to
        nothing)."""
        if self.floats is None:
            return admitted
        floats = frozenset(self.floats)
        got = admitted & (floats | mentioned) if practice else admitted
        if practice and not got & floats:  # every float ruled out: an integer in practice
            got = admitted & (frozenset(self.ints) | mentioned)
        if half is not None:
            one = got - (frozenset(self.one_per_launch) - {half})
            got = one or got
        return got or admitted

    def note(self, n: int) -> str:
        """The assumption in words, once, for gate.md and gate.json."""
        if self.floats is None or not n:
            return ""
        floats = "/".join(_SHORT.get(d, d) for d in self.floats)
        ints = "/".join(_SHORT.get(d, d) for d in self.ints)
        return (
            f"{n} open element type(s) assumed {floats} (one 16-bit format per launch; {ints} "
            "where the code uses the values as integers; any other dtype only where the file "
            "names it, e.g. `tl.float8e4nv`); declare dtypes in [tool.triton-compat.dtypes] to "
            'widen, e.g. `"*" = ["*"]`'
        )


_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}
