"""The gate ties a probe's change to a scanned use only where the use's own case changed and
its guards let it run on the candidate (matrix.gate.compare.concerned_uses), on the committed
results. Small sources of our own modeled on real fixes (see tests/test_scan_hazards.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.analyze.census import censuses_from_runs
from matrix.core import Release
from matrix.gate import compare as gc
from matrix.results import Run, read_runs
from matrix.scan import scan_paths
from tests.test_scan_hazards import FG_BEFORE, HEAD, TE_AFTER, TE_BEFORE
from tests.test_scan_release import RAW


@pytest.fixture(scope="module")
def recorded() -> list[Run]:
    return read_runs(RAW)


def tied(runs: list[Run], paths: list[Path], probe: str, base: str, cand: str) -> set[int]:
    """The lines a blocking finding of ``probe`` names for ``base`` -> ``cand``."""
    b, c = Release.parse(base), Release.parse(cand)
    scan = scan_paths(paths, censuses=censuses_from_runs(runs))
    out = gc.compare(gc.runs_for(runs, b), gc.runs_for(runs, c), b, c, (), scan.findings)
    lines = set()
    for f in out.findings:
        if f.probe == probe and f.kind in gc.UNSAFE_KINDS:
            lines |= {int(u.split(":")[1]) for u in f.uses}
    return lines


def test_a_python_call_is_tied_only_where_its_own_case_changed(recorded, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "utils.py").write_text("def half(n):\n    return n // 2\n")
    (tmp_path / "pkg" / "k.py").write_text(
        HEAD + "from . import utils\n\n\n"
        "@triton.jit\n"
        "def k(p, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, utils.half(BLOCK))\n"  # line 10: refused from 3.5.1
        "    scale: tl.constexpr = math.log2(BLOCK)\n"  # line 11: allowed from 3.2.0
        "    tl.store(p + offs, offs * scale)\n"
    )
    pkg = [tmp_path / "pkg"]
    assert tied(recorded, pkg, "python_in_kernel", "3.4.0", "3.5.1") == {10}
    # math.log2 refused on 3.1.0 and allowed on 3.2.0: a relaxation, tied to nothing
    assert tied(recorded, pkg, "python_in_kernel", "3.1.0", "3.2.0") == set()


def test_the_fixed_code_of_a_real_breakage_is_clean_and_the_original_flagged(recorded, tmp_path):
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(TE_BEFORE)
    after.write_text(TE_AFTER)
    assert tied(recorded, [before], "python_in_kernel", "3.4.0", "3.5.1") == {10}
    assert tied(recorded, [after], "python_in_kernel", "3.4.0", "3.5.1") == set()


def test_an_autotune_key_under_a_release_branch_is_decided_per_branch(recorded, tmp_path):
    before = tmp_path / "before.py"
    before.write_text(FG_BEFORE)
    assert tied(recorded, [before], "autotune_validation", "3.8.0", "3.9.0") == {9}
    guarded = tmp_path / "guarded.py"
    guarded.write_text(
        HEAD + "from packaging.version import Version\n\n"
        'if Version(triton.__version__) < Version("3.9.0"):\n'
        "    KEY = 1\n"
        "\n\n"
        "    @triton.autotune(\n"
        '        configs=[triton.Config({"BLOCK_SIZE": 128})],\n'
        '        key=["N", "W_in"],\n'  # line 13: a non-argument, on releases before 3.9.0 only
        "    )\n"
        "    @triton.jit\n"
        "    def upsample(inp, NC, W_in, BLOCK_SIZE: tl.constexpr):\n"
        "        pass\n"
    )
    assert tied(recorded, [guarded], "autotune_validation", "3.8.0", "3.9.0") == set()


def test_a_name_use_behind_a_feature_guard_is_not_broken_by_its_removal(recorded, tmp_path):
    from matrix.gate import api

    src = tmp_path / "k.py"
    src.write_text(
        HEAD + "\n\n"
        "def plain(p):\n"
        "    return tl.advance(p, (0, 1))\n"  # line 8: unguarded
        "\n\n"
        "def checked(p):\n"
        '    if hasattr(tl, "advance"):\n'
        "        return tl.advance(p, (0, 1))\n"  # line 13: only where it exists
        "    return p\n"
        "\n\n"
        "def tried(p):\n"
        "    try:\n"
        "        return tl.advance(p, (0, 1))\n"  # line 19: falls back where it fails
        "    except AttributeError:\n"
        "        return p\n"
    )
    b, c = Release.parse("3.8.0"), Release.parse("3.9.0")
    scan = scan_paths([src], censuses=censuses_from_runs(recorded))
    out = gc.Comparison()
    api.check_uses(gc.runs_for(recorded, b), gc.runs_for(recorded, c), b, c, scan.uses, out)
    lines = {
        int(u.split(":")[1].split()[0])
        for f in out.findings
        if f.kind == gc.BREAKING
        for u in f.uses
    }
    assert lines == {8}
