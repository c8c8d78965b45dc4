"""Scanning: files to read, one module's findings, a tree's findings with carriers and noqa."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from matrix.analyze.census import (
    works_on,
)
from matrix.newer_syntax import parse_python
from matrix.scan.census_checks import Censuses, api_uses, census_findings, name_index
from matrix.scan.findings import ApiUse, Finding, ScanReport
from matrix.scan.guards import Guard, branch_guards, branch_test, try_imports
from matrix.scan.imports import Imports, Module, Project, SourceModule, module_name
from matrix.scan.kinds import KINDS
from matrix.scan.kinds import MATCHERS as MATCHERS  # the registry's view, by its old name
from matrix.scan.matchers import _finding, _matches_prefix
from matrix.scan.pycalls import case_of
from matrix.scan.rule_file import load_rules
from matrix.scan.rules import DEFAULT_EXCLUDE, TL, Rule, _positional_count
from matrix.scan.sources import (
    MAX_AST_DEPTH,
    MAX_PARSED_BYTES,
    import_words,
    iter_python_files,
    may_reach_triton,
    read_source,
)

# ---------------------------------------------------------------------------------------- scan


def _jit_functions(
    nodes: Iterable[ast.AST], imports: Imports
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        n
        for n in nodes
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(imports.is_jit(d) for d in n.decorator_list)
    ]


# Words without which a file has no guard branch_guards could read (a cheap test first).
_MAY_GUARD = re.compile(r"version|hasattr|getattr|signature|\btry:")

NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+\d+(?:[\s,]+[A-Z]+\d+)*)", re.IGNORECASE)


def noqa_codes(source: str) -> dict[int, set[str]]:
    """``{line: {"TRI001", ...}}`` from ``# noqa: TRI001, TRI004`` comments (a bare ``# noqa``,
    which libraries write for flake8, suppresses nothing here)."""
    out: dict[int, set[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                m = NOQA.search(tok.string)
                if m:
                    codes = {c.upper() for c in re.split(r"[\s,]+", m.group(1)) if c}
                    out.setdefault(tok.start[0], set()).update(codes)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the file parsed with ast; a tokenizer quirk only loses its noqa comments
    return out


def parse_module(path: Path, source: str) -> SourceModule:
    """Raises SyntaxError if the file does not parse, ValueError for NUL bytes or past a limit
    (``MAX_PARSED_BYTES``, ``MAX_AST_DEPTH``: the scan of one file stays bounded)."""
    name, is_package = module_name(path)
    if len(source) > MAX_PARSED_BYTES:
        raise ValueError(
            f"{len(source) // 1024} KiB of source, more than the {MAX_PARSED_BYTES // 1024} KiB "
            "the scanner parses in one file"
        )
    try:
        tree = parse_python(source, filename=str(path))
    except RecursionError:
        raise ValueError("nested too deeply for Python's own parser") from None
    if nested_deeper(tree, MAX_AST_DEPTH):
        raise ValueError(f"nested more than {MAX_AST_DEPTH} levels deep, the scanner's limit")
    return SourceModule(str(path), name, is_package, source, tree)


def nested_deeper(tree: ast.AST, limit: int) -> bool:
    """Whether ``tree`` is more than ``limit`` levels deep; level by level, never recursing
    (the scanner's recursive walks would overflow on such a tree)."""
    level, depth = [tree], 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[ast.AST] = []
        for node in level:
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, ast.AST):
                    below.append(value)
                elif isinstance(value, list):
                    below += [v for v in value if isinstance(v, ast.AST)]
        level = below
    return False


def derive_carriers(project: Project, rules: Sequence[Rule]) -> dict[str, dict[str, str]]:
    """For each name rule, the scanned tree's module-level classes that subclass a matched name,
    and module-level functions whose body uses such a class: ``{rule: {qualname: via}}``."""
    out: dict[str, dict[str, str]] = {}
    name_rules = [r for r in rules if r.kind == "name"]
    if not name_rules:
        return out
    for m in project.modules.values():
        imports = project.imports(m)
        for stmt in m.tree.body:
            if not isinstance(stmt, ast.ClassDef):
                continue
            for base in stmt.bases:
                q = imports.qualname(base) or ""
                for rule in name_rules:
                    if _matches_prefix(q, rule.names):
                        out.setdefault(rule.id, {})[f"{m.name}.{stmt.name}"] = q
    short = {q.rsplit(".", 1)[-1] for carriers in out.values() for q in carriers}
    for m in project.modules.values():
        if not any(name in m.source for name in short):
            continue  # cannot use a carrier without spelling its name
        imports = project.imports(m)
        for stmt in m.tree.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for carriers in list(out.values()):
                for node in ast.walk(stmt):
                    if isinstance(node, (ast.Name, ast.Attribute)):
                        q = imports.qualname(node) or ""
                        if q in carriers and not q.startswith(f"{m.name}.{stmt.name}"):
                            carriers.setdefault(f"{m.name}.{stmt.name}", f"{q} ({carriers[q]})")
                            break
    return out


def scan_module(
    m: SourceModule,
    project: Project,
    rules: Sequence[Rule],
    carriers: dict[str, dict[str, str]] | None = None,
    censuses: Censuses | None = None,
    memo: dict[tuple[Any, ...], Any] | None = None,
) -> tuple[list[Finding], list[ApiUse], set[str] | None, int]:
    """(findings, API uses, releases every use works on or None without a census,
    noqa-suppressed)."""
    imports = project.imports(m)
    kernels = _jit_functions(m.nodes, imports)
    module = Module(m.tree, imports, kernels, carriers or {}, m.nodes, source=m)
    module.censuses = censuses  # type: ignore[attr-defined]  # what a triton.* name is (pycalls)
    module.lines = m.source.splitlines()  # type: ignore[attr-defined]
    found: dict[tuple[int, int, str], Finding] = {}
    for rule in rules:
        for node, snippet in KINDS[rule.kind].matcher(rule, module):
            qualname = _matched_name(module, imports, node)
            call = None
            if rule.census_decides and isinstance(node, ast.Call):
                # a call rule the census decides: its signature per release, as called (a
                # matcher may have named the member called: super().run -> Autotuner.run)
                qualname = module.qualnames.get(id(node)) or imports.qualname(node.func) or ""
                count = _positional_count(node)
                given = tuple(k.arg for k in node.keywords if k.arg)
                call = (given, -1 if count is None else count)  # -1: *args, count unknown
                if rule.kind == "runtime-member" and count is None:
                    # super().run(*args, config=c, **kw) forwards what it gets: whether the
                    # member exists and takes the keywords named is the release's to decide
                    call = (given, 0) if given else None
                    if censuses and len(works_on(censuses, qualname, given).ok) == len(censuses):
                        continue
                elif (
                    rule.kind == "runtime-member"
                    and censuses
                    and count is not None
                    and len(works_on(censuses, qualname, given, count).ok) == len(censuses)
                ):
                    continue  # accepted as called on every release: nothing moved
            elif rule.census_decides and censuses and _same_everywhere(censuses, qualname):
                continue
            f = _finding(m.path, node, rule, snippet, module)
            f.qualname, f.call = qualname, call
            f.detail = module.details.get(id(node), f.detail)
            if rule.cases:
                f.cell = case_of(rule, snippet)
                rebound = getattr(module, "rebound_calls", {}).get(id(node))
                if rebound is not None:
                    # NAME = triton.constexpr_function(NAME) in one if-branch: where that
                    # branch does not run, the call is what NAME was before
                    test, other = rebound
                    f.alternative = (branch_test(test, imports), case_of(rule, f" [{other}]"))
            f.anchor = id(node.func) if isinstance(node, ast.Call) else id(node)
            found.setdefault((f.line, f.col, rule.id), f)
    works: set[str] | None = None
    # Every Triton name the file uses, census or not: the gate checks them (matrix.gate.api).
    uses: list[ApiUse] = api_uses(module, m.path)
    if censuses:
        extra, uses, works = census_findings(module, m.path, rules, censuses, memo, uses)
        for f in extra:
            found.setdefault((f.line, f.col, f.rule.id + f.detail), f)
    kept = _one_per_hazard(found.values())
    # Branches for some releases only (if Version(triton.__version__) >= ..., hasattr, a
    # signature test, try/except with a fallback): the judge decides per candidate whether
    # the finding's line runs at all, or falls back; the gate, whether a name use does.
    guards = branch_guards(m.tree, imports) if _MAY_GUARD.search(m.source) else []
    tried = try_imports(m.tree, imports) if guards else {}
    if guards:
        uses = [_guarded(u, guards, tried) for u in uses]
    if not kept:
        return [], uses, works, 0
    # Tokenizing is the slow part of reading comments: only files with findings pay for it.
    noqa = noqa_codes(m.source) if "noqa" in m.source else {}
    out, suppressed = [], 0
    first: dict[tuple[str, str, str, tuple[Guard, ...]], Finding] = {}
    for f in kept:
        f.guards = tuple(g for g in guards if g.first <= f.line <= g.last)
        # a use of a name a guarded try imports, or of an attribute of it
        # (``AttrsDescriptor.from_hints`` after ``try: from ... import AttrsDescriptor``)
        got = _tried_guard(tried, f.qualname)
        if got is not None and got not in f.guards:
            f.guards += (got,)
        codes = noqa.get(f.line, set()) | noqa.get(f.end_line, set())
        if f.rule.id in codes:
            suppressed += 1
            continue
        if f.rule.census:
            # One census finding per name and problem in a file, with its other lines: a
            # thousand tl.load calls relying on one changed default are one thing to fix.
            key = (f.rule.id, f.snippet, f.detail, f.guards)
            if key in first:
                first[key].also.append(f.line)
                first[key].also_sources.append(f.source_line)
                continue
            first[key] = f
        out.append(f)
    kept = out
    return sorted(kept, key=lambda f: (f.line, f.col, f.rule.id)), uses, works, suppressed


def _guarded(use: ApiUse, guards: Sequence[Guard], tried: Mapping[str, Guard]) -> ApiUse:
    """``use`` with the guards around its line (and the try that imports its name)."""
    around = tuple(g for g in guards if g.first <= use.line <= g.last)
    got = _tried_guard(dict(tried), use.qualname)
    if got is not None and got not in around:
        around += (got,)
    return replace(use, guards=around) if around else use


def _one_per_hazard(found: Iterable[Finding]) -> list[Finding]:
    """One finding per use and hazard, sorted: where a hand-written rule (tied to its own
    data) and a census rule flag the same expression, the rule that fails keeps it (a
    ``boundary_check=`` is TRI002, not also TRI101; an advisory rule yields to the census)."""
    ordered = sorted(found, key=lambda f: (f.line, f.col, f.rule.id))
    by_anchor: dict[int, list[Finding]] = {}
    for f in ordered:
        if f.anchor:
            by_anchor.setdefault(f.anchor, []).append(f)
    drop: set[int] = set()
    for group in by_anchor.values():
        # a default the call leaves out is a hazard of its own (TRI103 beside TRI005)
        census = [f for f in group if f.rule.census and f.rule.kind != "census-default"]
        hand = [f for f in group if not f.rule.census]
        if not census or not hand:
            continue
        if any(f.rule.severity != "advisory" for f in hand):
            drop.update(id(f) for f in census)
        else:
            drop.update(id(f) for f in hand)
    return [f for f in ordered if id(f) not in drop]


def _same_everywhere(censuses: Censuses, qualname: str | None) -> bool:
    """Whether the census shows ``qualname`` present on every recorded release."""
    if qualname is None:
        return False
    return len(works_on(censuses, qualname).ok) == len(censuses)


def _matched_name(module: Module, imports: Imports, node: ast.AST) -> str:
    """The dotted name a matched node stands for: the matcher's, else the function a call
    calls (``triton.language.make_tensor_descriptor``: the census decides it per release)."""
    qualname = module.qualnames.get(id(node), "")
    if not qualname and isinstance(node, ast.Call):
        qualname = imports.qualname(node.func) or ""
    return str(qualname)


def scan_source(source: str, path: str, rules: Sequence[Rule]) -> list[Finding]:
    """Findings in one file's source, on its own. Raises SyntaxError if it does not parse."""
    m = SourceModule(path, Path(path).stem, False, source, parse_python(source, path))
    project = Project([m])
    return scan_module(m, project, rules, derive_carriers(project, rules))[0]


def _reaches(target: str, carriers: dict[str, set[str]]) -> bool:
    """Whether a module-level binding's target is a Triton object: ``triton``/``triton.*``, or
    a name that another module of the tree binds to one (``mypkg.triton_utils.tl``)."""
    if target == "triton" or target.startswith("triton."):
        return True
    parent, _, last = target.rpartition(".")
    return last in carriers.get(parent, ())


def _note_carrier(m: SourceModule, carriers: dict[str, set[str]]) -> None:
    """Remember the names ``m`` binds at module level to a Triton object (``tl``, ``triton``,
    or such a name of another module of the tree): others can reach Triton through them."""
    names = {local for local, t in m.bindings.items() if _reaches(t, carriers)}
    # A class that subclasses a Triton object (class LibTuner(triton.runtime.Autotuner)) and
    # a module-level function that spells such a class may carry a name rule's hazard to
    # their users (derive_carriers follows them). Only those: a plain function of a kernel
    # module (fast_dequantize) is no Triton object, and counting every one pulled most of a
    # large tree into the parser (unsloth: 392 files parsed for 71 that spell "triton").
    classes = {
        n.name
        for n in m.tree.body
        if isinstance(n, ast.ClassDef) and any(_base_reaches(b, m, carriers) for b in n.bases)
    }
    if classes:
        names |= classes
        names |= {
            n.name
            for n in m.tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(isinstance(x, ast.Name) and x.id in classes for x in ast.walk(n))
        }
    for star in m.stars:
        if star.split(".")[0] == "triton":
            names.add("*")  # every name of a Triton module
        else:
            names |= carriers.get(star, set())  # a star re-export passes on what it binds
    if names:
        carriers[m.name] = names


def _base_reaches(base: ast.expr, m: SourceModule, carriers: dict[str, set[str]]) -> bool:
    """Whether a class base (``triton.runtime.Autotuner``, ``Autotuner``, ``tu.Autotuner``)
    starts at a name bound to a Triton object or to a module of the tree that binds one."""
    node = base
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name):
        return False
    target = m.bindings.get(node.id)
    if target is None:
        return False
    return _reaches(target, carriers) or (target in carriers and isinstance(base, ast.Attribute))


def _tails(carriers: dict[str, set[str]]) -> dict[bytes, set[bytes]]:
    """``{last part of a carrier's name: {the Triton names it binds}}`` (``triton`` left out:
    a file that spelled it was parsed already)."""
    out: dict[bytes, set[bytes]] = {}
    for name, bound in carriers.items():
        names = {b.encode() for b in bound if b != "triton"}
        if names:
            out.setdefault(name.rsplit(".", 1)[-1].encode(), set()).update(names)
    return out


def _read(file: Path, report: ScanReport) -> tuple[bytes, str] | None:
    try:
        return read_source(file)
    except UnicodeDecodeError as e:
        report.skipped.append(
            f"{file}: not decodable as {e.encoding} ({e.reason} at byte {e.start}); skipped"
        )
    except OSError as e:
        report.skipped.append(f"{file}: cannot read ({e.strerror or e}); skipped")
    except (SyntaxError, ValueError) as e:  # a bad coding line; a broken notebook
        report.skipped.append(f"{file}: {e}; skipped")
    return None


def _parse(file: Path, source: str, report: ScanReport, parsed: list[SourceModule]) -> bool:
    try:
        parsed.append(parse_module(file, source))
        return True
    except SyntaxError as e:
        py = f"{sys.version_info.major}.{sys.version_info.minor}"
        report.skipped.append(
            f"{file}:{e.lineno}:{e.offset}: not valid Python {py} ({e.msg}: newer syntax or "
            "broken); skipped"
        )
    except ValueError as e:  # source with NUL bytes, past a limit
        report.skipped.append(f"{file}: not parsed ({e}); skipped")
    return False


def scan_paths(
    paths: Iterable[str | Path],
    rules: Sequence[Rule] | None = None,
    *,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    censuses: Censuses | None = None,
) -> ScanReport:
    """Scan files and folders as one tree (imports between them are followed). Files that
    cannot be decoded or parsed are listed in ``skipped`` with the reason, and skipped."""
    rules = load_rules() if rules is None else rules
    report = ScanReport(releases=list(censuses or ()))
    parsed: list[SourceModule] = []
    pending: list[tuple[Path, bytes, str]] = []  # read, but with no way to reach Triton yet
    carriers: dict[str, set[str]] = {}  # modules of the tree binding Triton names: {module: names}
    for file in iter_python_files(paths, exclude, report.left_out):
        report.files.append(str(file))
        read = _read(file, report)
        if read is None:
            continue
        # (Triton's own tree reaches itself relatively: `from .. import language as tl`)
        if b"triton" in read[0] or "triton" in file.parts:
            if _parse(file, read[1], report, parsed):
                _note_carrier(parsed[-1], carriers)
        else:
            pending.append((file, *read))
    # A file that spells no "triton" may still import a module of the tree that re-exports a
    # Triton name (`from mypkg.triton_utils import tl`), down a chain of re-exports: parse
    # those too, until none is left.
    words = {id(x): import_words(x[1]) for x in pending}  # once a file, not once a round
    while pending:
        tails = _tails(carriers)
        reach = [x for x in pending if may_reach_triton(x[1], tails, words[id(x)])]
        if not reach:
            break
        chosen = {id(x) for x in reach}
        pending = [x for x in pending if id(x) not in chosen]
        for file, _, source in reach:
            if _parse(file, source, report, parsed):
                _note_carrier(parsed[-1], carriers)
    tl_names = {c for r in rules for c in r.calls}
    if censuses:
        tl_names |= name_index(censuses).children.get(TL, set())
    project = Project(parsed, tl_names)
    # Modules of the tree that cannot reach Triton: whatever a kernel calls from one of them
    # is plain Python (a file that never spells triton defines no @triton.jit function).
    project.plain_modules = {module_name(file)[0] for file, _, _ in pending}  # type: ignore[attr-defined]
    derived = derive_carriers(project, rules)
    memo: dict[tuple[Any, ...], Any] = {}
    for m in parsed:
        findings, uses, works, suppressed = scan_module(m, project, rules, derived, censuses, memo)
        report.findings.extend(findings)
        report.uses.extend(uses)
        report.uses.extend(_derived_uses(findings, uses))
        report.suppressed += suppressed
        if works is not None:
            ordered = [r for r in report.releases if r in works]
            report.works_on[m.path] = (ordered[0], ordered[-1]) if ordered else None
    return report


def _tried_guard(tried: dict[str, Any], qualname: str | None) -> Any:
    """The try that imports ``qualname`` or the name it is an attribute of (None: none)."""
    parts = (qualname or "").split(".")
    for cut in range(len(parts), 1, -1):
        got = tried.get(".".join(parts[:cut]))
        if got is not None:
            return got
    return None


# Match kinds whose findings name a runtime member or a moved path that no import spells
# (``kernel.cache`` through a helper's parameter, ``binary.__class__.launch_enter_hook``).
_DERIVED_KINDS = frozenset({"runtime-member", "runtime-home"})


def _derived_uses(findings: Iterable[Finding], uses: Sequence[ApiUse]) -> list[ApiUse]:
    """The uses the gate's census check (matrix.gate.api) must see beside ``api_uses``: the
    member or path a runtime matcher resolved, at its line, as called. Without them the gate
    said SAFE where the scanner said "breaks". A finding under a guard carries its guards to
    the use, which the gate's census check judges per release."""
    have = {(u.path, u.line, u.qualname) for u in uses}
    out = []
    for f in findings:
        if f.rule.kind not in _DERIVED_KINDS or not f.qualname:
            continue
        if (f.path, f.line, f.qualname) in have:
            continue
        given, count = f.call if f.call is not None else ((), 0)
        use = ApiUse(f.qualname, f.path, f.line, tuple(given), max(count, 0),
                     count >= 0, False, f.call is not None, guards=f.guards)  # fmt: skip
        have.add((f.path, f.line, f.qualname))
        out.append(use)
    return out
