"""Branches that run only on some Triton releases, decided per branch and per release.

Real code keeps the old spelling of a moved API in the branch for old releases:

    if Version(triton.__version__) >= Version("3.0.0"):
        from triton.language.extra import libdevice      # 3.0 and later
    else:
        triton_tanh = tl.math.tanh                        # before 3.0 only

A finding in a branch the candidate does not take is no hazard for it: the judge marks it "does
not affect" and says which test rules the branch out. Only tests the scanner can evaluate for a
release are read, any other test (a device check) leaves the branch as it is, so nothing is
hidden on a guess:

- a release comparison (``VersionGuard``): ``triton.__version__ >= "3.3"``,
  ``Version(triton.__version__) < Version("3.2")``, ``packaging.version.parse``, a module name
  bound to either, ``tuple(map(int, triton.__version__.split(".")[:2])) >= (3, 2)``;
- a feature test (``FeatureGuard``), decided by the API census of each release:
  ``hasattr(tl, "make_tensor_descriptor")``, ``getattr(triton, "set_allocator", None) is not
  None``, ``"fast_flush" in inspect.signature(triton.testing.do_bench).parameters``;
- ``try: ... except (AttributeError, ImportError, TypeError, ...)`` whose handler does not
  re-raise (``TryGuard``): the code in ``try`` cannot break the release with an exception the
  handler catches, it falls back; the handler's own code (``HandlerGuard``) runs only where the
  ``try`` body fails, so not on a release where every Triton name the body uses exists.

A conjunct of ``and`` guards the body too (``if HAS_TMA and torch.cuda.is_available():``).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from matrix.analyze.census import Census, spelling, support
from matrix.core import Release, ReleaseError
from matrix.scan.imports import Imports

COMPARE: dict[type[ast.cmpop], str] = {
    ast.GtE: ">=",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.Lt: "<",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
OPS: dict[str, Callable[[Release, Release], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
SWAPPED = {">=": "<=", ">": "<", "<=": ">=", "<": ">", "==": "==", "!=": "!="}
# operator.ge and friends, as helpers such as compare_version("triton", operator.ge, "3.0") take
OPERATOR_NAMES = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<", "eq": "==", "ne": "!="}
# callables that turn a version string into something comparable
VERSION_CALLS = {"Version", "parse", "parse_version", "LooseVersion", "StrictVersion"}


@dataclass(frozen=True)
class VersionGuard:
    """Lines ``first``-``last`` run only when ``triton <op> version`` is ``when``."""

    first: int
    last: int
    op: str
    version: Release
    when: bool

    def runs_on(self, release: Release) -> bool:
        return OPS[self.op](release, self.version) == self.when

    def text(self) -> str:
        test = f"triton {self.op} {self.version}"
        return test if self.when else f"not ({test})"

    def decide(self, release: Release, censuses: Mapping[str, Census] | None) -> bool | None:
        """Whether the branch runs on ``release`` (None: cannot tell)."""
        return self.runs_on(release)


def _census_of(censuses: Mapping[str, Census] | None, release: Release) -> Census | None:
    if not censuses:
        return None
    return censuses.get(spelling(str(release)))


@dataclass(frozen=True)
class FeatureGuard:
    """Lines ``first``-``last`` run only where ``qualname`` exists (``hasattr``/``getattr``), or
    with ``keyword``, only where its signature has that parameter (``inspect.signature``), when
    ``when``; the census of each release says whether it does."""

    first: int
    last: int
    qualname: str
    keyword: str | None
    when: bool

    def holds(self, release: Release, censuses: Mapping[str, Census] | None) -> bool | None:
        census = _census_of(censuses, release)
        if census is None:
            return None
        if self.keyword is None:
            return {"present": True, "absent": False}.get(census.status(self.qualname))
        got = support(census, self.qualname, (self.keyword,))
        # a function that is not there has no signature to ask: the test itself would raise
        return {"ok": True, "rejects": False}.get(got.status)

    def decide(self, release: Release, censuses: Mapping[str, Census] | None) -> bool | None:
        holds = self.holds(release, censuses)
        return None if holds is None else holds == self.when

    def text(self) -> str:
        if self.keyword is None:
            test = f"{self.qualname} exists"
        else:
            test = f"{self.qualname} has a parameter {self.keyword!r}"
        return test if self.when else f"not ({test})"


# A handler that catches any of these catches whatever the guarded code raises.
CATCH_ALL = frozenset({"", "Exception", "BaseException"})


@dataclass(frozen=True)
class TryGuard:
    """Lines ``first``-``last`` are a ``try`` body whose handler at ``handler`` catches
    ``catches`` ("" for a bare ``except``) and falls back (``fallback``: it does not re-raise)."""

    first: int
    last: int
    catches: tuple[str, ...]
    handler: int
    fallback: bool

    def catches_any(self, raised: Iterable[str]) -> bool:
        return any(c in CATCH_ALL or c in raised for c in self.catches)

    def text(self) -> str:
        caught = ", ".join(c or "everything" for c in self.catches)
        return f"try/except {caught} at line {self.first - 1}, fallback at line {self.handler}"

    def decide(self, release: Release, censuses: Mapping[str, Census] | None) -> bool | None:
        return None  # the body runs everywhere; what it raises is the judge's question


@dataclass(frozen=True)
class HandlerGuard:
    """Lines ``first``-``last`` are an ``except`` handler: they run only where the ``try`` body
    at line ``body`` fails. ``names``: the Triton names that body uses; where the census has
    every one of them, nothing the release removed makes it fail."""

    first: int
    last: int
    body: int
    names: tuple[str, ...]

    def decide(self, release: Release, censuses: Mapping[str, Census] | None) -> bool | None:
        census = _census_of(censuses, release)
        if census is None or not self.names:
            return None
        if all(census.status(q) == "present" for q in self.names):
            return False
        return None  # a name absent (the fallback runs) or unseen: nothing to rule out

    def text(self) -> str:
        shown = ", ".join(self.names[:3]) + (", ..." if len(self.names) > 3 else "")
        return f"the fallback of the try at line {self.body} (its body uses {shown}, all present)"


Guard = VersionGuard | FeatureGuard | TryGuard | HandlerGuard


def _is_triton_version(
    node: ast.expr, imports: Imports, names: Mapping[str, ast.expr] | None = None, depth: int = 0
) -> bool:
    """``triton.__version__`` (however imported), ``Version(triton.__version__)``,
    ``importlib.metadata.version("triton")``, or a module name bound to one of them
    (``TRITON_VERSION = version.parse(triton.__version__)``)."""
    if depth > 3:
        return False
    bound = isinstance(node, ast.Name) and names and node.id in names
    if bound and imports.qualname(node) != "triton.__version__":
        return _is_triton_version(names[node.id], imports, names, depth + 1)  # type: ignore
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        arg = node.args[0]
        name = _last_name(node.func)
        if name in VERSION_CALLS:
            return _is_triton_version(arg, imports, names, depth + 1)
        # importlib.metadata.version("triton")
        return name == "version" and isinstance(arg, ast.Constant) and arg.value == "triton"
    return isinstance(node, (ast.Attribute, ast.Name)) and (
        imports.qualname(node) == "triton.__version__"
    )


def _mentions_triton_version(node: ast.expr, imports: Imports) -> bool:
    """Whether ``triton.__version__`` occurs in ``node``: ``tuple(map(int,
    triton.__version__.split(".")[:2]))``, ``Version(triton.__version__).release``."""
    return any(
        isinstance(n, (ast.Attribute, ast.Name)) and imports.qualname(n) == "triton.__version__"
        for n in ast.walk(node)
    )


def _tuple_version(node: ast.expr) -> Release | None:
    """``(3, 2)`` -> 3.2.0: the other side of a comparison of version number tuples."""
    if not isinstance(node, ast.Tuple) or not 1 <= len(node.elts) <= 3:
        return None
    parts = [e.value for e in node.elts if isinstance(e, ast.Constant)]
    if len(parts) != len(node.elts) or not all(type(p) is int for p in parts):
        return None
    return Release.parse(".".join(str(p) for p in [*parts, 0, 0][:3]))


def _literal_version(node: ast.expr) -> Release | None:
    is_call = isinstance(node, ast.Call) and len(node.args) == 1
    if is_call and _last_name(node.func) in VERSION_CALLS:  # type: ignore[attr-defined]
        node = node.args[0]  # type: ignore[attr-defined]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return Release.parse(node.value)
        except ReleaseError:
            return None
    return None


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def version_test(
    test: ast.expr, imports: Imports, names: dict[str, ast.expr], depth: int = 0
) -> tuple[str, Release, bool] | None:
    """``(op, version, when)``: ``test`` is ``when`` exactly when ``triton <op> version``
    holds (``when`` False for a negated test). None when the scanner cannot evaluate it."""
    if depth > 3:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = version_test(test.operand, imports, names, depth + 1)
        if inner is None:
            return None
        return (inner[0], inner[1], not inner[2])
    if _bound_key(test) in names:  # IS_TRITON_3 = Version(...) >= ...
        return version_test(names[_bound_key(test)], imports, names, depth + 1)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op = COMPARE.get(type(test.ops[0]))
        left, right = test.left, test.comparators[0]
        if op is None:
            return None
        if _is_triton_version(left, imports, names):
            v = _literal_version(right)
            return (op, v, True) if v is not None else None
        if _is_triton_version(right, imports, names):
            v = _literal_version(left)
            return (SWAPPED[op], v, True) if v is not None else None
        # version number tuples: tuple(map(int, triton.__version__.split(".")[:2])) >= (3, 2)
        if _tuple_version(right) is not None and _mentions_triton_version(left, imports):
            return (op, _tuple_version(right), True)  # type: ignore[return-value]
        if _tuple_version(left) is not None and _mentions_triton_version(right, imports):
            return (SWAPPED[op], _tuple_version(left), True)  # type: ignore[return-value]
        return None
    if isinstance(test, ast.Call) and len(test.args) == 3:  # compare_version("triton", ge, "3")
        package, how, version = test.args
        op = OPERATOR_NAMES.get(_last_name(how))
        v = _literal_version(version)
        if isinstance(package, ast.Constant) and package.value == "triton" and op and v:
            return (op, v, True)
    return None


def _triton_name(node: ast.expr, imports: Imports) -> str | None:
    q = imports.qualname(node)
    return q if q is not None and (q == "triton" or q.startswith("triton.")) else None


def _has_attr(node: ast.expr, imports: Imports) -> str | None:
    """``hasattr(X, "n")`` or ``getattr(X, "n", default)`` on a Triton name X: ``X.n``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    wanted = {"hasattr": 2, "getattr": 3}.get(node.func.id)
    if wanted is None or len(node.args) != wanted or node.keywords:
        return None
    obj, attr = node.args[0], node.args[1]
    base = _triton_name(obj, imports)
    if base is None or not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
        return None
    return f"{base}.{attr.value}"


def _signature_of(node: ast.expr, imports: Imports) -> str | None:
    """``inspect.signature(F).parameters`` (or ``signature(F).parameters``) of a Triton F."""
    if not (isinstance(node, ast.Attribute) and node.attr == "parameters"):
        return None
    call = node.value
    if not (isinstance(call, ast.Call) and _last_name(call.func) == "signature"):
        return None
    if len(call.args) != 1:
        return None
    return _triton_name(call.args[0], imports)


def feature_test(
    test: ast.expr, imports: Imports, names: dict[str, ast.expr], depth: int = 0
) -> tuple[str, str | None, bool] | None:
    """``(qualname, keyword, when)``: ``test`` is ``when`` exactly where ``qualname`` exists
    (keyword None) or its signature has ``keyword``. None when it is no such test."""
    if depth > 3:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = feature_test(test.operand, imports, names, depth + 1)
        return None if inner is None else (inner[0], inner[1], not inner[2])
    if _bound_key(test) in names:  # HAS_TMA = hasattr(tl, "..."); self._has_x = hasattr(...)
        return feature_test(names[_bound_key(test)], imports, names, depth + 1)
    if (  # callable(getattr(X, "n", None)): callable(None) is False, as the getattr's truth
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "callable"
        and len(test.args) == 1
        and not test.keywords
    ):
        named = _has_attr(test.args[0], imports)
        return None if named is None else (named, None, True)
    attr = _has_attr(test, imports)
    if attr is not None:
        return (attr, None, True)  # hasattr(...), or getattr(..., None) used for its truth
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        # getattr(X, "n", None) is not None / is None
        if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant):
            attr = _has_attr(left, imports)
            if attr is not None and right.value is None:
                return (attr, None, isinstance(op, ast.IsNot))
        # "kw" in inspect.signature(F).parameters
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(left, ast.Constant):
            fn = _signature_of(right, imports)
            if fn is not None and isinstance(left.value, str):
                return (fn, left.value, isinstance(op, ast.In))
    return None


def _bound_key(e: ast.expr) -> str:
    """The key ``_module_names`` files a bound test under: ``X`` for a name, ``self.X`` for an
    instance attribute ("" for anything else)."""
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
        return f"self.{e.attr}"
    return ""


def _module_names(tree: ast.Module) -> dict[str, ast.expr]:
    """What a test may name instead of spelling itself out: a module-level name's value, and
    an instance attribute's (``self._has_async_task = hasattr(tl, "async_task")`` in
    ``__init__``) where the file assigns that attribute exactly once (two assignments, or two
    classes with one attribute name, could hold different tests: neither is read)."""
    out: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                out[target.id] = stmt.value
    attrs: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(tree):
        pairs: list[tuple[ast.expr, ast.expr | None]]
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            pairs = [(node.target, node.value)]
        else:
            continue
        for t, value in pairs:
            key = _bound_key(t) if isinstance(t, ast.Attribute) else ""
            if key:
                attrs.setdefault(key, []).append(value)
    out.update({k: v[0] for k, v in attrs.items() if len(v) == 1 and v[0] is not None})
    return out


def _span(body: list[ast.stmt]) -> tuple[int, int]:
    return body[0].lineno, max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in body)


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    return [test]


def _branch(
    first: int, last: int, test: ast.expr, imports: Imports, names: dict[str, ast.expr], when: bool
) -> VersionGuard | FeatureGuard | None:
    got = version_test(test, imports, names)
    if got is not None:
        op, version, holds = got
        return VersionGuard(first, last, op, version, holds == when)
    feature = feature_test(test, imports, names)
    if feature is not None:
        qualname, keyword, holds = feature
        return FeatureGuard(first, last, qualname, keyword, holds == when)
    return None


def branch_test(node: ast.If, imports: Imports) -> VersionGuard | FeatureGuard | None:
    """The guard of an ``if``'s body (its lines, its test), or None when the scanner cannot
    evaluate the test (module-level names are not followed here)."""
    return _branch(*_span(node.body), node.test, imports, {}, True)


def version_guards(tree: ast.Module, imports: Imports) -> list[VersionGuard]:
    """Every if/elif branch of the file whose test is a Triton version comparison."""
    return [g for g in branch_guards(tree, imports) if isinstance(g, VersionGuard)]


def _sentinels(tree: ast.Module, imports: Imports) -> dict[str, str]:
    """``{local name: Triton qualname}`` for names a ``try`` imports whose handler binds the
    same name to ``None`` (``try: from triton.runtime.cache import default_cache_dir`` /
    ``except ImportError: default_cache_dir = None``): the name is None exactly where the
    release lacks the qualname, so ``if default_cache_dir is None:`` is a feature test."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Try) and node.handlers):
            continue
        imported = {
            (a.asname or a.name): f"{stmt.module}.{a.name}"
            for stmt in node.body
            if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0
            and stmt.module.split(".")[0] == "triton"
            for a in stmt.names
        }  # fmt: skip
        for handler in node.handlers:
            for stmt in handler.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and isinstance(stmt.value, ast.Constant)
                    and stmt.value.value is None
                ):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name) and t.id in imported:
                            out[t.id] = imported[t.id]
    return out


def _sentinel_test(test: ast.expr, sentinels: Mapping[str, str]) -> tuple[str, bool] | None:
    """``(qualname, when)``: ``test`` holds exactly where ``qualname`` exists when ``when``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _sentinel_test(test.operand, sentinels)
        return None if inner is None else (inner[0], not inner[1])
    if isinstance(test, ast.Name) and test.id in sentinels:
        return sentinels[test.id], True
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.left, ast.Name)
        and test.left.id in sentinels
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return sentinels[test.left.id], isinstance(test.ops[0], ast.IsNot)
    return None


def branch_guards(tree: ast.Module, imports: Imports) -> list[Guard]:
    """Every branch of the file that runs only on some releases: if/elif/else on a version or
    feature test (each decidable conjunct of an ``and`` guards the body; a name a guarded try
    imports or sets to None is one), try bodies with a fallback handler, and those handlers."""
    names = _module_names(tree)
    sentinels = _sentinels(tree, imports)

    def branch(first: int, last: int, test: ast.expr, when: bool) -> Guard | None:
        got = _sentinel_test(test, sentinels)
        if got is not None:
            return FeatureGuard(first, last, got[0], None, got[1] == when)
        return _branch(first, last, test, imports, names, when)

    out: list[Guard] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            body = _span(node.body)
            tests = _conjuncts(node.test)
            for test in tests:
                g = branch(*body, test, True)
                if g is not None:
                    out.append(g)
            if node.orelse and len(tests) == 1:  # not (a and b) says nothing of a alone
                g = branch(*_span(node.orelse), tests[0], False)
                if g is not None:
                    out.append(g)
        elif isinstance(node, ast.Try) and node.handlers:
            out.extend(_try_guards(node, imports))
    return out


def _caught(handler: ast.ExceptHandler) -> tuple[str, ...]:
    kind = handler.type
    if kind is None:
        return ("",)
    items = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return tuple(_last_name(e) for e in items)


def _reraises(handler: ast.ExceptHandler) -> bool:
    """A handler whose last statement raises is no fallback: the failure goes on."""
    return isinstance(handler.body[-1], ast.Raise)


def _try_guards(node: ast.Try, imports: Imports) -> list[Guard]:
    out: list[Guard] = []
    first, last = _span(node.body)
    used = sorted(
        {
            q
            for stmt in node.body
            for n in ast.walk(stmt)
            if isinstance(n, (ast.Attribute, ast.Name))
            for q in [_triton_name(n, imports)]
            if q is not None and q != "triton"
        }
        | set(_imported_names(node.body, imports))
    )
    for handler in node.handlers:
        out.append(TryGuard(first, last, _caught(handler), handler.lineno, not _reraises(handler)))
        h_first = handler.body[0].lineno
        h_last = max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in handler.body)
        out.append(HandlerGuard(h_first, h_last, first, tuple(used)))
    return out


def _imported_names(body: list[ast.stmt], imports: Imports) -> Iterator[str]:
    """What the ``try`` body imports from Triton (``from triton.tools.x import Y``)."""
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                if n.module.split(".")[0] == "triton":
                    yield from (f"{n.module}.{a.name}" for a in n.names if a.name != "*")
            elif isinstance(n, ast.Import):
                yield from (a.name for a in n.names if a.name.split(".")[0] == "triton")


def try_imports(tree: ast.Module, imports: Imports) -> dict[str, TryGuard]:
    """``{Triton name: the try}`` for names a ``try`` body imports where a handler falls back
    (``try: from triton.ops.matmul import matmul / except ImportError: matmul = None``): a
    use of the name elsewhere is the imported object where the import worked, the fallback
    where it did not, so it is guarded by that try as much as the import is."""
    out: dict[str, TryGuard] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Try) and node.handlers):
            continue
        guards = [g for g in _try_guards(node, imports) if isinstance(g, TryGuard) and g.fallback]
        if guards:
            for name in _imported_names(node.body, imports):
                out.setdefault(name, guards[0])
    return out


def guard_effect(
    guards: Iterable[Any], raised: Iterable[str], release: Release, censuses: Any
) -> tuple[bool, str] | None:
    """``(False, why)`` when the guards keep the line from running on ``release``, ``(True,
    why)`` when a try/except with a fallback catches what it would raise there; None when
    nothing rules it out. ``raised``: the exceptions the finding's failure raises."""
    raised = tuple(raised)
    for g in guards:
        if isinstance(g, TryGuard):
            if raised and g.fallback and g.catches_any(raised):
                return True, f"inside {g.text()}: where it fails, the fallback runs"
            continue
        if g.decide(release, censuses) is False:
            return False, f"in a branch for {g.text()} only: not run on {release}"
    return None
