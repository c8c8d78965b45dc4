"""The layout's promises: one probe module per catalog entry, and one owner of releases."""

from __future__ import annotations

import ast
from pathlib import Path

from matrix.catalog import PROBES

MATRIX = Path(__file__).resolve().parent.parent / "matrix"
PROBES_DIR = MATRIX / "probes"


def test_every_catalog_entry_has_a_probe_module_and_every_module_an_entry() -> None:
    modules = {p.stem for p in PROBES_DIR.glob("*.py") if p.stem != "__init__"}
    names = {p.name for p in PROBES}
    assert sorted(names - modules) == [], "catalog entries without matrix/probes/<name>.py"
    assert sorted(modules - names) == [], "probe modules without a catalog entry"


def test_every_probe_module_defines_observe() -> None:
    for path in sorted(PROBES_DIR.glob("*.py")):
        if path.stem == "__init__":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "observe" in defs, path


def _violations(path: Path) -> list[str]:
    """Release parsing or version sort keys outside matrix.core."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "packaging.version":
            found.append(f"{path}:{node.lineno}: imports packaging.version")
        if isinstance(node, ast.Import) and any(a.name == "packaging.version" for a in node.names):
            found.append(f"{path}:{node.lineno}: imports packaging.version")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in ("Version", "parse_version", "LooseVersion", "StrictVersion"):
                found.append(f"{path}:{node.lineno}: calls {name}(")
        # a sort key of its own: def _version_key / release_sort_key / numpy_key ...
        words = ("version", "release", "numpy")
        if (
            isinstance(node, ast.FunctionDef)
            and node.name.endswith("key")
            and any(w in node.name for w in words)
        ):
            found.append(f"{path}:{node.lineno}: defines {node.name}")
    return found


def test_only_core_parses_releases_or_sorts_versions() -> None:
    found = []
    for path in sorted(MATRIX.rglob("*.py")):
        if path != MATRIX / "core.py":
            found += _violations(path)
    assert found == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from packaging.version import Version\ndef _version_key(v):\n    return Version(v)\n"
    )
    assert len(_violations(bad)) == 3
