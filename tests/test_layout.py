"""The layout's promises: one folder per probe, and one owner of releases."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from matrix.catalog import PROBES

MATRIX = Path(__file__).resolve().parent.parent / "matrix"
PROBES_DIR = MATRIX / "probes"


def test_every_catalog_entry_is_a_probe_folder_and_every_folder_an_entry() -> None:
    folders = {p.parent.name for p in PROBES_DIR.glob("*/probe.py")}
    names = {p.name for p in PROBES}
    assert sorted(names - folders) == [], "catalog entries without matrix/probes/<name>/probe.py"
    assert sorted(folders - names) == [], "probe folders without a catalog entry"
    # No probe module outside its folder: matrix/probes/ holds the folders and support/.
    assert sorted(p.name for p in PROBES_DIR.glob("*.py")) == ["__init__.py"]


def test_every_probe_module_defines_observe() -> None:
    for path in sorted(PROBES_DIR.glob("*/probe.py")):
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


# A release (or numpy) spelled as text: "3.9.0", "3.4", "2.".
_RELEASE_TEXT = re.compile(r"^\d+\.\d*")
_AFFIXES = ("startswith", "endswith")


def release_text_comparisons(path: Path, root: Path = MATRIX.parent) -> list[str]:
    """Releases compared as text outside matrix.core: a comparison with (or membership in) a
    release-like string, or ``.startswith``/``.endswith`` of one. Text orders "3.10" before
    "3.9" and "3.9" apart from "3.9.0"; ``Release`` does neither."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        operands: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in _AFFIXES:
            operands = list(node.args)
        texts = set().union(*(_literals(o) for o in operands))
        hits = sorted(t for t in texts if isinstance(t, str) and _RELEASE_TEXT.match(t))
        if hits:
            found.append(f"{path.relative_to(root)}:{node.lineno}: release text {hits}")
    return found


def test_no_release_is_compared_as_text_outside_core() -> None:
    found = []
    for path in sorted(MATRIX.rglob("*.py")):
        if path != MATRIX / "core.py":
            found += release_text_comparisons(path)
    assert found == []


def test_the_release_text_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        'a = env["triton"] == "3.9.0"\nb = v.startswith("3.")\nc = t in ("3.4", "3.5")\n'
        'd = r >= Release.parse("3.4.0", "x")\ne = s.startswith(("*", "tensordesc"))\n'
    )
    assert release_text_comparisons(bad, tmp_path) == [
        "bad.py:1: release text ['3.9.0']",
        "bad.py:2: release text ['3.']",
        "bad.py:3: release text ['3.4', '3.5']",
    ]


# ------------------------------------------------------------------------------- layering

ROOT = MATRIX.parent
# DESIGN's order, lowest first: a module may import its own layer and the layers before it.
# The results contract sits just above core: every stage that writes or reads a raw file
# (measure, analyze, scan, gate, report) imports it, and it imports core alone.
LAYERS = ("core", "results", "compat", "kernels", "backends", "probes", "measure", "analyze",
          "scan", "gate", "report", "entry")  # fmt: skip
# Module name prefixes, most specific first. The entry points are the documented short
# commands (``python -m matrix.orchestrate`` joins measuring and the report; the others
# forward to their stage); nothing imports them.
LAYER_OF = (
    ("matrix.core", "core"),
    ("matrix.cli", "core"),
    ("matrix.exitcodes", "core"),
    ("matrix.release_range", "core"),
    ("matrix.newer_syntax", "core"),
    ("matrix.results", "results"),
    ("compat", "compat"),
    ("kernels", "kernels"),
    ("matrix.backends", "backends"),
    ("matrix.catalog", "probes"),
    ("matrix.probes", "probes"),
    ("matrix.measure", "measure"),
    ("matrix.analyze", "analyze"),
    ("matrix.scan", "scan"),
    ("matrix.gate", "gate"),
    ("matrix.report", "report"),
    ("matrix.__main__", "entry"),
    ("matrix.commands", "entry"),
    ("matrix.orchestrate", "entry"),
    ("matrix.run", "entry"),
    ("matrix.verify", "entry"),
    ("matrix.timings", "entry"),
)


def layer_of(module: str) -> str | None:
    if module == "matrix":  # the package's own __init__
        return "core"
    for prefix, layer in LAYER_OF:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return None


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == (
        "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The project modules ``module`` imports at run time (anywhere in it, functions too;
    not under ``if TYPE_CHECKING:``)."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
        stack.extend(ast.iter_child_nodes(node))
    # A name like matrix.gate.compare.x resolves to its module; other packages are not ours.
    out = set()
    for name in found:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    paths = [p for pkg in ("matrix", "compat", "kernels") for p in (root / pkg).rglob("*.py")]
    names = {_module_name(p, root): p for p in paths if "__pycache__" not in p.parts}
    known = set(names)
    return {
        name: _imports(ast.parse(path.read_text(encoding="utf-8")), name,
                       path.name == "__init__.py", known)
        for name, path in names.items()
    }  # fmt: skip


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Imports of a later layer, and modules that have no layer."""
    found = []
    for module, targets in sorted(graph.items()):
        mine = layer_of(module)
        if mine is None:
            found.append(f"{module}: no layer (add it to LAYER_OF)")
            continue
        for target in sorted(targets):
            theirs = layer_of(target)
            if theirs is not None and LAYERS.index(theirs) > LAYERS.index(mine):
                found.append(f"{module} ({mine}) imports {target} ({theirs})")
    return found


def test_imports_point_one_way() -> None:
    graph = import_graph()
    assert len(graph) > 100  # it read the sources
    assert cycles(graph) == []
    assert upward(graph) == []


def test_the_layering_check_finds_cycles_and_upward_imports(tmp_path: Path) -> None:
    def write(module: str, text: str) -> None:
        path = tmp_path / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.parents:
            if parent == tmp_path:
                break
            (parent / "__init__.py").touch()
        path.write_text(text)

    write("matrix.core", "")
    write("compat.x", "")
    write("kernels.x", "")
    write("matrix.gate.a", "from matrix.gate import b\n")
    write("matrix.gate.b", "def f():\n    from . import a\n")  # a lazy import still counts
    write("matrix.measure.m", "import matrix.report.r\nfrom matrix.core import X\n")
    write("matrix.report.r", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                             "    from matrix.report import s\n")  # fmt: skip
    write("matrix.report.s", "import matrix.report.r\n")
    write("matrix.stray", "")
    graph = import_graph(tmp_path)
    assert graph["matrix.measure.m"] == {"matrix.report.r", "matrix.core"}
    assert cycles(graph) == [["matrix.gate.a", "matrix.gate.b"]]  # r -> s is type-only
    assert upward(graph) == [
        "matrix.measure.m (measure) imports matrix.report.r (report)",
        "matrix.stray: no layer (add it to LAYER_OF)",
    ]


# ------------------------------------------------------------------------- status literals

# Words of the status tables in matrix.core (results, installs, test outcomes, compiles).
# "ok" is checked only where an install is compared: census entries and feature trials have an
# "ok" of their own.
from matrix import core  # noqa: E402

STATUS_WORDS = (
    set(core.RESULT_STATUSES) | set(core.TEST_OUTCOMES) | set(core.COMPILE_STATUSES)
) | (set(core.INSTALL_STATUSES) - {"ok"})


def _literals(node: ast.AST) -> set[str]:
    """String constants of a comparison operand, including those inside a tuple/set/list."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)}
    return set()


def stray_status_literals(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        words: set[str] = set()
        membership = all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
        # ``"error" in record`` asks for a key; ``status in ("a", "b")`` compares words.
        for operand in node.comparators if membership else (node.left, *node.comparators):
            words |= _literals(operand)
        hits = sorted(words & STATUS_WORDS)
        if "ok" in words and "install" in ast.unparse(node):
            hits.append("ok")
        if hits:
            found.append(f"{path.relative_to(root)}:{node.lineno}: compares with {hits}")
    return found


# Files whose words are another vocabulary that happens to share a spelling, and why.
OTHER_VOCABULARY = {
    # compat.trials' verdicts ("ok", "compiled", "failed: ..."): compat imports no matrix code.
    MATRIX / "probes" / "tensor_descriptor" / "probe.py",
}


def test_status_words_are_compared_only_through_the_tables() -> None:
    found = []
    for path in sorted(MATRIX.rglob("*.py")):
        if path != MATRIX / "core.py" and path not in OTHER_VOCABULARY:
            found += stray_status_literals(path)
    assert found == []


def test_the_status_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    text = (
        'a = x.status == "crashed"\nb = t["outcome"] in ("passed", "xpassed")\n'
        'c = run.install.get("status") != "ok"\nd = census.status == "ok"\n'
        'e = "error" in record\n'
    )
    bad.write_text(text)
    assert stray_status_literals(bad, tmp_path) == [
        "bad.py:1: compares with ['crashed']",
        "bad.py:2: compares with ['passed', 'xpassed']",
        "bad.py:3: compares with ['ok']",
    ]


# ------------------------------------------------------------------------------------ sizes

MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 100
# Still over, each with why; a file or function that comes under the limit must leave the list
# (the test fails on a stale entry), so the list only shrinks.
LONG_MODULES: set[str] = set()
LONG_FUNCTIONS = {
    # A Triton kernel measured by the splitk probe (one body is what compiles).
    "kernels/fused.py:splitk_fused_kernel",
}


def oversized(root: Path = ROOT, packages: tuple[str, ...] = ("matrix", "compat", "kernels")) -> (
    list[str]
):  # fmt: skip
    """``path`` for each module over MAX_MODULE_LINES, ``path:function`` for each function
    (methods and nested ones too) over MAX_FUNCTION_LINES, sorted."""
    found = []
    for path in sorted(p for pkg in packages for p in (root / pkg).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(rel)
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                    found.append(f"{rel}:{node.name}")
    return found


def test_no_module_or_function_is_too_long() -> None:
    found = set(oversized())
    assert sorted(found - LONG_MODULES - LONG_FUNCTIONS) == [], "split these (or list them)"
    assert sorted((LONG_MODULES | LONG_FUNCTIONS) - found) == [], "no longer long: unlist them"


def test_the_size_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    (tmp_path / "matrix").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "matrix" / "long.py").write_text(f"def f():\n{body}" + "\n" * MAX_MODULE_LINES)
    at_limit = "".join(body.splitlines(keepends=True)[1:])  # the def line and 99: 100 lines
    (tmp_path / "matrix" / "short.py").write_text(f"def g():\n{at_limit}")
    assert oversized(tmp_path, ("matrix",)) == ["matrix/long.py", "matrix/long.py:f"]
