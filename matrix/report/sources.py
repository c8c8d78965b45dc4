"""What a probe establishes and how, read from ``matrix/probes/<name>/probe.py`` without
importing it.

Probe modules import Triton; the report must work without it, so the module is parsed with
``ast``: its docstring says what the probe establishes, its source says how.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from matrix.catalog import PROBE_MODULE, PROBES_DIR, probe_path


@dataclass(frozen=True)
class ProbeSource:
    """A probe module as text: docstring, top-level definitions with their docstrings, source."""

    name: str
    path: str
    exists: bool
    docstring: str = ""
    source: str = ""
    definitions: list[tuple[str, str]] = field(default_factory=list)
    problem: str = ""


def read_probe_source(name: str, probes_dir: Path = PROBES_DIR) -> ProbeSource:
    """The probe module for ``name``; ``exists`` is False (and says where it looked) if absent."""
    path = probe_path(name, probes_dir)
    shown = _shown_path(path)
    if not path.is_file():
        return ProbeSource(name, shown, False, problem=f"{shown} does not exist (yet)")
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as e:
        return ProbeSource(name, shown, True, source=source, problem=f"{shown} does not parse: {e}")
    defs = [
        (node.name, ast.get_docstring(node) or "")
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
    ]
    return ProbeSource(name, shown, True, ast.get_docstring(tree) or "", source, defs)


def _shown_path(path: Path) -> str:
    """``matrix/probes/x/probe.py`` where possible: pages must not depend on the checkout's
    location."""
    parts = path.resolve().parts
    if "matrix" in parts:
        i = len(parts) - 1 - parts[::-1].index("matrix")
        return "/".join(parts[i:])
    # A probe folder's module is named by its folder (every one is probe.py).
    return "/".join(path.parts[-2:]) if path.name == PROBE_MODULE else path.name
