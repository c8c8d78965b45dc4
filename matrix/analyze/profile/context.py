"""What the readings of one scanned tree share (``Context``), and a ``@triton.jit`` helper of
another file with what reading it needs (``Helper``)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matrix.analyze.profile.admits import Admits
from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.dtype_flow import DtypeFlow
from matrix.analyze.profile.model import Resolver, Use, Val
from matrix.analyze.profile.open_types import Evidence, OpenTypes
from matrix.analyze.profile.promotion import SidedTypes


@dataclass(frozen=True)
class Helper:
    """A ``@triton.jit`` function of another file, with what reading it needs."""

    fn: ast.FunctionDef | ast.AsyncFunctionDef
    resolver: Resolver
    globals: Mapping[str, ast.expr]
    path: str
    lines: Sequence[str]
    jit_names: frozenset[str]


HelperLookup = Callable[[str], Sequence[Helper]]  # a qualified name -> its definitions


class Context:
    """What the readings of one scanned tree share: a ``@triton.jit`` helper is read once per
    distinct set of argument types its callers pass (typed per call site), its uses kept
    once; a helper read at a call site is not also read alone (where its parameters would be
    guessed), unless no call of it could be followed."""

    def __init__(
        self,
        declaration: Declaration | None = None,
        admits: Admits | None = None,
        types: SidedTypes | None = None,
        functions: HelperLookup | None = None,
        aliases: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    ) -> None:
        self.declaration = declaration or Declaration()
        # the tree's plain (not @triton.jit) module-level functions by qualified name: a
        # kernel may call one at compile time on a dtype (dtype_fns.py)
        self.functions: HelperLookup = functions or (lambda q: [])
        # a module-level name bound to a Triton name by assignment (in any branch of an
        # ``if``/``try``: each is a value it may hold) -> those Triton qualified names, each
        # with the ``path:line`` that binds it (a feature guard there decides it per release)
        self.aliases: Mapping[str, Sequence[tuple[str, str]]] = aliases or {}
        self.admits = admits or Admits()  # what the baseline refuses everywhere
        # the result dtypes the baseline and the candidate recorded (None: the fixed rule)
        self.types = types
        self.memo: dict[tuple[Any, ...], Val] = {}
        self.int_vars: dict[tuple[Any, ...], frozenset[str]] = {}  # per memo key
        self.excluded: dict[tuple[Any, ...], dict[str, set[str]]] = {}  # per memo key
        # per function (id): its pointer parameters and its integer (offset) names
        self.shapes: dict[int, tuple[set[str], set[str], set[str]]] = {}
        self.site_uses: dict[tuple[Any, ...], list[Use]] = {}
        self.called: set[int] = set()  # ids of helpers read at a call site
        self.unfollowed: set[int] = set()  # ids of helpers a call of which was not followed
        self.alone: list[tuple[int, list[Use]]] = []  # (helper id, uses of its own reading)
        # which readings reached which call-site readings: a helper's call-site uses count
        # only where a kept reading reached them (a reading alone that is replaced by its
        # call sites takes the helpers it called with guessed types along with it)
        self.root: tuple[Any, ...] = ("root", 0, False)  # the top-level reading under way
        self.edges: dict[tuple[Any, ...], set[tuple[Any, ...]]] = {}
        # open element types the default of open_types.py narrowed (said once in gate.md)
        self.assumed: set[str] = set()
        # each type variable's dtypes in the reading under way (a value whose kinds are these
        # is the variable itself: what the baseline refuses on it narrows it)
        self.domains: dict[str, frozenset[str]] = {}
        # the call-site readings (memo keys) where two open variables that may each take either
        # 16-bit format met in one op (modules._read: then one reading per format)
        self.mixed: set[tuple[Any, ...]] = set()
        self._mentions: dict[str, frozenset[str]] = {}  # path -> the dtypes its source names
        self._evidence: dict[str, Evidence] = {}  # path -> where its names are evidence

    def mentioned(self, path: str, lines: Sequence[str], rule: OpenTypes) -> frozenset[str]:
        """The dtypes the file at ``path`` names (``tl.uint8``): once per file."""
        got = self._mentions.get(path)
        if got is None:
            got = self._mentions[path] = rule.mentioned("\n".join(lines))
        return got

    def evidence(self, path: str, lines: Sequence[str], rule: OpenTypes) -> Evidence:
        """Which pointers the dtypes the file at ``path`` names are evidence for: once per
        file (``OpenTypes.evidence``)."""
        got = self._evidence.get(path)
        if got is None:
            got = self._evidence[path] = rule.evidence("\n".join(lines), DtypeFlow)
        return got

    def uses(self, own: list[Use]) -> list[Use]:
        """``own`` (every reading's uses) with each called helper's own reading replaced by
        its call-site readings (each distinct use once)."""
        read = self.called - self.unfollowed
        drop = {id(u) for fid, us in self.alone if fid in read for u in us}
        out = [u for u in own if id(u) not in drop]
        todo = [r for r in self.edges if r[0] == "root" and not (r[2] and r[1] in read)]
        reached: set[tuple[Any, ...]] = set()
        while todo:
            for key in self.edges.get(todo.pop(), ()):
                if key not in reached:
                    reached.add(key)
                    todo.append(key)
        seen: set[Use] = set()
        for key, us in self.site_uses.items():
            if key not in reached:
                continue
            for u in us:
                if u not in seen:
                    seen.add(u)
                    out.append(u)
        return out
