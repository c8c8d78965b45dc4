"""The scanner decides per release from the committed recorded data (reports/raw: ten
releases, 3.0.0-3.9.0), resolves names the ways real code spells them, and fails closed.

The releases asserted here are the recorded ones (what the matrix measured), not hand-kept
knowledge: if a re-measured matrix disagrees, these tests say where.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from matrix import scan
from matrix.analyze.census import censuses_from_runs
from matrix.results import Run, read_runs

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "reports" / "raw"
HEAD = "import triton\nimport triton.language as tl\n\n\n"


@pytest.fixture(scope="module")
def recorded() -> tuple[list[Run], dict]:
    runs = read_runs(RAW)
    return runs, censuses_from_runs(runs)


def scan_for(
    recorded: tuple[list[Run], dict], paths: Sequence[Path], candidate: str | None
) -> scan.ScanReport:
    runs, censuses = recorded
    report = scan.scan_paths(paths, censuses=censuses)
    scan.judge(report.findings, runs, candidate, censuses)
    return report


def effects(report: scan.ScanReport) -> set[tuple[int, str, str]]:
    return {(f.line, f.rule.id, f.effect) for f in report.findings}


def kernel(tmp_path: Path, body: str, head: str = HEAD, name: str = "k.py") -> Path:
    path = tmp_path / name
    path.write_text(head + "@triton.jit\ndef k(p, n, BLOCK: tl.constexpr):\n" + body)
    return path


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "matrix", "scan", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


# ---------------------------------------------------------------- rules tied to their data


def test_annotated_constexpr_global_follows_the_fingerprint(recorded, tmp_path: Path) -> None:
    # fp.rules global_annotated: accepted by the 3.2.0 compiler, rejected from 3.3.1 on
    src = tmp_path / "k.py"
    src.write_text(HEAD + "X: tl.constexpr = 3\n")
    assert effects(scan_for(recorded, [src], "3.2.0")) == {(5, "TRI013", "does-not-affect")}
    assert effects(scan_for(recorded, [src], "3.3.1")) == {(5, "TRI013", "breaks")}


def test_triton_ops_follows_the_census(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text("from triton.ops import matmul\n")
    assert effects(scan_for(recorded, [src], "3.1.0")) == {(1, "TRI016", "does-not-affect")}
    report = scan_for(recorded, [src], "3.2.0")
    assert effects(report) == {(1, "TRI016", "breaks")}
    # the releases in the note are the census's, not the rules file's
    assert "present on 3.0.0-3.1.0, absent on 3.2.0-3.9.0" in report.findings[0].note


def test_block_pointers_deprecated_is_a_change_removed_a_break(recorded, tmp_path: Path) -> None:
    src = kernel(
        tmp_path,
        "    b = tl.make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))\n"
        "    x = tl.load(b, boundary_check=(0,))\n",
    )
    assert {e for _, _, e in effects(scan_for(recorded, [src], "3.6.0"))} == {"does-not-affect"}
    assert effects(scan_for(recorded, [src], "3.8.0")) == {
        (7, "TRI001", "changes"),
        (8, "TRI002", "does-not-affect"),  # boundary_check row: accepted until 3.8.0
    }
    # 3.9.0: each use once (TRI002, not also the census's TRI101 for boundary_check)
    assert effects(scan_for(recorded, [src], "3.9.0")) == {
        (7, "TRI001", "breaks"),
        (8, "TRI002", "breaks"),
    }


def test_a_name_on_no_recorded_release_breaks_with_a_did_you_mean(recorded, tmp_path: Path) -> None:
    src = kernel(
        tmp_path,
        "    a = tl.math.tanh(tl.load(p))\n    b = tl.cidv(n, 2)\n"
        "    c = tl.dot(a, a, trans_b=True)\n",
    )
    report = scan_for(recorded, [src], "3.0.0")
    got = {(f.line, f.rule.id, f.effect): f.message for f in report.findings}
    assert set(got) == {(7, "TRI100", "breaks"), (8, "TRI100", "breaks"), (9, "TRI101", "breaks")}
    assert "exists on no recorded release (nearest: triton.language." in got[7, "TRI100", "breaks"]
    assert "libdevice.tanh" in got[7, "TRI100", "breaks"]
    assert "(nearest: triton.language.cdiv)" in got[8, "TRI100", "breaks"]
    assert "no keyword trans_b on any recorded release" in got[9, "TRI101", "breaks"]
    assert report.works_on[str(src)] is None  # no works-on range
    assert {f.effect for f in scan_for(recorded, [src], "3.9.0").findings} == {"breaks"}


def test_private_names_are_checked_like_any_other(recorded, tmp_path: Path) -> None:
    src = kernel(
        tmp_path, "    x = tl._experimental_descriptor_load(p, [0], [BLOCK], tl.float32)\n"
    )
    assert effects(scan_for(recorded, [src], "3.3.1")) == {(7, "TRI011", "does-not-affect")}
    assert effects(scan_for(recorded, [src], "3.4.0")) == {(7, "TRI011", "breaks")}
    # a private name the census lists on no release is not called missing (it records only
    # the private names a module puts in __all__)
    other = kernel(tmp_path, "    x = tl.core._unwrap_if_constexpr(n)\n", name="o.py")
    assert scan_for(recorded, [other], "3.9.0").findings == []


# ----------------------------------------------------------------------- name resolution


def test_if_else_and_try_except_imports_keep_their_own_target(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        "import triton\nimport triton.language as tl\n"
        "try:\n"
        "    from triton.tools.tensor_descriptor import TensorDescriptor\n"
        "except ImportError:\n"
        "    from triton.tools.experimental_descriptor import TensorDescriptor\n"
        "if hasattr(tl, 'extra'):\n"
        "    from triton.language.extra import libdevice\n"
        "else:\n"
        "    from triton.language.math import libdevice\n"
    )
    report = scan_for(recorded, [src], "3.9.0")
    by_line = {f.line: f.qualname for f in report.findings if f.rule.id == "TRI011"}
    assert by_line == {
        4: "triton.tools.tensor_descriptor.TensorDescriptor",
        6: "triton.tools.experimental_descriptor.TensorDescriptor",
    }


def test_star_import_binds_the_names(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        "import triton\nfrom triton.language import *\n\n\n@triton.jit\n"
        "def k(p, n, BLOCK: constexpr):\n"
        "    b = make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))\n"
    )
    assert effects(scan_for(recorded, [src], "3.9.0")) == {(7, "TRI001", "breaks")}


def test_literal_getattr_and_import_module(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        "import importlib\nimport triton\nlang = importlib.import_module('triton.language')\n"
        "\n\n@triton.jit\ndef k(p, n, BLOCK: lang.constexpr):\n"
        "    b = lang.make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))\n"
        "    b = getattr(lang, 'advance')(b, (BLOCK,))\n"
    )
    assert effects(scan_for(recorded, [src], "3.9.0")) == {
        (8, "TRI001", "breaks"),
        (9, "TRI001", "breaks"),
    }


def test_module_level_assignment_alias(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text("import triton\n_tanh = triton.language.math.tanh\n\n_tanh(1.0)\n")
    report = scan_for(recorded, [src], "3.9.0")
    assert {(f.line, f.rule.id) for f in report.findings if f.effect == "breaks"} >= {(4, "TRI100")}


def test_notebook_code_cells_are_read(recorded, tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "source": ["# tl.make_block_ptr is only text here\n"]},
        {"cell_type": "code", "source": ["%matplotlib inline\n", "import triton.language as tl\n"]},
        {"cell_type": "code", "source": "b = tl.make_block_ptr(0, (1,), (1,), (0,), (1,), (0,))"},
    ]
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"cells": cells, "nbformat": 4}))
    report = scan_for(recorded, [tmp_path], "3.9.0")
    assert report.files == [str(nb)]
    assert effects(report) == {(4, "TRI001", "breaks")}


# ------------------------------------------------------------------------------ precision


def test_a_conditional_fixed_accumulator_dtype_is_fine(tmp_path: Path) -> None:
    src = kernel(
        tmp_path,
        "    acc_dtype = tl.float32 if n > 0 else tl.int32\n"
        "    acc = tl.zeros((BLOCK, BLOCK), dtype=acc_dtype)\n"
        "    acc = tl.dot(tl.load(p), tl.load(p), acc)\n"
        "    h = tl.zeros((BLOCK, BLOCK), dtype=tl.float16)\n"
        "    h = tl.dot(tl.load(p), tl.load(p), h)\n",
    )
    report = scan.scan_paths([src], scan.select_rules(scan.load_rules(), ["TRI005"]))
    assert {(f.line, f.rule.id) for f in report.findings} == {(11, "TRI005")}


def test_num_ctas_one_is_fine(tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(HEAD + "a = triton.Config({}, num_ctas=1)\nb = triton.Config({}, num_ctas=2)\n")
    report = scan.scan_paths([src], scan.select_rules(scan.load_rules(), ["TRI015"]))
    assert {(f.line, f.rule.id) for f in report.findings} == {(6, "TRI015")}


# ---------------------------------------------------------------------------- fail closed


def test_nothing_to_scan_exits_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli(str(empty))
    assert proc.returncode == 2 and "nothing to scan: no .py or .ipynb file" in proc.stderr
    (empty / "README.md").write_text("import triton\n")
    assert run_cli(str(empty)).returncode == 2  # nothing Python


def test_every_file_skipped_exits_2(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"import triton\nx = '\xe9'\n")  # latin-1, no coding line
    (tmp_path / "b.py").write_text("import triton\ndef (:\n")  # broken on any Python
    proc = run_cli(str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nothing scanned: all 2 file(s)" in proc.stderr


def test_an_unrecorded_candidate_exits_2(tmp_path: Path) -> None:
    src = tmp_path / "clean.py"
    src.write_text("import triton\n")
    proc = run_cli("--results", str(RAW), "--candidate", "3.99", str(src))
    assert proc.returncode == 2
    assert "--candidate 3.99.0: nothing recorded for it" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_new_use_in_a_baselined_file_is_reported(tmp_path: Path) -> None:
    census = ROOT / "tests" / "fixtures" / "census"
    src = kernel(tmp_path, "    q = tl.advance(p, (0,))\n")
    base = tmp_path / "base.json"
    args = ("--select", "TRI1", "--results", str(census), "--candidate", "3.9.0")
    assert run_cli(*args, "--write-baseline-file", str(base), str(src)).returncode == 0
    assert run_cli(*args, "--baseline-file", str(base), str(src)).returncode == 0
    src.write_text(src.read_text() + "    r = tl.advance(q, (1,))\n")
    proc = run_cli(*args, "--format", "json", "--baseline-file", str(base), str(src))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = json.loads(proc.stdout)["findings"]
    assert [(f["line"], f["rule"]) for f in found] == [(8, "TRI100")]


def test_sarif_uris_are_relative_to_the_root(tmp_path: Path) -> None:
    src = kernel(tmp_path, "    b = tl.make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))\n")
    proc = run_cli("--format", "sarif", "--sarif-root", str(tmp_path), str(src))
    run = json.loads(proc.stdout)["runs"][0]
    loc = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "k.py", "uriBaseId": "SRCROOT"}
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_default_excludes_are_said_and_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    kernel(tmp_path / "dist", "    b = tl.make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))\n")
    (tmp_path / "ok.py").write_text("import triton\n")
    proc = run_cli(str(tmp_path))
    assert proc.returncode == 0 and "1 file(s) under folders excluded by default" in proc.stderr
    proc = run_cli("--no-default-excludes", str(tmp_path))
    assert proc.returncode == 1 and "TRI001" in proc.stdout


# ----------------------------------------------------------------------------- what is parsed


def test_only_files_that_can_reach_triton_are_parsed(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text(
        "import triton\nimport triton.language as tl\n"
        "class Tuner(triton.runtime.Autotuner):\n    pass\n"
        "def make():\n    return Tuner\n"
        "def fast_add(x):\n    return x\n"
    )
    # a plain function of a kernel module is no Triton object; "tl" inside "title" is no use
    (pkg / "plain.py").write_text("from pkg.kern import fast_add\ntitle = fast_add(1)\n")
    # a re-exported tl, a subclass of a Triton class and a function using it are carriers
    (pkg / "uses_tl.py").write_text("from pkg.kern import tl\nx = tl.float32\n")
    (pkg / "uses_make.py").write_text("from pkg.kern import make\nmake()\n")
    report = scan.scan_paths([pkg])
    parsed = {Path(f.path).name for f in report.findings} | {Path(u.path).name for u in report.uses}
    assert "plain.py" not in parsed
    assert {"uses_tl.py", "uses_make.py"} <= parsed
    assert scan.import_words(b"from . import utils\nfrom a.kern import (x)\nimport b.c\n") == {
        b"utils",
        b"kern",
        b"c",
        b"x",
    }


# ------------------------------------------------------------------------ release-only branches


def test_a_branch_for_older_releases_does_not_affect_it(recorded, tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        "import operator\nimport triton\nimport triton.language as tl\n"
        "from packaging.version import Version\n"
        'if Version(triton.__version__) >= Version("3.0.0"):\n'
        "    from triton.language.extra import libdevice\n"
        "    fast_tanh = libdevice.tanh\n"
        "else:\n"
        "    fast_tanh = tl.math.tanh\n"  # line 9: gone since 3.0, only run before it
        'if compare_version("triton", operator.lt, "3.0.0"):\n'
        "    from triton.language.math import rsqrt_old\n"  # line 11
        'if not triton.__version__ >= "3.0":\n'
        "    z = tl.math.div_rz\n"  # line 13
        "if DEVICE == 'xpu':\n"
        "    w = tl.math.fast_dividef\n"  # line 15: a test the scanner cannot evaluate
    )
    report = scan_for(recorded, [src], "3.9.0")
    got = {(f.line, f.rule.id, f.effect) for f in report.findings if f.line in (9, 11, 13, 15)}
    assert got == {
        (9, "TRI100", "does-not-affect"),
        (11, "TRI009", "does-not-affect"),
        (13, "TRI100", "does-not-affect"),
        (15, "TRI100", "breaks"),
    }
    note = next(f.note for f in report.findings if f.line == 9)
    assert note == "in a branch for not (triton >= 3.0.0) only: not run on 3.9.0"
    # the alias bound in each branch keeps its own target; the assignment is no use
    assert not [f for f in report.findings if f.line == 7]


def test_version_guards_read_only_what_they_can_evaluate() -> None:
    import ast

    from matrix.scan.guards import version_guards

    src = (
        "import triton\nimport importlib.metadata as md\n"
        'if md.version("triton") < "3.2":\n    a = 1\nelif True:\n    b = 2\n'
        'IS_NEW = triton.__version__ >= "3.4"\nif IS_NEW:\n    c = 3\n'
        'if triton.__version__.startswith("3."):\n    d = 4\n'
    )
    module = scan.SourceModule("k.py", "k", False, src, ast.parse(src))
    guards = version_guards(module.tree, scan.Imports(module))
    assert [(g.first, g.last, g.text()) for g in guards] == [
        (4, 4, "triton < 3.2.0"),
        (5, 6, "not (triton < 3.2.0)"),
        (9, 9, "triton >= 3.4.0"),
    ]


def test_softmax_keep_dims_only_where_the_result_changes(recorded, tmp_path: Path) -> None:
    # keep_dims False (3.8.0) -> None (3.9.0): the same result for the default dim; not for
    # another dim (reduced without the axis, the broadcast back is wrong or refused on 3.8.0)
    src = kernel(
        tmp_path,
        "    x = tl.load(p + tl.arange(0, BLOCK))\n"
        "    a = tl.softmax(x)\n"  # line 8
        "    c = tl.softmax(x, dim=1)\n"  # line 9
        "    tl.store(p + tl.arange(0, BLOCK), a + c)\n",
    )
    found = effects(scan_for(recorded, [src], "3.9.0"))
    assert {(line, rule) for line, rule, _ in found if rule == "TRI103"} == {(9, "TRI103")}
    assert (9, "TRI103", "changes") in found


def test_a_name_the_census_cannot_see_on_later_releases_is_unknown_not_nowhere(
    recorded, tmp_path: Path
) -> None:
    # triton.experimental.gluon exists from 3.4.0, but the census does not list its names:
    # absent on 3.0.0-3.3.1 is measured, the rest is not
    src = tmp_path / "g.py"
    src.write_text("from triton.experimental import gluon\n\n\n@gluon.jit\ndef k():\n    pass\n")
    report = scan_for(recorded, [src], "3.9.0")
    (f,) = [f for f in report.findings if f.rule.id == "TRI100"]
    assert "exists on no recorded release" not in f.message
    assert "absent on 3.0.0-3.3.1; not visible to the census on 3.4.0-3.9.0" in f.message
    assert f.effect == "unknown" and f.fails
    assert effects(scan_for(recorded, [src], "3.3.1")) >= {(4, "TRI100", "breaks")}


def test_positional_after_other_follows_the_census(recorded, tmp_path: Path) -> None:
    # TRI007 is tied to the census's signatures: 3.8.0 accepts a 4th positional tl.load
    # argument, 3.9.0 refuses it; with *args the count is not known
    src = kernel(
        tmp_path,
        "    x = tl.load(p, None, 0.0, (0,))\n"  # line 7
        "    y = tl.load(p, None, 0.0, *extra)\n"  # line 8: max_positional unknown
        "    tl.store(p, x + y)\n",
    )
    assert (7, "TRI007", "does-not-affect") in effects(scan_for(recorded, [src], "3.8.0"))
    report = scan_for(recorded, [src], "3.9.0")
    assert (7, "TRI007", "breaks") in effects(report)
    (f,) = [f for f in report.findings if f.line == 7]
    assert "accepted on 3.0.0-3.8.0, refused on 3.9.0" in f.note


def test_rules_without_recorded_data_say_unknown_and_fail(recorded, tmp_path: Path) -> None:
    # TRI015 (num_ctas) and TRI017 (num_stages=0) have no probe: unknown, which fails closed
    src = tmp_path / "k.py"
    src.write_text(HEAD + "cfg = triton.Config({}, num_ctas=2, num_stages=0)\n")
    report = scan_for(recorded, [src], "3.9.0")
    got = {(f.rule.id, f.effect, f.fails) for f in report.findings}
    assert got == {("TRI015", "unknown", True), ("TRI017", "unknown", True)}
    proc = run_cli(str(src), "--results", str(RAW), "--candidate", "3.9.0")
    assert proc.returncode == 1 and "nothing in the matrix measures this" in proc.stdout


def test_star_imports_between_many_modules_resolve_once(recorded, tmp_path: Path, monkeypatch):
    """ROCm's aiter: its files star-import each other (``from .utils import *`` both ways).
    The resolution of a name through star imports followed every path to a depth of 12, and
    one folder took over 15 minutes; each module's stars are searched once per name now. The
    name still resolves through the chain: ``tl`` bound in ``m0`` reaches the kernel file."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m0.py").write_text("import triton\nimport triton.language as tl\n")
    n = 12
    for i in range(1, n):
        stars = "import triton\n" + "".join(f"from .m{j} import *\n" for j in range(n) if j != i)
        (pkg / f"m{i}.py").write_text(stars)
    (pkg / "m5.py").write_text((pkg / "m5.py").read_text() + "\n\ndef helper():\n    pass\n")
    # ``helper`` is a function of m5, no import's binding: the search for it visits every star
    head = "import triton\nfrom .m11 import tl, helper\n\n\n"
    kernel(pkg, "    b = tl.make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))\n", head)
    calls = 0
    resolve = scan.Project.resolve

    def counted(self, qualname, depth=0):
        nonlocal calls
        calls += 1
        assert calls < 100_000, "star imports followed path by path"
        return resolve(self, qualname, depth)

    monkeypatch.setattr(scan.Project, "resolve", counted)
    assert (7, "TRI001", "breaks") in effects(scan_for(recorded, [pkg], "3.9.0"))
