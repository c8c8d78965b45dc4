"""Fingerprint group ``env_values``: which spellings of a boolean environment variable turn it
on, per release (``[env_values]`` of the battery file lists the spellings).

A cell is ``VAR=spelling`` (``VAR=(unset)``, ``VAR=(empty)`` for the empty string), its status
``on`` or ``off`` (``mixed`` where two readers of one variable disagree, ``error`` with the
exception where reading raised). How each was found is in ``data.details``, per cell:

- ``observed: type(triton.jit(f)) is InterpretedFunction`` for ``TRITON_INTERPRET``: the
  decorator reads it each time it runs, so the spelling's effect is seen, not inferred;
- ``knob runtime_knobs.interpret (env_bool)``: a ``triton.knobs`` descriptor (3.4+) read on a
  fresh knobs object with the variable set: the release's own parsing, run;
- ``runtime/jit.py:12 os.environ.get("TRITON_X", "0") == "1"``: a read in the release's Python
  source whose enclosing comparison (or ``get_bool_env_var``-style reader call) holds only
  constants and string methods; that expression is evaluated with the spelling in place of
  the read. Reads of other shapes are not classified (not a cell), never guessed.

All of it runs in the probe's own process (no compile, no child): measured 0.3-1.5 s a cell.
"""

from __future__ import annotations

import ast
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from matrix.core import SKIPPED
from matrix.probes.support.base import Observation

UNSET = "(unset)"
EMPTY = "(empty)"
# String methods a parsing expression may apply to the value (anything else is not evaluated).
STR_METHODS = frozenset({"lower", "upper", "strip", "casefold", "lstrip", "rstrip"})
_ENV_FUNCS = frozenset({"getenv"})


def spelling_key(var: str, spelling: str | None) -> str:
    shown = UNSET if spelling is None else (EMPTY if spelling == "" else spelling)
    return f"{var}={shown}"


@contextlib.contextmanager
def env_set(var: str, value: str | None) -> Iterator[None]:
    """``var`` set to ``value`` (None: unset) for the block; restored after."""
    old = os.environ.get(var)
    try:
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
        yield
    finally:
        if old is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old


# -- readers: each gives {var: (how, parse(spelling) -> bool)} ---------------------------------
def knob_readers() -> dict[str, tuple[str, Any]]:
    """Boolean descriptors of ``triton.knobs`` (absent before 3.4): read on a fresh object."""
    try:
        import triton.knobs as knobs
    except ImportError:
        return {}
    out: dict[str, tuple[str, Any]] = {}
    for name, inst in sorted(vars(knobs).items()):
        cls = type(inst)
        if not hasattr(cls, "knob_descriptors") or name.startswith("_"):
            continue
        for attr, desc in sorted(vars(cls).items()):
            key = getattr(desc, "key", None)
            if not isinstance(key, str) or "bool" not in type(desc).__name__:
                continue

            def read(_value: str | None, cls=cls, attr=attr) -> bool | None:
                return getattr(cls(), attr)

            out.setdefault(key, (f"knob {cls.__name__}.{attr} ({type(desc).__name__})", read))
    return out


def interpret_reader() -> tuple[str, Any]:
    import triton

    def read(_value: str | None) -> bool:
        def f(x):
            pass

        return type(triton.jit(f)).__name__ == "InterpretedFunction"

    return "observed: type(triton.jit(f)) is InterpretedFunction", read


def _is_read(node: ast.AST) -> str | None:
    """The variable an ``os.getenv``/``os.environ.get``/``os.environ[...]`` node reads."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        environ_get = (
            name == "get"
            and isinstance(func, ast.Attribute)
            and getattr(func.value, "attr", getattr(func.value, "id", "")) == "environ"
        )
        if name in _ENV_FUNCS or environ_get:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                return arg.value
    return None


class CannotTell(Exception):
    """The expression's value for this spelling depends on more than the source shows."""


def _default(node: ast.Call) -> str | None:
    """What the read gives when the variable is unset: its constant default, or None."""
    if len(node.args) < 2:
        return None
    arg = node.args[1]
    if isinstance(arg, ast.Constant) and (arg.value is None or isinstance(arg.value, str)):
        return arg.value
    raise CannotTell(f"the default is {ast.unparse(arg)}, not a constant")


def _evaluable(node: ast.AST, read: ast.AST) -> bool:
    """Whether ``node`` holds, beside ``read``, only constants, comparisons and string
    methods without arguments (so that evaluating it runs nothing of the release's)."""
    inside = {id(n) for n in ast.walk(read)}
    for n in ast.walk(node):
        if id(n) in inside:
            continue
        if isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Attribute) and n.func.attr in STR_METHODS):
                return False
            if n.args or n.keywords:
                return False
        elif not isinstance(
            n,
            (
                ast.Compare, ast.Constant, ast.Tuple, ast.List, ast.Set, ast.BoolOp, ast.UnaryOp,
                ast.Attribute, ast.Load, ast.cmpop, ast.boolop, ast.unaryop,
            ),
        ):  # fmt: skip
            return False
    return True


def _evaluate(expr: ast.expr, read: ast.Call, value: str | None) -> bool:
    """``expr`` with the read replaced by the value it gives (its default when unset)."""
    given = _default(read) if value is None else value

    class Swap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            if _is_read(node):
                return ast.copy_location(ast.Name("_value", ast.Load()), node)
            return self.generic_visit(node)

    tree = Swap().visit(ast.parse(ast.unparse(expr), mode="eval"))
    code = compile(ast.fix_missing_locations(tree), "<env-expression>", "eval")
    return bool(eval(code, {"__builtins__": {}}, {"_value": given}))


def source_readers(root: Path) -> dict[str, list[tuple[str, Any]]]:
    """Comparisons on an environment read in the release's Python source (private files,
    a path part starting with ``_``, left out): ``{var: [(evidence, parse), ...]}``."""
    out: dict[str, list[tuple[str, Any]]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith("_") for part in Path(rel).parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
            if "environ" not in text and "getenv" not in text:
                continue
            tree = ast.parse(text)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        parent: dict[int, ast.AST] = {}
        reads: list[tuple[ast.Call, str]] = []
        for node in ast.walk(tree):  # one walk: each node's parent, and every read
            for child in ast.iter_child_nodes(node):
                parent[id(child)] = node
            var = _is_read(node)
            if var is not None and isinstance(node, ast.Call):  # only a call reads one
                reads.append((node, var))
        for read, var in reads:
            cmp = parent.get(id(read))
            while cmp is not None and not isinstance(cmp, (ast.Compare, ast.stmt)):
                cmp = parent.get(id(cmp))
            if not isinstance(cmp, ast.Compare) or not _evaluable(cmp, read):
                continue
            evidence = f"{rel}:{cmp.lineno} {ast.unparse(cmp)}"[:200]

            def parse(value: str | None, cmp=cmp, read=read) -> bool:
                # On: the expression gives the opposite of what it gives for "0" (a
                # comparison with "0" means on when it fails, one with "1" when it holds).
                return _evaluate(cmp, read, value) != _evaluate(cmp, read, "0")

            out.setdefault(var, []).append((evidence, parse))
    return out


def state(value: Any) -> str:
    """``on``/``off``; ``none`` for an optional knob left to the compiler (env_opt_bool)."""
    return "none" if value is None else ("on" if value else "off")


# A variable the battery asks about that this release does not classify is one of two things,
# told apart by looking for its name in every file of the installed package (Python sources and
# the compiled libraries, where C++ reads like MLIR_ENABLE_DUMP live):
UNREAD = "unread"  # the name is in no file of the release: it reads no such variable
UNCLASSIFIED = SKIPPED  # read in a shape this part does not evaluate: no observation


def files_naming(root: Path, names: list[str]) -> dict[str, str]:
    """For each of ``names``, the first file under ``root`` (relative path) holding it as bytes;
    names found nowhere are left out. One read per file, however many names."""
    import mmap

    wanted = {n: n.encode() for n in names}
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if not wanted or not path.is_file():
            continue
        # Mapped, not read: libtriton.so is hundreds of MB, and copying it cost most of the
        # part's 1.9 s on 3.6.0.
        try:
            with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as blob:
                for name in _names_in(path, blob, list(wanted)):
                    found[name] = path.relative_to(root).as_posix()
                    del wanted[name]
        except (OSError, ValueError):  # unreadable, or empty (an empty file cannot be mapped)
            continue
    return found


# A large file asked for many names is searched with ``grep -F`` (many fixed strings in one
# pass) where grep exists: one ``find`` per name is a full pass of libtriton.so (0.16 s each at
# 500 MB: the 24 names 3.0.0 does not read made the part 4.3 s). Otherwise a find per name.
ONE_PASS_BYTES = 16 << 20
ONE_PASS_NAMES = 8


def _names_in(path: Path, blob: Any, names: list[str]) -> list[str]:
    """The names among ``names`` whose bytes occur in ``blob`` (the mapped ``path``)."""
    import shutil

    if len(blob) < ONE_PASS_BYTES or len(names) < ONE_PASS_NAMES:
        return _found_each(blob, names)
    grep = shutil.which("grep")
    if grep is None:
        return _found_each(blob, names)
    found: list[str] = []
    remaining = list(names)
    # grep -o prints non-overlapping leftmost-longest matches, so a name can hide inside or
    # behind another's match; but while any remaining name occurs, the leftmost match of one
    # of them is printed. So: search again for those not printed until a pass prints none.
    while remaining:
        matched = _grep_fixed(grep, path, remaining)
        if matched is None:  # grep failed: search here instead
            return found + _found_each(blob, remaining)
        new = [n for n in remaining if n in matched]
        if not new:
            break
        found += new
        remaining = [n for n in remaining if n not in matched]
    return found


def _found_each(blob: Any, names: list[str]) -> list[str]:
    """The names among ``names`` found in ``blob``, one search per name."""
    return [n for n in names if blob.find(n.encode()) != -1]


def _grep_fixed(grep: str, path: Path, names: list[str]) -> set[str] | None:
    """The strings of ``names`` ``grep -a -o -F`` prints for ``path``; None when grep fails."""
    import subprocess

    done = subprocess.run([grep, "-a", "-o", "-F", "-e", "\n".join(names), str(path)],
                          capture_output=True, env={"LC_ALL": "C"})  # fmt: skip
    if done.returncode not in (0, 1):  # 1: nothing found
        return None
    return set(done.stdout.decode("ascii", "replace").splitlines())


def asked_rows(asked: list[str], classified: set[str], spellings: list[str],
               root: Path) -> dict[str, Any]:  # fmt: skip
    """Cells for the asked variables this release does not classify: ``unread`` where the name
    is in no file of the release, ``skipped`` (with the file naming it) where it is read in a
    shape the readers above do not evaluate. Without these a variable new in one release would
    have cells on one side of an upgrade only, which the gate cannot decide."""
    missing = [v for v in asked if v not in classified]
    where = files_naming(root, missing)
    cells: dict[str, str] = {}
    texts: dict[str, str] = {}
    for var in missing:
        if var in where:
            status = UNCLASSIFIED
            text = f"named in {where[var]}, but read in a shape this part does not evaluate"
        else:
            status, text = UNREAD, "the name is in no file of this release's package"
        for spelling in [None, *spellings]:
            key = spelling_key(var, spelling)
            cells[key], texts[key] = status, text
    return {"cells": cells, "texts": texts}


def env_value_rows(spellings: list[str], asked: list[str] | None = None,
                   root: Path | None = None) -> list[Observation]:  # fmt: skip
    """The ``fp.env_values`` group: every boolean variable a reader above classifies, and each
    variable of ``asked`` (the battery's list, every release's variables) that it does not."""
    import triton

    root = root or Path(triton.__file__).resolve().parent
    readers: dict[str, list[tuple[str, Any]]] = {}
    for var, reader in knob_readers().items():
        readers.setdefault(var, []).append(reader)
    for var, found in source_readers(root).items():
        if var not in readers:  # a knob is the release's parsing, run: it wins
            readers[var] = found
    readers.setdefault("TRITON_INTERPRET", []).insert(0, interpret_reader())
    data = classify(readers, spellings)
    extra = asked_rows(asked or [], set(readers), spellings, root)
    reasons: list[str] = data["reasons"]
    for key, status in extra["cells"].items():
        text = extra["texts"][key]
        if text not in reasons:
            reasons.append(text)
        data["cells"][key] = status
        data["details"][key] = reasons.index(text)
    return [Observation("observed", "", data, name="fp.env_values")]


def classify(readers: dict[str, list[tuple[str, Any]]], spellings: list[str]) -> dict[str, Any]:
    """The group's data: each variable read by each of its readers with the variable unset
    and set to each spelling (``data.cells``, ``data.details`` -> ``data.reasons``)."""
    cells: dict[str, str] = {}
    details: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for var in sorted(readers):
        for spelling in [None, *spellings]:
            key = spelling_key(var, spelling)
            seen: dict[str, str] = {}
            with env_set(var, spelling):
                for how, read in readers[var]:
                    try:
                        seen[how] = state(read(spelling))
                    except CannotTell as e:
                        seen[how] = f"unknown ({e})"[:160]
                    except Exception as e:  # the release's own parsing refused the spelling
                        seen[how] = f"error ({type(e).__name__}: {e})"[:160]
            states = {v.split(" ", 1)[0] for v in seen.values()}
            cells[key] = states.pop() if len(states) == 1 else "mixed"
            text = "; ".join(f"{v} by {h}" for h, v in seen.items())[:400]
            details[key] = reasons.setdefault(text, len(reasons))
    # Each evidence text once (many spellings share it): details hold its index in reasons,
    # as the fp probe's other groups do (matrix.analyze.fingerprint.evidence reads both).
    return {"cells": cells, "details": details, "reasons": list(reasons)}
