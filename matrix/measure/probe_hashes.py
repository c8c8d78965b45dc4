"""A hash per probe, kept in each raw file: what ``matrix.measure.incremental`` compares.

Name -> 16 hex digits of the probe's sources and its catalog row, under the run's
``probe_hashes`` key. A Python source counts by its code (``code_of``): a comment, a blank line
or a docstring edited makes nothing stale. A probe's sources are its module and every module of
ours it imports, however deep and wherever in the file (``kernels``' split-K for ``splitk``, the
fingerprint's support modules for ``fp``): a change to a kernel or a support module makes the
probes that use it stale, not only an edit of the probe file. Imports are read from the syntax
tree, never executed (no Triton here). The data files those modules name (``fingerprint.toml``
beside the fp probe, ``splitk_tuned.toml``) are sources too. The runner records the hashes
before the probes run (the source that was measured); a probe whose results a cell kept keeps
its earlier hash, or none where the earlier run recorded none (measured before hashes were
kept).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict
from pathlib import Path

from matrix.catalog import ProbeSpec, probe_module
from matrix.results import Run

# The raw file's key for the per-probe hashes (a top-level field of the run, like "complete").
HASHES_KEY = "probe_hashes"


def probe_source(package: str, name: str) -> Path:
    """The file of probe ``name``'s module in ``package`` (``<name>/probe.py`` or a flat
    ``<name>.py``; found, not imported: no Triton here)."""
    module = probe_module(package, name)
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise LookupError(f"probe {name!r}: no module {module} to hash")
    return Path(spec.origin)


# The packages whose modules are a probe's sources when it imports them (besides its own).
OWN_PACKAGES = ("matrix", "kernels", "compat")


def probe_hash(spec: ProbeSpec, package: str) -> str:
    """What a raw file records for the probe: its ``version`` where its probe.toml sets one
    (asv's rule: moving the module or a type-only edit then re-measures nothing), else its
    ``code_hash``."""
    return spec.version if spec.version is not None else code_hash(spec, package)


def code_hash(spec: ProbeSpec, package: str) -> str:
    """16 hex digits of what decides the probe's results: its sources and its row."""
    path = probe_source(package, spec.name)
    own = {*OWN_PACKAGES, package.split(".")[0]}
    digest = hashlib.sha256()
    sources = source_closure(probe_module(package, spec.name), path, own)
    data = data_files(sources, (*DATA_SCOPES, package))
    for name, file in sorted({**sources, **data}.items()):
        text = code_of(file.read_bytes()) if file.suffix == ".py" else file.read_bytes()
        digest.update(name.encode() + b"\0" + text + b"\0")
    digest.update(json.dumps(hashed_row(spec), sort_keys=True, default=str).encode("utf-8"))
    return digest.hexdigest()[:16]


# Not what the probe measures: its version and the code hash beside it (the hash would depend
# on itself), and its usage entry (what the gate maps it onto, not what a release did).
UNHASHED_FIELDS = ("version", "code_hash", "usage")


def hashed_row(spec: ProbeSpec) -> dict[str, object]:
    """The catalog row as the code hash reads it."""
    row = asdict(spec)
    for key in UNHASHED_FIELDS:
        row.pop(key, None)
    return row


def versions_behind(specs: Iterable[ProbeSpec], package: str) -> list[str]:
    """One line per probe whose ``version`` stands for a code hash that is no longer its code
    hash: the code (or the row) changed and the version did not. Printed for review, never a
    failure: a type-only edit needs no re-measure; a change of what the probe does needs a new
    version (or none) so that its cells are measured again."""
    lines = []
    for spec in specs:
        if spec.version is None:
            continue
        now = code_hash(spec, package)
        if now != spec.code_hash:
            lines.append(f"{spec.name}: code changed, version did not (version {spec.version}, "
                         f"code_hash {spec.code_hash} recorded beside it, now {now})")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m matrix versions``: the probes whose code changed under an
    unchanged version, one line each (exit 0: for review; a changed version is the
    reviewer's call), or one line saying none did."""
    import argparse

    from matrix.exitcodes import ExitCode
    from matrix.measure.child import probe_package
    from matrix.measure.tasks import registry

    parser = argparse.ArgumentParser(
        prog="python -m matrix versions", allow_abbrev=False,
        description="List the probes whose code hash moved away from the one recorded beside "
        "their version (docs/probes.md).",
    )  # fmt: skip
    parser.parse_args(argv)
    specs = registry()
    lines = versions_behind(specs, probe_package())
    for line in lines:
        print(line)
    if not lines:
        versioned = sum(1 for s in specs if s.version is not None)
        print(f"{versioned} versioned probe(s): every code hash is the one beside its version")
    return ExitCode.OK


@functools.lru_cache(maxsize=1024)
def _syntax_tree(source: bytes) -> ast.Module:
    """A source text's syntax tree, parsed once for its imports, the data files it names and
    its code (read, never changed)."""
    return ast.parse(source)


# How Python ends a line, as ``ast`` counts lines (not ``str.splitlines``, which also splits
# at form feeds and other separators).
_LINE_END = re.compile(rb"\r\n|\r|\n")
_CODE, _STRING, _DOCSTRING = 0, 1, 2
# The runs of a line's mask outside docstrings: the bytes of the line that ``code_of`` keeps.
_NOT_DOCSTRING = re.compile(b"[^%c]+" % _DOCSTRING)


@functools.lru_cache(maxsize=1024)
def code_of(source: bytes) -> bytes:
    """The code of a Python source text without its comments, blank lines, trailing blanks and
    docstrings, so that editing a comment or a docstring of a probe's module makes no cell
    stale; any other edit, inside a string included, changes it. Found from the syntax tree's
    positions of string literals alone, never from tokens or ``ast.dump``, whose output differs
    between Python versions (3.12 tokenizes f-strings anew): the GPU rows are recorded by the
    lease's Python 3.12, the CPU rows by 3.11, and both must give a source the same hash."""
    tree = _syntax_tree(source)
    lines = _LINE_END.split(source)
    masks = [bytearray(len(line)) for line in lines]
    # The kind of literal a line begins inside of (a multi-line string's later lines).
    starts_in: list[int] = [_CODE] * len(lines)
    for node, is_docstring in _string_literals(tree):
        kind = _DOCSTRING if is_docstring else _STRING
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        for n in range(first, last + 1):
            lo = node.col_offset if n == first else 0
            hi = (node.end_col_offset or 0) if n == last else len(lines[n])
            masks[n][lo:hi] = bytes([kind]) * (hi - lo)
            if n > first:
                starts_in[n] = kind
    kept: list[bytes] = []
    for line, mask, inside in zip(lines, masks, starts_in, strict=True):
        end = _comment_start(line, mask)
        code = line[:end]
        if _DOCSTRING in mask[:end]:
            code = b"".join(
                code[run.start() : run.end()] for run in _NOT_DOCSTRING.finditer(mask, 0, end)
            )
        if not (end == len(line) and end and mask[end - 1] == _STRING):
            code = code.rstrip()  # a line that ends inside a string keeps its blanks
        if code.strip() or inside == _STRING:  # a blank line of a string is the string's
            kept.append(code)
    return b"\n".join(kept)


def _comment_start(line: bytes, mask: bytearray) -> int:
    """Where the comment of ``line`` begins (its first '#' outside every literal), else the
    line's length. By ``find``, not a loop over the bytes: a probe's hash reads every module
    it imports (a Python loop per byte was most of the time of hashing the source tree)."""
    k = line.find(b"#")
    while k != -1 and mask[k] != _CODE:
        k = line.find(b"#", k + 1)
    return len(line) if k == -1 else k


def _string_literals(tree: ast.AST) -> Iterator[tuple[ast.expr, bool]]:
    """Every string and bytes literal of ``tree``, an f-string as one (its parts are not
    visited: their positions were not exact before Python 3.12), and whether it is the
    docstring of a module, class or function. One walk finds both: walking the tree was most
    of the time ``code_of`` took."""
    docstrings: set[int] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)
        ):
            yield node, id(node) in docstrings  # its parent came off the stack before it
            continue
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.add(id(first.value))
        todo.extend(ast.iter_child_nodes(node))


def source_closure(module: str, path: Path, own: set[str]) -> dict[str, Path]:
    """``module`` (at ``path``) and every module of the ``own`` top-level packages it imports,
    transitively, with the ``__init__`` of each package on the way: module name -> file."""
    found: dict[str, Path] = {module: path}
    todo = [(module, path)]
    while todo:
        name, file = todo.pop()
        for imported in _imported_names(name, file):
            if imported.split(".")[0] not in own:
                continue
            parts = imported.split(".")
            for depth in range(1, len(parts) + 1):
                prefix = ".".join(parts[:depth])
                if prefix not in found and (target := _module_file(prefix)) is not None:
                    found[prefix] = target
                    todo.append((prefix, target))
    return found


# Modules whose named data files are a probe's sources. Not matrix.core or the catalog: they
# name matrix.toml and probes.toml, and a new release or probe must not make every cell stale.
DATA_SCOPES = ("matrix.probes", "kernels", "compat")
DATA_FILE = re.compile(r"^[\w.-]+\.(?:toml|json)$")


def data_files(sources: dict[str, Path], scopes: tuple[str, ...] = DATA_SCOPES) -> dict[str, Path]:
    """The data files (``*.toml``/``*.json`` in a ``data`` folder, or beside the module: a probe
    folder's own data) that the modules of ``sources`` under ``scopes`` name in a string:
    data name -> file."""
    found: dict[str, Path] = {}
    for module, file in sources.items():
        if not any(module == s or module.startswith(s + ".") for s in scopes):
            continue
        top = file.parents[len(module.split(".")) - (1 if file.name != "__init__.py" else 0) - 1]
        folders = (top / "data", file.parent / "data", file.parent)
        for named in _data_names_in(file.read_bytes()):
            for folder in folders:
                if (folder / named).is_file():
                    found[f"data:{(folder / named).relative_to(top.parent).as_posix()}"] = (
                        folder / named
                    )
    return found


@functools.lru_cache(maxsize=1024)
def _data_names_in(source: bytes) -> tuple[str, ...]:
    """The strings of a source text that look like a data file's name."""
    return tuple(
        node.value
        for node in ast.walk(_syntax_tree(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and DATA_FILE.match(node.value)
    )


def _imported_names(module: str, path: Path) -> frozenset[str]:
    """Every module name ``path`` may import (``from a import b`` names ``a`` and ``a.b``:
    ``b`` may be a submodule; one that is not has no file and is dropped by the caller)."""
    return _names_in(module, path.name == "__init__.py", path.read_bytes())


@functools.lru_cache(maxsize=1024)
def _names_in(module: str, is_package: bool, source: bytes) -> frozenset[str]:
    """``_imported_names`` of a source text; cached by content (the catalog's probes share
    most of their modules), so an edited file is parsed again."""
    tree = _syntax_tree(source)
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package, one level up per extra dot
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                stem = ".".join([*base, *([node.module] if node.module else [])])
            else:
                stem = node.module or ""
            names.add(stem)
            names.update(f"{stem}.{alias.name}" for alias in node.names)
    return frozenset(n for n in names if n)


def _module_file(name: str) -> Path | None:
    """The file of module ``name`` on ``sys.path``, found without importing anything."""
    parts = name.split(".")
    for entry in sys.path:
        base = Path(entry or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def catalog_hashes(specs: Iterable[ProbeSpec], package: str) -> dict[str, str]:
    """``probe_hash`` of every spec. Parsing the probes' 58 modules took ~1 s in each of a
    run's cells; the hashes depend on our source tree alone, so a matrix run's cells share
    them (``run_cache``), keyed by every file of the packages they can read."""
    from matrix.probes.support import run_cache

    specs = list(specs)
    digest = _tree_digest(specs, package)
    cached = run_cache.load("probe-hashes", digest)
    if isinstance(cached, dict):
        return cached
    hashes = {spec.name: probe_hash(spec, package) for spec in specs}
    run_cache.store("probe-hashes", digest, hashes)
    return hashes


def _tree_digest(specs: list[ProbeSpec], package: str) -> str:
    """Every ``.py`` and data file of the packages a probe's hash can read, and the rows: any
    edit gives another digest (reading them is ~20 ms; parsing them is what is saved)."""
    digest = hashlib.sha256(package.encode() + b"\0")
    for spec in specs:
        digest.update(json.dumps(asdict(spec), sort_keys=True, default=str).encode() + b"\0")
    for top in sorted({*OWN_PACKAGES, package.split(".")[0]}):
        init = _module_file(top)
        if init is None:
            continue
        root = init.parent
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".toml", ".json"):  # a probe folder keeps its data beside it
                digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def recorded_hashes(run: Run) -> dict[str, str]:
    value = run.extra.get(HASHES_KEY)
    return dict(value) if isinstance(value, dict) else {}


def hashes_after(
    previous: Mapping[str, str], measured: Mapping[str, str], kept: Iterable[str]
) -> dict[str, str]:
    """The hashes a cell records: those of the probes measured now, and the earlier ones of
    the probes whose results it kept (absent where the earlier run recorded none)."""
    out = {name: previous[name] for name in kept if name in previous}
    out.update(measured)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
