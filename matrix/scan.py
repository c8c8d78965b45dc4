"""Find Triton upgrade hazards in a team's kernel sources, by reading them with ``ast``.

Why ``ast`` and not regular expressions: a hazard depends on how a name was imported
(``import triton.language as tl``, ``from triton import language as lang``,
``from triton.language import dot``), on which arguments a call passes (by keyword or by
position), and on where an integer index came from; text patterns get all three wrong.

The rules are data (``matrix/data/scan_rules.toml``); this module only knows how to match the
few kinds of pattern they use (``MATCHERS``). With ``--results`` each finding also says which
recorded releases its probe marks as affected, computed from the results, never hard-coded::

    python -m matrix.scan kernels/ my_kernels.py --results reports/raw --candidate 3.9.0

Output, one finding a line (columns are 1-based, like ruff and flake8)::

    path/to/file.py:12:15: TRI001 tl.make_block_ptr(...) uses the block-pointer API; fix: ...

Exit status: 0 no findings, 1 findings, 2 bad arguments or a file that cannot be read or parsed.
This module must not import triton, torch or numpy: it runs in the gate's CI job without them.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.core import DATA_DIR, Column, DataFileError, Release, ReleaseError, load_toml
from matrix.measure.results import Run, SchemaError, read_runs

RULES_PATH = DATA_DIR / "scan_rules.toml"

TL = "triton.language"
# Modules whose attributes are the same triton.language builtins.
TL_MODULES = (TL, "triton.language.core")
SCOPES = ("anywhere", "jit")


class RuleError(DataFileError):
    """The rules file is malformed; the message names the file, the rule and the field."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)


@dataclass(frozen=True)
class ArgSpec:
    """An argument of a call: given by ``keyword`` or at 0-based ``position``."""

    keyword: str
    position: int | None = None

    def given(self, call: ast.Call) -> bool:
        if any(k.arg == self.keyword for k in call.keywords):
            return True
        positional = _positional_count(call)
        return self.position is not None and positional is not None and positional > self.position

    def maybe_given(self, call: ast.Call) -> bool:
        """True if the argument is, or may be, given (a ``*args``/``**kwargs`` may hold it)."""
        if self.given(call):
            return True
        if any(k.arg is None for k in call.keywords):
            return True
        return self.position is not None and _positional_count(call) is None


@dataclass(frozen=True)
class Rule:
    """One hazard: what it matches, the probe that tells which releases it concerns, the fix."""

    id: str
    name: str
    message: str
    fix: str
    scope: str
    kind: str
    calls: tuple[str, ...] = ()
    any_present: tuple[ArgSpec, ...] = ()
    all_present: tuple[ArgSpec, ...] = ()
    absent: tuple[ArgSpec, ...] = ()
    max_positional: int | None = None
    probe: str | None = None
    concerns: tuple[str, ...] = ()
    breaking: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True)
class Finding:
    """One use of a hazard in one file."""

    path: str
    line: int
    col: int  # 1-based
    rule: Rule
    snippet: str

    @property
    def message(self) -> str:
        return self.rule.message.replace("{call}", self.snippet)

    def text(self, note: str = "") -> str:
        where = f"{self.path}:{self.line}:{self.col}"
        extra = f" [{note}]" if note else ""
        return f"{where}: {self.rule.id} {self.message}{extra}; fix: {self.rule.fix}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "rule": self.rule.id,
            "name": self.rule.name,
            "message": self.message,
            "fix": self.rule.fix,
            "probe": self.rule.probe,
        }


@dataclass
class ScanReport:
    """Findings over a set of paths, plus the files that could not be read or parsed."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------- rules


def _argspecs(raw: Any, where: str) -> tuple[ArgSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RuleError(f"{where}: expected a list of {{keyword=..., position=...}}, got {raw!r}")
    specs = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("keyword"), str):
            raise RuleError(f'{where}[{i}]: expected {{keyword = "name"}}, got {item!r}')
        pos = item.get("position")
        if pos is not None and (not isinstance(pos, int) or pos < 0):
            raise RuleError(f"{where}[{i}].position: expected an integer >= 0, got {pos!r}")
        unknown = set(item) - {"keyword", "position"}
        if unknown:
            raise RuleError(f"{where}[{i}]: unknown keys {sorted(unknown)}")
        specs.append(ArgSpec(item["keyword"], pos))
    return tuple(specs)


def _strings(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise RuleError(f"{where}: expected a list of strings, got {raw!r}")
    return tuple(raw)


def load_rules(path: str | Path = RULES_PATH) -> list[Rule]:
    """Read and validate the rules file; raises RuleError naming the rule and field at fault."""
    doc = load_toml(path)
    raw_rules = doc.get("rule")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise RuleError(f"{path}: expected at least one [[rule]] table")
    rules: list[Rule] = []
    for i, raw in enumerate(raw_rules):
        where = f"{path}: rule[{i}] ({raw.get('id', '?')})"
        for key in ("id", "name", "message", "fix", "scope"):
            if not isinstance(raw.get(key), str) or not raw[key]:
                raise RuleError(f"{where}.{key}: expected a non-empty string, got {raw.get(key)!r}")
        if raw["scope"] not in SCOPES:
            raise RuleError(f"{where}.scope: expected one of {SCOPES}, got {raw['scope']!r}")
        match = raw.get("match")
        if not isinstance(match, dict):
            raise RuleError(f"{where}.match: expected a [rule.match] table")
        kind = match.get("kind")
        if kind not in MATCHERS:
            raise RuleError(f"{where}.match.kind: expected one of {sorted(MATCHERS)}, got {kind!r}")
        known = {"kind", "calls", "any_present", "all_present", "absent", "max_positional"}
        if set(match) - known:
            raise RuleError(f"{where}.match: unknown keys {sorted(set(match) - known)}")
        calls = _strings(match.get("calls"), f"{where}.match.calls")
        if kind == "call" and not calls:
            raise RuleError(f"{where}.match.calls: a call rule needs at least one call name")
        max_pos = match.get("max_positional")
        if max_pos is not None and (not isinstance(max_pos, int) or max_pos < 0):
            raise RuleError(f"{where}.match.max_positional: expected an integer >= 0")
        probe = raw.get("probe")
        if probe is not None and not isinstance(probe, str):
            raise RuleError(f"{where}.probe: expected a probe name, got {probe!r}")
        rule = Rule(
            id=raw["id"],
            name=raw["name"],
            message=raw["message"],
            fix=raw["fix"],
            scope=raw["scope"],
            kind=kind,
            calls=calls,
            any_present=_argspecs(match.get("any_present"), f"{where}.match.any_present"),
            all_present=_argspecs(match.get("all_present"), f"{where}.match.all_present"),
            absent=_argspecs(match.get("absent"), f"{where}.match.absent"),
            max_positional=max_pos,
            probe=probe,
            concerns=_strings(raw.get("concerns"), f"{where}.concerns"),
            breaking=_strings(raw.get("breaking"), f"{where}.breaking"),
        )
        if (rule.concerns or rule.breaking) and rule.probe is None:
            raise RuleError(f"{where}: concerns/breaking need a probe")
        rules.append(rule)
    ids = [r.id for r in rules]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise RuleError(f"{path}: rule ids must be unique, repeated: {dupes}")
    return rules


# ------------------------------------------------------------------------------ name resolution


class Imports:
    """What each module-level name refers to, from the file's import statements.

    ``import triton.language as tl`` binds ``tl`` to ``triton.language``;
    ``from triton import language as tl`` too; ``from triton.language import dot as d`` binds
    ``d`` to ``triton.language.dot``; plain ``import triton.language`` binds ``triton``.
    """

    def __init__(self, tree: ast.AST) -> None:
        self.names: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.imports_triton = any(
            q == "triton" or q.startswith("triton.") for q in self.names.values()
        )

    def qualname(self, expr: ast.expr) -> str | None:
        """The dotted name ``expr`` refers to (``tl.dot`` -> ``triton.language.dot``), if known."""
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        base = self.names.get(expr.id)
        if base is None:
            # A file that imports triton but uses `tl` unbound (a kernel fragment pasted in
            # without its import) still means triton.language by the universal convention.
            if expr.id != "tl" or not self.imports_triton:
                return None
            base = TL
        return ".".join([base, *reversed(parts)])

    def tl_name(self, expr: ast.expr) -> str | None:
        """``dot`` for any spelling of ``triton.language.dot``; None for anything else."""
        q = self.qualname(expr)
        if q is None:
            return None
        for mod in TL_MODULES:
            if q.startswith(mod + ".") and "." not in q[len(mod) + 1 :]:
                return q[len(mod) + 1 :]
        return None

    def is_jit(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        q = self.qualname(target) or ""
        return q.startswith("triton.") and q.rsplit(".", 1)[-1] == "jit"


def _positional_count(call: ast.Call) -> int | None:
    """Number of positional arguments, or None when a ``*args`` splat makes it unknowable."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return len(call.args)


# ------------------------------------------------------------------------------------ matchers


@dataclass
class Module:
    """One parsed file: its tree, its imports, and its ``@triton.jit`` functions."""

    tree: ast.Module
    imports: Imports
    kernels: list[ast.FunctionDef | ast.AsyncFunctionDef]

    def __post_init__(self) -> None:
        self._in_kernel = {id(n) for fn in self.kernels for n in ast.walk(fn)}

    def in_kernel(self, node: ast.AST) -> bool:
        return id(node) in self._in_kernel


Matcher = Callable[[Rule, Module], Iterator[tuple[ast.AST, str]]]


def match_call(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Calls to ``triton.language.<calls>`` whose arguments fit the rule's filters."""
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Call):
            continue
        if rule.scope == "jit" and not module.in_kernel(node):
            continue
        name = module.imports.tl_name(node.func)
        if name is None or name not in rule.calls:
            continue
        if rule.any_present and not any(s.given(node) for s in rule.any_present):
            continue
        if rule.all_present and not all(s.given(node) for s in rule.all_present):
            continue
        if rule.absent and any(s.maybe_given(node) for s in rule.absent):
            continue
        if rule.max_positional is not None:
            count = _positional_count(node)
            if count is None or count <= rule.max_positional:
                continue
        yield node, f"{ast.unparse(node.func)}(...)"


# Calls whose result is an integer index (program ids, ranges, integer ceil-division).
INT_CALLS = frozenset({"program_id", "num_programs", "arange", "cdiv"})
# Calls whose result is an integer when an argument is.
INT_PRESERVING_CALLS = frozenset({"minimum", "maximum", "where", "multiple_of", "max_contiguous"})
LOOP_CALLS = frozenset({"range", "static_range"})
INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr)


class IntIndexTracker:
    """Which local names of a kernel hold integer indices, in source order.

    A name is an integer index from its last assignment on; loops are walked once, which is
    enough for the usual ``pid = tl.program_id(0); pid_m = pid // n;
    offs = pid_m * BLOCK + tl.arange(0, BLOCK)``. Kernel parameters are unknown (not indices):
    the rule would rather miss ``K / 2`` than flag every float scale factor.
    """

    def __init__(self, imports: Imports) -> None:
        self.imports = imports
        self.ints: set[str] = set()

    def is_int(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.ints
        if isinstance(expr, ast.Call):
            name = self.imports.tl_name(expr.func)
            if name in INT_CALLS:
                return True
            if name in INT_PRESERVING_CALLS:
                return any(self.is_int(a) for a in expr.args)
            return False
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, ast.FloorDiv):
                return True
            if isinstance(expr.op, INT_OPS):
                sides = (expr.left, expr.right)
                floaty = any(
                    isinstance(s, ast.Constant) and isinstance(s.value, float) for s in sides
                )
                return not floaty and any(self.is_int(s) for s in sides)
            return False
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd, ast.Invert)):
            return self.is_int(expr.operand)
        if isinstance(expr, ast.Subscript):
            return self.is_int(expr.value)
        return False

    def assign(self, target: ast.expr, is_int: bool) -> None:
        if isinstance(target, ast.Name):
            (self.ints.add if is_int else self.ints.discard)(target.id)

    def is_counter_loop(self, node: ast.For) -> bool:
        it = node.iter
        if not isinstance(it, ast.Call):
            return False
        builtin_range = isinstance(it.func, ast.Name) and it.func.id == "range"
        return builtin_range or self.imports.tl_name(it.func) in LOOP_CALLS


def _walk_kernel(node: ast.AST, tracker: IntIndexTracker) -> Iterator[ast.AST]:
    """Yield each ``/`` on an integer index, updating which names are indices in source order.

    A statement's expressions are checked before its assignment takes effect, so
    ``pid = pid / 2`` is still caught; a ``for`` target is an index inside the loop body.
    """
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and tracker.is_int(node.left):
        yield node
    aug = isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div)
    if aug and tracker.is_int(node.target):
        yield node
    if isinstance(node, ast.For):
        yield from _walk_kernel(node.iter, tracker)
        tracker.assign(node.target, tracker.is_counter_loop(node))
        for child in [*node.body, *node.orelse]:
            yield from _walk_kernel(child, tracker)
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_kernel(child, tracker)
    if isinstance(node, ast.Assign):
        for t in node.targets:
            tracker.assign(t, tracker.is_int(node.value))
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        tracker.assign(node.target, tracker.is_int(node.value))
    elif isinstance(node, ast.AugAssign):
        whole = ast.BinOp(left=node.target, op=node.op, right=node.value)
        tracker.assign(node.target, tracker.is_int(whole))


def match_int_true_division(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """``/`` whose left operand is an integer index, inside each kernel (scope is always jit)."""
    for fn in module.kernels:
        tracker = IntIndexTracker(module.imports)
        for stmt in fn.body:
            for node in _walk_kernel(stmt, tracker):
                yield node, ast.unparse(node)


MATCHERS: dict[str, Matcher] = {
    "call": match_call,
    "int-true-division": match_int_true_division,
}


# ---------------------------------------------------------------------------------------- scan


def _jit_functions(tree: ast.AST, imports: Imports) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(imports.is_jit(d) for d in n.decorator_list)
    ]


def scan_source(source: str, path: str, rules: Sequence[Rule]) -> list[Finding]:
    """Findings in one file's source. Raises SyntaxError if it does not parse."""
    tree = ast.parse(source, filename=path)
    imports = Imports(tree)
    module = Module(tree, imports, _jit_functions(tree, imports))
    found: dict[tuple[int, int, str], Finding] = {}
    for rule in rules:
        for node, snippet in MATCHERS[rule.kind](rule, module):
            line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", -1) + 1
            found.setdefault((line, col, rule.id), Finding(path, line, col, rule, snippet))
    return sorted(found.values(), key=lambda f: (f.line, f.col, f.rule.id))


def iter_python_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Each ``.py`` file under ``paths`` (files as given, folders recursively, sorted).

    Raises FileNotFoundError naming the path when one does not exist.
    """
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*.py") if q.is_file())
        elif p.is_file():
            yield p
        else:
            raise FileNotFoundError(f"scan path {str(p)!r}: no such file or folder")


def scan_paths(paths: Iterable[str | Path], rules: Sequence[Rule] | None = None) -> ScanReport:
    """Scan files and folders. Unreadable or unparsable files are listed in ``errors``."""
    rules = load_rules() if rules is None else rules
    report = ScanReport()
    for file in iter_python_files(paths):
        report.files.append(str(file))
        try:
            source = file.read_text(encoding="utf-8")
            report.findings.extend(scan_source(source, str(file), rules))
        except (OSError, UnicodeDecodeError) as e:
            report.errors.append(f"{file}: cannot read ({e})")
        except SyntaxError as e:
            report.errors.append(f"{file}:{e.lineno}:{e.offset}: not valid Python ({e.msg})")
    return report


# --------------------------------------------------------------------------- releases affected


def probe_statuses(runs: Iterable[Run], probe: str) -> dict[Release, dict[str, set[str]]]:
    """``{release: {status: {"backend[:target]", ...}}}`` for one probe over recorded runs."""
    out: dict[Release, dict[str, set[str]]] = {}
    for run in runs:
        release = run.release
        if release is None:
            continue
        for r in run.results:
            if r.probe == probe:
                where = str(Column(r.backend, r.target))
                out.setdefault(release, {}).setdefault(r.status, set()).add(where)
    return out


def releases_note(rule: Rule, runs: Sequence[Run] | None, candidate: Release | None) -> str:
    """Which recorded releases the rule's probe marks affected (``block_ptr: removed on 3.9.0``)."""
    if runs is None:
        return ""
    if rule.probe is None:
        return "no probe in the matrix measures this; it concerns every release"
    by_release = probe_statuses(runs, rule.probe)
    if candidate is not None:
        statuses = by_release.get(candidate)
        if not statuses:
            return f"{rule.probe}: no results for {candidate}"
        parts = [f"{s} ({', '.join(sorted(w))})" for s, w in sorted(statuses.items())]
        affected = any(s in rule.concerns for s in statuses)
        verdict = "affects" if affected else "does not affect"
        return f"{rule.probe} on {candidate}: {'; '.join(parts)}: {verdict} {candidate}"
    affected: dict[str, list[str]] = {}
    for release in sorted(by_release):
        for status in by_release[release]:
            if status in rule.concerns:
                affected.setdefault(status, []).append(str(release))
    if not by_release:
        return f"{rule.probe}: no results recorded"
    if not affected:
        return f"{rule.probe}: no recorded release is affected"
    return f"{rule.probe}: " + "; ".join(
        f"{s} on {', '.join(rs)}" for s, rs in sorted(affected.items())
    )


# ----------------------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m matrix.scan",
        description="Report Triton upgrade hazards in kernel sources "
        "(rules: matrix/data/scan_rules.toml).",
        epilog="Exit status: 0 no findings, 1 findings, 2 bad arguments or unreadable files.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders to scan")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--results", metavar="DIR", help="recorded results (raw folder or matrix.json)")
    p.add_argument("--candidate", metavar="X", help="say whether each finding affects release X")
    p.add_argument("--rules", metavar="FILE", default=str(RULES_PATH), help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.candidate is not None and args.results is None:
        print(
            "matrix.scan: --candidate needs --results DIR to know what the candidate does",
            file=sys.stderr,
        )
        return 2
    try:
        candidate = None if args.candidate is None else Release.parse(args.candidate, "--candidate")
        rules = load_rules(args.rules)
        runs = read_runs(args.results) if args.results is not None else None
        report = scan_paths(args.paths, rules)
    except (DataFileError, SchemaError, ReleaseError, OSError) as e:
        print(f"matrix.scan: {e}", file=sys.stderr)
        return 2
    if runs is not None and not runs:
        print(f"matrix.scan: --results {args.results!r}: no runs recorded there", file=sys.stderr)
        return 2
    notes = {r.id: releases_note(r, runs, candidate) for r in rules}
    if args.format == "json":
        doc = {
            "files": report.files,
            "errors": report.errors,
            "findings": [dict(f.to_dict(), releases=notes[f.rule.id]) for f in report.findings],
        }
        print(json.dumps(doc, indent=1))
    else:
        for f in report.findings:
            print(f.text(notes[f.rule.id]))
        for err in report.errors:
            print(f"error: {err}", file=sys.stderr)
        print(
            f"{len(report.findings)} finding(s) in {len(report.files)} file(s)"
            + (f", {len(report.errors)} unreadable" if report.errors else ""),
            file=sys.stderr,
        )
    if report.errors:
        return 2
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
