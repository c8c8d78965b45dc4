"""A team's targets when it declares none, read off its repository (rule: matrix/data/targets.toml).

A change seen only under Triton's interpreter cannot break a library whose kernels run compiled
on a GPU. Without ``[tool.triton-compat] targets`` the gate looks for evidence that the team
runs the interpreter: ``TRITON_INTERPRET`` (or an interpreter import) in any file of its
repository (the nearest folder above each ``--scan``/``--tests`` path with ``.git`` or
``pyproject.toml``), outside comments and not turning it off (``TRITON_INTERPRET=0``), or the
gate's own ``--tests-device`` option. Evidence found: the interpreter counts (only for the top
folders of the repository holding it, where it is only in modules: ``_scope_of``). None found:
interpreter-only changes go to "not on your targets". Compiled columns always count. A
declared target list always wins (``infer`` is not called then), and a search cut short keeps
the interpreter (fail closed).

>>> rule = Rule.load()
>>> rule.column, "TRITON_INTERPRET" in rule.patterns
('interpret', True)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Any

from matrix.analyze.profile.declaration import InferredTargets
from matrix.core import MATRIX_DIR, DataFileError, load_toml, table_keys

RULE_PATH = MATRIX_DIR / "data" / "targets.toml"
EVIDENCE_SHOWN = 3  # evidence lines kept per inference (the first screen names them)


@dataclass(frozen=True)
class Rule:
    """matrix/data/targets.toml, checked."""

    markers: tuple[str, ...]
    column: str
    patterns: tuple[str, ...]
    files: tuple[str, ...]
    skip_dirs: frozenset[str]
    max_files: int
    options: tuple[str, ...]
    # folders of code built by another Triton (a vendor's fork): fnmatch on the shown path
    vendor_paths: tuple[str, ...] = ()
    comment_files: tuple[str, ...] = ()  # [interpret] comment_files: `#` lines say nothing
    caller_files: int = 0  # [callers] max_files: repository files walked for host callers
    caller_skip_dirs: frozenset[str] = frozenset()  # [callers] skip_dirs (test suites)
    caller_skip_files: tuple[str, ...] = ()  # [callers] skip_files (fnmatch on the name)
    # [namespaces]: a qualname prefix -> the columns (fnmatch) a kernel naming it can run on
    namespaces: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    @lru_cache(maxsize=1)
    def load(cls, path: Path = RULE_PATH) -> Rule:
        doc = table_keys(path, "", load_toml(path),
                         {"root", "callers", "interpret", "vendor", "namespaces"})  # fmt: skip
        root = table_keys(path, "[root]", doc.get("root", {}), {"markers"})
        keys = {"column", "patterns", "files", "comment_files", "skip_dirs", "max_files",
                "options"}  # fmt: skip
        interp = table_keys(path, "[interpret]", doc.get("interpret", {}), keys)

        def strings(table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
            value = table.get(key)
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, str) and v for v in value)
            ):
                raise DataFileError(path, f"{where} {key}", "a non-empty list of strings", value)
            return tuple(value)

        callers = table_keys(path, "[callers]", doc.get("callers", {}),
                             {"max_files", "skip_dirs", "skip_files"})  # fmt: skip
        caller_files = callers.get("max_files")
        if not isinstance(caller_files, int) or caller_files < 0:
            raise DataFileError(path, "[callers] max_files", "a non-negative integer", caller_files)
        max_files = interp.get("max_files")
        if not isinstance(max_files, int) or max_files < 1:
            raise DataFileError(path, "[interpret] max_files", "a positive integer", max_files)
        column = interp.get("column")
        if column != "interpret":
            raise DataFileError(path, "[interpret] column", '"interpret"', column)
        return cls(
            markers=strings(root, "markers", "[root]"),
            column=column,
            patterns=strings(interp, "patterns", "[interpret]"),
            files=strings(interp, "files", "[interpret]"),
            comment_files=strings(interp, "comment_files", "[interpret]"),
            skip_dirs=frozenset(strings(interp, "skip_dirs", "[interpret]")),
            max_files=max_files,
            options=strings(interp, "options", "[interpret]"),
            vendor_paths=strings(
                table_keys(path, "[vendor]", doc.get("vendor", {}), {"paths"}), "paths", "[vendor]"
            ),
            caller_files=caller_files,
            caller_skip_dirs=frozenset(strings(callers, "skip_dirs", "[callers]")),
            caller_skip_files=strings(callers, "skip_files", "[callers]"),
            namespaces={
                prefix: strings(spaces, prefix, "[namespaces]")
                for spaces in [doc.get("namespaces", {})]
                for prefix in spaces
            },
        )


def vendor_backend(shown_path: str, rule: Rule | None = None) -> str | None:
    """The ``[vendor] paths`` pattern ``shown_path`` matches (code built by a vendor's own
    Triton fork, e.g. triton-ascend for ``*/_ascend/*``), or None."""
    rule = rule or Rule.load()
    path = "/" + shown_path.replace("\\", "/").lstrip("/")
    return next((p for p in rule.vendor_paths if fnmatchcase(path, p)), None)


def kernel_columns(names: Iterable[str], rule: Rule | None = None) -> list[tuple[str, ...]]:
    """The column patterns (``[namespaces]``) a kernel naming ``names`` (qualnames) is held
    to, one tuple per namespace it names; empty: every column."""
    rule = rule or Rule.load()
    return [
        columns
        for prefix, columns in rule.namespaces.items()
        if any(n == prefix or n.startswith(prefix + ".") for n in names)
    ]


def runs_in(column: str, held: Sequence[tuple[str, ...]]) -> bool:
    """Whether a kernel held to ``held`` (``kernel_columns``) can run in ``column``."""
    return all(any(fnmatchcase(column, p) for p in columns) for columns in held)


def repository_root(path: str | Path, markers: Sequence[str]) -> Path:
    """The nearest folder at or above ``path`` holding one of ``markers``; with none, the first
    folder above ``path`` that is not a Python package (a package's parent is its project)."""
    start = Path(path).resolve()
    here = start if start.is_dir() else start.parent
    for folder in (here, *here.parents):
        if any((folder / m).exists() for m in markers):
            return folder
    folder = here
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def repository_python_files(
    paths: Sequence[str | Path], rule: Rule | None = None
) -> tuple[list[Path], bool]:
    """The Python files of the repositories above ``paths`` (``[root]`` markers), outside the
    ``[interpret] skip_dirs`` and the ``[callers]`` test suites, at most ``[callers]
    max_files`` of them walked: where a wrapper of the scanned files may be called from
    (matrix/data/targets.toml [callers]); and whether the walk stopped at that bound."""
    rule = rule or Rule.load()
    out: list[Path] = []
    seen = 0
    for root in dict.fromkeys(repository_root(p, rule.markers) for p in paths):
        for folder, dirs, files in os.walk(root):
            skip = rule.skip_dirs | rule.caller_skip_dirs
            dirs[:] = sorted(d for d in dirs if d not in skip)
            for name in sorted(files):
                if not name.endswith(".py") or any(
                    fnmatchcase(name, g) for g in rule.caller_skip_files
                ):
                    continue
                seen += 1
                if seen > rule.caller_files:
                    return out, True
                out.append(Path(folder) / name)
    return out, False


# ``TRITON_INTERPRET=0``, ``os.environ["TRITON_INTERPRET"] = "0"``: the interpreter turned off
_OFF = re.compile(rb"""TRITON_INTERPRET['"]?\]?\s*[:=,]\s*['"]?(0|false|False)\b""")


def _scope_of(path: Path, root: Path, rule: Rule) -> Path | None:
    """Where interpreter evidence in ``path`` applies: the whole repository (None) for a test
    suite, a CI, build or config file, docs, or a module at the root; else the top folder of
    the repository that holds the module (gpu-mode/lectures: lecture_014's helper reading
    TRITON_INTERPRET says nothing of how lecture_018's kernels run)."""
    parts = path.relative_to(root).parts
    if len(parts) < 2 or not path.name.endswith((".py", ".pyi")):
        return None
    if any(p in rule.caller_skip_dirs for p in parts[:-1]) or any(
        fnmatchcase(path.name, g) for g in rule.caller_skip_files
    ):
        return None
    return root / parts[0]


def searched_files(root: Path, rule: Rule) -> tuple[list[Path], bool]:
    """The files under ``root`` that ``[interpret] files`` names, outside its ``skip_dirs``, in
    a stable order, at most ``max_files`` of them; and whether the walk stopped at that bound
    (what reads the repository's text: the interpreter search, matrix.gate.reach)."""
    out: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in rule.skip_dirs)
        for name in sorted(files):
            if any(fnmatchcase(name, g) for g in rule.files):
                if len(out) >= rule.max_files:
                    return out, True
                out.append(Path(folder) / name)
    return out, False


def _evidence_in(root: Path, rule: Rule) -> tuple[list[str], str, set[Path | None]]:
    """``path:line: text`` of the lines under ``root`` that show interpreter runs (at most
    ``EVIDENCE_SHOWN``), why the search was cut short ("" when it read everything it should),
    and where the evidence applies (``_scope_of`` of every file holding some)."""
    found: list[str] = []
    scopes: set[Path | None] = set()
    needles = [p.encode() for p in rule.patterns]
    paths, cut = searched_files(root, rule)
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as e:
            return found, f"{path} could not be read ({e.strerror or e})", {None}
        if not any(n in data for n in needles):
            continue
        commented = any(fnmatchcase(path.name, g) for g in rule.comment_files)
        for i, line in enumerate(data.splitlines(), 1):
            if commented and line.lstrip().startswith(b"#"):
                continue  # a comment runs nothing
            if any(n in line for n in needles) and not _OFF.search(line):
                text = line.decode("utf-8", "replace").strip()[:100]
                if len(found) < EVIDENCE_SHOWN:
                    found.append(f"{path.relative_to(root.parent)}:{i}: {text}")
                scopes.add(_scope_of(path, root, rule))
                break
        if None in scopes and len(found) >= EVIDENCE_SHOWN:
            return found, "", scopes  # (the whole repository: nothing more to learn)
    if cut:
        return found, f"more than {rule.max_files} files under {root}", {None}
    return found, "", scopes


def infer(
    paths: Sequence[str | Path], options: Mapping[str, Any], rule: Rule | None = None
) -> InferredTargets | None:
    """What the team's repositories above ``paths`` say about the interpreter; ``options``
    are the gate's own (``--tests-device``). None when there is nothing to read (no paths)."""
    rule = rule or Rule.load()
    if not paths:
        return None
    roots = list(dict.fromkeys(repository_root(p, rule.markers) for p in paths))
    shown = ", ".join(str(r) for r in roots)
    given = [f"--{k.replace('_', '-')} {options[k]}" for k in rule.options if options.get(k)]
    if given:
        why = f"{given[0]}: the team's tests run on CPU, under the interpreter"
        return InferredTargets(shown, (), why, tuple(given))
    evidence: list[str] = []
    scopes: set[Path | None] = set()
    for root in roots:
        found, cut, where = _evidence_in(root, rule)
        if cut:
            why = f"the search for interpreter use stopped ({cut}): the interpreter counts"
            return InferredTargets(shown, (), why, tuple(found))
        evidence += found
        scopes |= where
    if evidence:
        why = f"{rule.patterns[0]} found in the repository: the interpreter counts"
        if None in scopes:
            return InferredTargets(shown, (), why, tuple(evidence[:EVIDENCE_SHOWN]))
        folders = tuple(sorted(str(s) for s in scopes if s is not None))
        why += " for the code under " + ", ".join(f"{Path(f).name}/" for f in folders)
        return InferredTargets(shown, (), why, tuple(evidence[:EVIDENCE_SHOWN]), folders)
    why = f"inferred: no {rule.patterns[0]} in the repository ({shown}); declare targets to change"
    return InferredTargets(shown, (rule.column,), why, ())
