"""Files the gate cannot parse, and which of them cannot matter to a verdict.

A scanned file that does not parse (a template with ``directory = # enter path``, a 2 MB table
of Hadamard matrices past the parser's limit, syntax newer than the lowering knows) hides what
it does, so the gate cannot say SAFE. But a file's uses reach a kernel only through a name:
``triton`` itself, a Triton name the read files bind (``tl``, ``jit``), or something the read
files define or import from the repository (a kernel, the wrapper that launches it, the alias
it goes by). A file whose text names none of them as a word outside its ``#`` comments (in
code or in strings) can neither launch a kernel nor call into one nor use a Triton API: it is
named in a note and the verdict is left to the rest. One that names any of them stays unread,
and the verdict undecidable (fail closed).

A kernel the gate does not recognise is as unread as a file that does not parse: a function
whose decorator is neither ``triton.jit`` nor a wrapper the tree shows (``Project.jit_wrappers``)
but whose body calls ``triton.language`` (``tl.load``, ``tl.program_id``: only a kernel can)
is decorated by something the gate cannot see into (a wrapper imported from another package,
built at run time). Its uses are unknown: the verdict is undecidable, never SAFE on the uses
of the kernels it did read (Fast-LLM's 36 kernels under ``@triton_jit()`` were 0 read, SAFE).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from matrix.analyze.profile.modules import module_level
from matrix.gate.reach import WORD, uncommented
from matrix.scan import Imports, SourceModule

# The module part of a from-import (it binds the names after `import`, not the module); a
# line that imports (its words always count); and a definition's name: `def f`, `class C`
# at any indent, `NAME =` / `NAME: T =` at the start of a line.
_FROM_MODULE = re.compile(rb"^([ \t]*)from[ \t]+[.\w]+[ \t]+import\b", re.MULTILINE)
_IMPORT_LINE = re.compile(rb"^[ \t]*(?:from|import)[ \t][^\n]*", re.MULTILINE)
_DEFINES = re.compile(
    rb"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)"
    rb"|^([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=\n]*)?=(?!=)",
    re.MULTILINE,
)


def names_into_kernels(parsed: Sequence[SourceModule]) -> set[bytes]:
    """Every name a use in another file could reach Triton through: ``triton``, then, to a
    fixpoint, each name a module-level statement of the read files binds whose text names one
    already in (``import triton.language as tl``, a ``@triton.jit`` kernel, the wrapper that
    launches it, the class that calls the wrapper), each name imported under the name of one
    in (``from .ops import fwd as f``), and the module name of a read file binding one (``from
    . import ops``). A name bound by nothing that reaches Triton (``get_hadK``, a config
    class) is not in: a file naming only those cannot reach a kernel through them."""
    bindings: list[tuple[set[bytes], set[bytes]]] = []  # (names bound, words they depend on)
    for m in parsed:
        lines = m.source.encode().splitlines()
        module_binds: set[bytes] = set()
        for node in module_level(m.tree.body):
            for bound, words in _bindings(node, lines):
                bindings.append((bound, words))
                module_binds |= bound
        bindings.append(({m.name.rsplit(".", 1)[-1].encode()}, module_binds))
    names = {b"triton"}
    changed = True
    while changed:
        changed = False
        for bound, words in bindings:
            if not bound <= names and not words.isdisjoint(names):
                names |= bound
                changed = True
    return names


def _bindings(node: ast.stmt, lines: list[bytes]) -> Iterator[tuple[set[bytes], set[bytes]]]:
    """``(names bound, words they depend on)`` for a module-level statement: a definition or
    an assignment depends on every word of its text (decorators included); each imported name
    on the name it imports (every name from Triton on ``triton``), a module on its path."""
    if isinstance(node, ast.Import):
        for a in node.names:
            path = {p.encode() for p in a.name.split(".")}
            yield {(a.asname or a.name.split(".")[0]).encode()}, path
        return
    if isinstance(node, ast.ImportFrom):
        from_triton = (node.module or "").split(".")[0] == "triton"
        for a in node.names:
            if a.name != "*":
                words = {b"triton"} if from_triton else {a.name.encode()}
                yield {(a.asname or a.name).encode()}, words
        return
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        bound = {node.name.encode()}
    elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        bound = {n.id.encode() for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    else:
        return
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    yield bound, set(WORD.findall(b"\n".join(lines[first - 1 : node.end_lineno or node.lineno])))


# triton.language calls that host code makes too (a dtype, a constexpr built on the host)
_HOST_TL = frozenset({"constexpr", "dtype", "pointer_type", "block_type", "cdiv"})


def unrecognized_kernels(
    tree: ast.Module, imports: Imports, kernels: Iterable[ast.AST]
) -> list[str]:
    """``name (line): why`` for each decorated function of ``tree`` that is not one of
    ``kernels``, has no decorator of Triton's own, and calls ``triton.language``."""
    known = {id(k) for k in kernels}
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or id(fn) in known:
            continue
        if not fn.decorator_list or any(_tritons_own(d, imports) for d in fn.decorator_list):
            continue  # no decorator (dead or host code), or Triton's own (extern, builtin)
        for node in _own_nodes(fn):
            if isinstance(node, ast.Call):
                name = imports.tl_name(node.func)
                if name is not None and name not in _HOST_TL:
                    theirs = [
                        d
                        for d in fn.decorator_list
                        if not (imports.qualname(_called(d)) or "").startswith("triton.")
                    ]
                    shown = ast.unparse((theirs or fn.decorator_list)[0])
                    out.append(
                        f"{fn.name} (line {fn.lineno}) calls tl.{name} (line {node.lineno}) "
                        f"under @{shown}, which the gate does not read as triton.jit: a kernel "
                        "whose uses are unknown"
                    )
                    break
    return out


def _own_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``fn``'s body, not those of functions it defines (a test or a cached
    factory that defines a kernel is not one: the kernel is judged on its own)."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))


def _tritons_own(decorator: ast.expr, imports: Imports) -> bool:
    """A decorator of Triton's that makes no kernel (``core.extern``, ``builtin``,
    ``constexpr_function``); ``autotune`` and ``heuristics`` sit on a kernel's own."""
    q = imports.qualname(_called(decorator)) or ""
    return q.startswith("triton.") and q.rsplit(".", 1)[-1] not in ("autotune", "heuristics")


def _called(decorator: ast.expr) -> ast.expr:
    return decorator.func if isinstance(decorator, ast.Call) else decorator


def names_none(path: str, names: set[bytes]) -> bool:
    """Whether the file at ``path`` names none of ``names`` as a word outside its ``#``
    comments (``# from .module_utils import RotateLinear`` imports nothing), leaving out the
    names it defines itself (``def main``, ``kernel = ...``: its mentions of them are its
    own) unless an import line of it names them too (``from .ops import fwd as _fwd``).
    False when its bytes cannot be read: then nothing is known of it."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return False
    code = b"\n".join(uncommented(line) for line in data.splitlines())
    code = _FROM_MODULE.sub(rb"\1import", code)  # `from .ops import f` binds f, not ops
    imported = {w for line in _IMPORT_LINE.findall(code) for w in WORD.findall(line)}
    own = {w for pair in _DEFINES.findall(code) for w in pair if w} - imported
    return names.isdisjoint(set(WORD.findall(code)) - own)
