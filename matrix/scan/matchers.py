"""Matchers for calls, names, keywords and module globals: (node, snippet) per match."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from matrix.scan.findings import Finding
from matrix.scan.imports import Module, absolute_module, getattr_literal
from matrix.scan.rules import Rule, _positional_count


def _call_filters(rule: Rule, node: ast.Call) -> bool:
    if rule.any_present and not any(s.given(node) for s in rule.any_present):
        return False
    if rule.all_present and not all(s.given(node) for s in rule.all_present):
        return False
    if rule.absent and any(s.maybe_given(node) for s in rule.absent):
        return False
    if rule.max_positional is not None:
        count = _positional_count(node)
        if count is None or count <= rule.max_positional:
            return False
    return True


def match_call(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Calls to ``triton.language.<calls>``, and inside kernels method calls ``x.<methods>()``
    on a value (not a module: ``desc.advance(...)``), whose arguments fit the rule's filters."""
    for node, name in _calls(module):
        in_kernel = module.in_kernel(node)
        if rule.scope == "jit" and not in_kernel:
            continue
        hit = name is not None and name in rule.calls
        if not hit and rule.methods and in_kernel and isinstance(node.func, ast.Attribute):
            hit = node.func.attr in rule.methods and module.imports.qualname(node.func) is None
        if hit and _call_filters(rule, node):
            yield node, f"{ast.unparse(node.func)}(...)"


def _calls(module: Module) -> list[tuple[ast.Call, str | None]]:
    """Every call of the file with its triton.language name (None for others), once a file."""
    cached = getattr(module, "_calls", None)
    if cached is None:
        cached = [
            (n, module.imports.tl_name(n.func)) for n in module.nodes if isinstance(n, ast.Call)
        ]
        module._calls = cached  # type: ignore[attr-defined]
    return cached


def _matches_prefix(qualname: str, prefixes: Sequence[str]) -> str | None:
    for p in prefixes:
        if p.endswith("."):
            if qualname.startswith(p) and len(qualname) > len(p):
                return p
        elif qualname == p or qualname.startswith(p + "."):
            return p
    return None


def _outer_references(module: Module) -> list[tuple[ast.expr, str]]:
    """Every maximal ``a.b.c`` chain or bare name with the dotted name it resolves to."""
    cached = getattr(module, "_references", None)
    if cached is None:
        cached = module._references = list(_find_references(module))  # type: ignore[attr-defined]
    return cached


def _find_references(module: Module) -> Iterator[tuple[ast.expr, str]]:
    inner: set[int] = set()
    literal_getattrs: set[int] = set()
    for node in module.nodes:
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
        elif isinstance(node, ast.Call) and getattr_literal(node) is not None:
            literal_getattrs.add(id(node))
            inner.add(id(node.args[0]))  # getattr(tl, "x") is one reference, tl.x
    for node in module.nodes:
        if id(node) in inner:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            continue  # `triton_tanh = ...` binds a name; it uses nothing
        # (a literal getattr is a call: an expression too)
        if isinstance(node, ast.expr) and (
            isinstance(node, (ast.Attribute, ast.Name)) or id(node) in literal_getattrs
        ):
            # the longest prefix of the chain that resolves (``driver.active.utils`` stops at
            # whatever the imports know)
            q = module.imports.qualname(node)
            if q is not None:
                yield node, q


def match_name(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Imports of, and references to, names under the rule's prefixes (``triton.runtime.driver``,
    ``triton.ops``...), and uses of the scanned tree's own names that carry them (a subclass of
    a matched class, a module-level function that uses one). A name bound by a matching import
    is reported at the import, not again at every use."""
    carriers = module.carriers.get(rule.id, {})
    refs = _outer_references(module)
    distinct = getattr(module, "_distinct_refs", None)
    if distinct is None:
        distinct = module._distinct_refs = {q for _, q in refs}  # type: ignore[attr-defined]
    if (
        not carriers
        and not any(_matches_prefix(q, rule.names) for q in distinct)
        and not any(_imports_matching(module, rule))
    ):
        return  # nothing in the file reaches the rule's names
    imported_here: set[str] = set()
    for node in _import_nodes(module):
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            if alias.name == "*":
                continue
            # this statement's own target (two imports of one name in an if/else or a
            # try/except each name what they import)
            full = module.imports.project.resolve(_import_target(module, node, alias))
            if _matches_prefix(full, rule.names):
                imported_here.add(local)
                module.qualnames[id(node)] = full
                yield node, full
            elif full in carriers:
                imported_here.add(local)
                yield node, f"{full} (it uses {carriers[full]})"
    for ref, q in refs:
        root = ref
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in imported_here:
            continue
        if rule.scope == "jit" and not module.in_kernel(ref):
            continue
        if _matches_prefix(q, rule.names):
            module.qualnames[id(ref)] = q
            yield ref, ast.unparse(ref)
        else:
            for carrier, via in carriers.items():
                if q == carrier or q.startswith(carrier + "."):
                    yield ref, f"{ast.unparse(ref)} (it uses {via})"
                    break


def _import_nodes(module: Module) -> list[ast.Import | ast.ImportFrom]:
    cached = getattr(module, "_import_nodes", None)
    if cached is None:
        cached = [n for n in module.nodes if isinstance(n, (ast.Import, ast.ImportFrom))]
        module._import_nodes = cached  # type: ignore[attr-defined]
    return cached


def _imports_matching(module: Module, rule: Rule) -> Iterator[str]:
    for node in _import_nodes(module):
        for alias in node.names:
            if alias.name != "*":
                full = module.imports.project.resolve(_import_target(module, node, alias))
                if _matches_prefix(full, rule.names):
                    yield full


def _import_target(module: Module, node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
    if isinstance(node, ast.Import):
        return alias.name
    source = module.source
    if source is None:
        return module.imports.names.get(alias.asname or alias.name, alias.name)
    base = absolute_module(source.name, source.is_package, node.level, node.module)
    return f"{base}.{alias.name}"


def match_keyword(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Any call in a file that uses Triton passing one of ``keywords`` (launches,
    ``triton.Config``, ``tl.range``...), optionally only with the literal ``value``."""
    if not module.imports.imports_triton:
        return
    for node in module.nodes:
        if not isinstance(node, ast.Call):
            continue
        if rule.scope == "jit" and not module.in_kernel(node):
            continue
        for kw in node.keywords:
            if kw.arg not in rule.keywords:
                continue
            if rule.value is not None:
                if not (isinstance(kw.value, ast.Constant) and kw.value.value == rule.value):
                    continue
                if isinstance(kw.value.value, bool) != isinstance(rule.value, bool):
                    continue
            if isinstance(kw.value, ast.Constant) and any(
                kw.value.value == v and type(kw.value.value) is type(v) for v in rule.not_values
            ):
                continue  # the value the fix recommends (num_ctas=1)
            yield kw.value, f"{ast.unparse(node.func)}(..., {kw.arg}={ast.unparse(kw.value)})"


def _constexpr_annotation(module: Module, ann: ast.expr) -> bool:
    q = module.imports.qualname(ann)
    return q is not None and q.rsplit(".", 1)[-1] == "constexpr" and q.startswith("triton.")


def match_annotated_constexpr_global(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Module-level ``X: tl.constexpr = v``: an annotation, not a constexpr value (unless
    ``v`` itself is ``tl.constexpr(...)``, which is what the rule asks for)."""
    for stmt in module.tree.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        value = stmt.value
        if value is None or not _constexpr_annotation(module, stmt.annotation):
            continue
        if isinstance(value, ast.Call) and _constexpr_annotation(module, value.func):
            continue
        yield stmt, f"{stmt.target.id}: {ast.unparse(stmt.annotation)} = {ast.unparse(value)}"


def _literal(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return not isinstance(expr.value, type(Ellipsis)) and expr.value is not None
    if isinstance(expr, (ast.Tuple, ast.List)):
        return all(_literal(e) for e in expr.elts)
    if isinstance(expr, ast.UnaryOp):
        return _literal(expr.operand)
    if isinstance(expr, ast.BinOp):
        return _literal(expr.left) and _literal(expr.right)
    return False


def _local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = fn.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def match_global_read(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """A kernel body reading a module-level name bound to a plain literal (``BLOCK = 128``):
    not a ``tl.constexpr(...)``, a dtype, a module or a function. Argument defaults may read
    globals, so they are not looked at."""
    plain: dict[str, int] = {}
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Assign) and _literal(stmt.value):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    plain[t.id] = stmt.lineno
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.ClassDef)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else []
            if isinstance(stmt, ast.AnnAssign):
                targets = [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    plain.pop(t.id, None)
    if not plain:
        return
    for fn in module.kernels:
        local = _local_names(fn)
        for stmt in fn.body:
            for node in ast.walk(stmt):
                if (
                    isinstance(node, ast.Name)
                    and isinstance(node.ctx, ast.Load)
                    and node.id in plain
                    and node.id not in local
                ):
                    yield node, f"{node.id} (a plain global, line {plain[node.id]})"


def _finding(path: str, node: ast.AST, rule: Rule, snippet: str, module: Module) -> Finding:
    line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", -1) + 1
    lines = getattr(module, "lines", [])
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return Finding(
        path,
        line,
        col,
        rule,
        snippet,
        end_line=getattr(node, "end_lineno", line) or line,
        source_line=text,
    )
