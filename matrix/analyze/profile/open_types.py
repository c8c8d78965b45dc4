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
  ``torch.uint8``: ``evidence``) where the name can be about what a pointer holds, or a
  launch, host site or declaration types the pointer (those never reach this default). A
  Triton dtype named as what a value is made (the target of a cast ``x.to(tl.float8e4nv)``,
  ``tl.cast(x, T)``, a ``dtype=``, ``tl.zeros(shape, T)``) or as a range (``torch.finfo(T)``)
  is about that value, not about an input: a file that quantizes its bf16 input to an fp8
  cache does not make the input fp8. A Triton dtype compared with a parameter's dtype
  (``V.dtype.element_ty == tl.float8e5``, ``D == tl.int8``, ``tl.static_assert(...)``) is
  evidence for that parameter only; compared with a local's dtype, for every parameter of its
  function. A host's spelling is evidence for the kernel parameters the tensor made with it
  reaches (``o = buf.view(torch.float8_e4m3fn)`` passed through a wrapper to ``O_nope``:
  ``dtype_flow.py``); where it goes anywhere that is not followed (a module constant, a
  table, a comparison, a function of another file), for the whole file (fail closed);
- one 16-bit format per launch (``one_per_launch``): every open variable of one reading of a
  kernel takes the same one of fp16 / bf16 (or fp32), so two open variables are never paired
  as a bf16 and an fp16 (``x.to(y.dtype)``); a format the code spells (``.to(tl.float16)``)
  is a value of its own and still pairs with either.

A team widens it back to every dtype the code admits with ``"*" = ["*"]`` in
``[tool.triton-compat.dtypes]`` (or per kernel / parameter).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from matrix.analyze.profile.host_syntax import callee
from matrix.core import DataFileError
from matrix.newer_syntax import parse_python


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
    modules: frozenset[str] = frozenset()  # ``mention_modules``: tl, torch, triton.language

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
        return cls(floats, ints, halves, computed, dict(spellings), pattern, frozenset(mods))

    def evidence(self, source: str, follow: Follow | None = None) -> Evidence:
        """What ``source``'s dtype spellings are evidence of (module docstring): for every
        pointer of the file (``Evidence.file``) or for one function's parameters
        (``Evidence.ties``); a file that does not parse names every dtype for the file."""
        try:
            tree = parse_python(source)
        except (SyntaxError, ValueError):
            return Evidence(self.mentioned(source), {})
        parents: dict[int, ast.AST] = {}
        owner: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        todo: list[tuple[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]] = [(tree, None)]
        found: list[tuple[ast.Attribute, str, str]] = []  # (node, module, dtype)
        while todo:
            node, fn = todo.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                fn = node
            if fn is not None:
                owner[id(node)] = fn
            if isinstance(node, ast.Attribute):
                module = _dotted(node.value)
                dtype = self.spellings.get(node.attr)
                if module in self.modules and dtype:
                    found.append((node, module, dtype))
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
                todo.append((child, fn))
        file: set[str] = set()
        ties: dict[tuple[int, str], set[str]] = {}
        flow: Flow | None = None
        for node, module, dtype in found:
            parent = parents.get(id(node))
            if _ranged(node, parent) or (
                module != "torch"
                and (_made(node, parent) or _made_by_alias(parent, owner.get(id(node)), parents))
            ):
                continue  # what a value is made (or a range): not what a pointer holds
            fn = owner.get(id(node))
            subjects = _compared(node, parent, parents) if module != "torch" else None
            if fn is not None and subjects is not None:
                params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
                # a parameter's dtype: that parameter's; a local's: any of the function's
                for name in subjects & params if subjects <= params else params:
                    ties.setdefault((fn.lineno, name), set()).add(dtype)
                continue
            # elsewhere: the kernel parameters it reaches through the host (a tensor made
            # with it passed to a launch), where ``follow`` follows it all the way
            if follow is not None and flow is None:
                flow = follow(tree, parents, owner)
            reached = flow.reaches(node) if flow is not None else None
            if reached is None:
                file.add(dtype)
            for key in reached or ():
                ties.setdefault(key, set()).add(dtype)
        return Evidence(frozenset(file), {k: frozenset(v) for k, v in ties.items()})

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


@dataclass(frozen=True)
class Evidence:
    """Where a file's dtype spellings say a pointer may hold that dtype: any pointer of the
    file (``file``), or the parameters of one function (``ties``: (its ``def`` line, the
    parameter) -> dtypes)."""

    file: frozenset[str]
    ties: Mapping[tuple[int, str], frozenset[str]]

    def of(self, line: int, params: Iterable[str]) -> frozenset[str]:
        """The dtypes named for any of ``params`` of the function defined at ``line``, and
        for the whole file."""
        got = set(self.file)
        for p in params:
            got |= self.ties.get((line, p), frozenset())
        return frozenset(got)


class Flow(Protocol):
    def reaches(self, node: ast.expr) -> frozenset[tuple[int, str]] | None: ...


# Builds a Flow for one parsed file (``dtype_flow.DtypeFlow``)
Follow = Callable[[ast.Module, Mapping[int, ast.AST], Mapping[int, Any]], Flow]

# Calls whose dtype argument makes a value of that dtype (``x.to(T)``, ``tl.cast(x, T)``,
# ``tl.zeros(shape, T)``, ``tl.full(shape, v, T)``), and keywords naming the dtype made.
MAKES = frozenset({"to", "cast", "zeros", "full", "zeros_like", "full_like"})
MAKES_KEYWORDS = frozenset({"dtype", "out_dtype"})
# Calls whose dtype argument names a range (``torch.finfo(torch.float8_e4m3fn).max``).
RANGES = frozenset({"finfo", "iinfo"})


def _dotted(e: ast.expr) -> str:
    """``triton.language`` for that attribute chain of names; "" for anything else."""
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        base = _dotted(e.value)
        return f"{base}.{e.attr}" if base else ""
    return ""


def _made(node: ast.expr, parent: ast.AST | None) -> bool:
    """Whether ``node`` (a dtype) names what a value is made: a cast's target, a ``dtype=``."""
    if isinstance(parent, ast.keyword):
        return parent.arg in MAKES_KEYWORDS
    # x.to(T), tl.cast(x, T), tl.zeros(shape, T), tl.full(shape, v, T)
    return isinstance(parent, ast.Call) and node in parent.args and callee(parent.func) in MAKES


def _made_by_alias(
    parent: ast.AST | None, fn: ast.AST | None, parents: Mapping[int, ast.AST]
) -> bool:
    """Whether a dtype is bound to a local of function ``fn`` (``e4m3 = tl.float8e4nv``, the
    assignment ``parent``) that the function reads only as what values are made
    (``x.to(e4m3)``): aiter's fp8 block scales, not what its scale pointers hold. A choice
    between dtypes (``fp8 = tl.float8e4b8 if IS_HIP else tl.float8e4nv``, conch) is bound the
    same way."""
    while isinstance(parent, ast.IfExp):
        parent = parents.get(id(parent))
    if not (isinstance(parent, ast.Assign) and fn is not None and len(parent.targets) == 1):
        return False
    target = parent.targets[0]
    if not isinstance(target, ast.Name):
        return False
    reads = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == target.id
             and isinstance(n.ctx, ast.Load)]  # fmt: skip
    return bool(reads) and all(_made(n, parents.get(id(n))) for n in reads)


def _ranged(node: ast.expr, parent: ast.AST | None) -> bool:
    return isinstance(parent, ast.Call) and node in parent.args and callee(parent.func) in RANGES


def _compared(
    node: ast.expr, parent: ast.AST | None, parents: Mapping[int, ast.AST]
) -> frozenset[str] | None:
    """The names whose dtype ``node`` is compared with (``V.dtype.element_ty == T``,
    ``x.dtype in (T, U)``, ``D is T``, ``D == tl.constexpr(T)``); None where ``node`` is not
    compared with one."""
    if (
        isinstance(parent, ast.Call)
        and parent.args == [node]
        and not parent.keywords
        and ast.unparse(parent.func).endswith("constexpr")
    ):  # `dtype == tl.constexpr(tl.float8e5)` (triton_kernels' flexpoint.py)
        parent = parents.get(id(parent))
    if isinstance(parent, ast.Tuple | ast.List | ast.Set):
        parent = parents.get(id(parent))
    if not isinstance(parent, ast.Compare):
        return None
    names: set[str] = set()
    for side in (parent.left, *parent.comparators):
        e = side
        if isinstance(e, ast.Attribute) and e.attr == "element_ty":
            e = e.value
        if isinstance(e, ast.Attribute) and e.attr in ("dtype", "type"):
            e = e.value
        if isinstance(e, ast.Name):
            names.add(e.id)
    return frozenset(names) or None


_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}
