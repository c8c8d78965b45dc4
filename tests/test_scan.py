"""The upgrade-hazard scanner on fixture kernels and a fixture package.

Each fixture marks the lines that must be reported with a trailing ``# expect: RULE-ID``
comment; the tests compare the scanner's (line, rule) pairs with those marks, so a missed
finding and a spurious one both fail. The census tests use the two API snapshots the census
recorded from real 3.8.0 and 3.9.0 runs (tests/fixtures/census/).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matrix import scan
from matrix.analyze.census import Census
from matrix.results import Result, Run, write_raw

FIXTURES = Path(__file__).parent / "fixtures" / "scan"
PROJECT = FIXTURES / "project"
CENSUS = Path(__file__).parent / "fixtures" / "census"
RULE_FILES = sorted(FIXTURES.glob("tri*.py"))
PROJECT_FILES = sorted(PROJECT.rglob("*.py"))
EXPECT = re.compile(r"#\s*expect:\s*(TRI\d+)")
ROOT = Path(__file__).resolve().parents[1]


def expected(path: Path) -> set[tuple[int, str]]:
    out = set()
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        out.update((lineno, m) for m in EXPECT.findall(line))
    return out


def found(path: Path) -> set[tuple[int, str]]:
    report = scan.scan_paths([path])
    assert not report.errors and not report.skipped
    return {(f.line, f.rule.id) for f in report.findings}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "matrix.scan", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_kernel(path: Path, body: str) -> Path:
    path.write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(p, n, BLOCK: "
        "tl.constexpr):\n" + body
    )
    return path


# ------------------------------------------------------------------------------ hand rules


def test_every_rule_has_a_fixture_and_every_fixture_expects_something() -> None:
    # runtime-member (TRI021) matches only members the API census records, so it has no
    # census-free fixture: tests/test_scan_hazards.py covers it on the recorded census; so
    # does runtime-home (TRI022): tests/test_runtime_homes.py.
    census_only = ("runtime-member", "runtime-home")
    rules = {r.id for r in scan.load_rules() if not r.census and r.kind not in census_only}
    covered = {rule for f in [*RULE_FILES, *PROJECT_FILES] for _, rule in expected(f)}
    assert rules == covered, f"rules without a fixture: {rules - covered}"
    assert len(rules) >= 18
    assert all(expected(f) for f in RULE_FILES)


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.stem)
def test_rule_fixture_findings_match_expect_marks(path: Path) -> None:
    assert found(path) == expected(path)


def test_project_reexports_relative_star_imports_and_subclasses() -> None:
    # The package reaches Triton only through mypkg/triton_utils.py: a re-export
    # (from mypkg.triton_utils import tl, triton), relative imports (from .. import
    # triton_utils as tu; from ..triton_utils import tl), a star import re-exported by a
    # package (from . import tl), and an Autotuner subclass used through a factory.
    report = scan.scan_paths([PROJECT])
    got = {(Path(f.path).relative_to(PROJECT), f.line, f.rule.id) for f in report.findings}
    want = {(p.relative_to(PROJECT), line, r) for p in PROJECT_FILES for line, r in expected(p)}
    assert got == want
    tuned = [f for f in report.findings if f.path.endswith("tuned.py")]
    assert "PkgTuner (triton.runtime.Autotuner)" in tuned[0].message
    # Scanned alone, the re-exporting file is not there to follow: nothing resolves to Triton.
    assert found(PROJECT / "mypkg" / "ops" / "reexported.py") == set()


def test_module_names_and_relative_imports() -> None:
    name, is_pkg = scan.module_name(PROJECT / "mypkg" / "ops" / "relative.py")
    assert (name, is_pkg) == ("mypkg.ops.relative", False)
    assert scan.module_name(PROJECT / "mypkg" / "ops" / "__init__.py") == ("mypkg.ops", True)
    assert scan.absolute_module("mypkg.ops.relative", False, 2, "triton_utils") == (
        "mypkg.triton_utils"
    )
    assert scan.absolute_module("mypkg.ops", True, 1, None) == "mypkg.ops"
    # Triton's own tree: triton/ops/matmul.py doing `from .. import language as tl`.
    assert scan.absolute_module("triton.ops.matmul", False, 2, None) == "triton"


def test_noqa_suppresses_only_the_named_rule_on_its_line() -> None:
    report = scan.scan_paths([PROJECT / "mypkg"])
    lines = {f.line for f in report.findings if f.path.endswith("suppressed.py")}
    # line 8: `# noqa: TRI001` suppresses; line 9 names another rule; line 10 is a bare noqa
    assert lines == {9, 10}
    assert report.suppressed == 1
    assert scan.noqa_codes("x = 1  # noqa: TRI001, tri004\ny = 2  # noqa\n") == {
        1: {"TRI001", "TRI004"}
    }


def test_clean_kernel_has_no_findings_and_exits_zero() -> None:
    assert found(FIXTURES / "clean.py") == set()
    proc = run_cli(str(FIXTURES / "clean.py"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ""


def test_text_output_is_grouped_by_file_with_one_summary_per_rule() -> None:
    path = FIXTURES / "tri001_block_ptr.py"
    proc = run_cli(str(path))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{path} (4)"
    # `    block = tl.make_block_ptr(` on line 10: the call starts at column 13 (1-based).
    assert lines[1].startswith("  10:13 TRI001 tl.make_block_ptr(...) uses the block-pointer")
    assert lines[1].endswith("[breaking]")
    assert "fix:" not in "".join(lines[1:5])
    assert sum("fix: build a tensor descriptor" in line for line in lines) == 1
    assert "  TRI001 block-pointer (breaking): 4 in 1 file(s)" in lines
    assert f"  {path}: 4 (TRI001 4)" in lines
    assert "4 finding(s) in 1 file(s)" in proc.stderr


def test_json_output_and_folder_scan() -> None:
    proc = run_cli(
        "--format",
        "json",
        "--exclude",
        "project",
        "--exclude",
        "history",
        "--exclude",
        "breakages",
        "--exclude",
        "precision",
        str(FIXTURES),
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["errors"] == [] and doc["skipped"] == []
    got = {(Path(f["path"]).name, f["line"], f["rule"]) for f in doc["findings"]}
    want = {(p.name, line, rule) for p in RULE_FILES for line, rule in expected(p)}
    assert got == want
    assert all(f["fix"] and f["message"] and f["severity"] for f in doc["findings"])


def test_select_ignore_and_exclude() -> None:
    proc = run_cli("--format", "json", "--select", "TRI001,TRI002", str(PROJECT))
    rules = {f["rule"] for f in json.loads(proc.stdout)["findings"]}
    assert rules == {"TRI001", "TRI002"}
    proc = run_cli("--format", "json", "--ignore", "TRI00", str(PROJECT))
    rules = {f["rule"] for f in json.loads(proc.stdout)["findings"]}
    assert rules == {"TRI010"}
    proc = run_cli(
        "--format", "json", "--exclude", "tuning", "--exclude", "*/ops/tuned.py", str(PROJECT)
    )
    paths = {Path(f["path"]).name for f in json.loads(proc.stdout)["findings"]}
    assert paths == {"reexported.py", "relative.py", "suppressed.py"}
    proc = run_cli("--select", "TRI999", str(PROJECT))
    assert proc.returncode == 2 and "'TRI999': no rule id starts with it" in proc.stderr


def test_undecodable_and_newer_syntax_files_are_skipped_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "latin1.py").write_bytes(b"# caf\xe9\nimport triton\n")
    # 3.14's unparenthesized except (3.12's type parameters are lowered: test_profile_unseen22)
    (tmp_path / "newer.py").write_text("import triton\ntry:\n    pass\nexcept A, B:\n    pass\n")
    (tmp_path / "broken.py").write_text("@triton.jit\ndef k(:\n")
    shutil.copy(FIXTURES / "tri003_allow_tf32.py", tmp_path / "advisory.py")
    proc = run_cli(str(tmp_path))
    # Only an advisory finding is left: exit 0, and each skipped file is named with why.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "latin1.py: not decodable" in proc.stderr
    assert "newer.py:4:" in proc.stderr and "newer syntax or broken" in proc.stderr
    assert "broken.py:2:" in proc.stderr
    assert "3 file(s) skipped" in proc.stderr
    proc = run_cli(str(tmp_path / "nope.py"))
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_a_coding_line_is_honoured(tmp_path: Path) -> None:
    # PEP 263: a latin-1 file that says so is read, not skipped
    src = tmp_path / "k.py"
    text = "# -*- coding: latin-1 -*-\nimport triton\nimport triton.language as tl\n\n\n"
    text += "@triton.jit\ndef k(p, n, BLOCK: tl.constexpr):\n"
    text += "    b = tl.make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))  # caf\xe9\n"
    src.write_bytes(text.encode("latin-1"))
    assert found(src) == {(8, "TRI001")}


def test_baseline_file_reports_only_new_findings(tmp_path: Path) -> None:
    src = write_kernel(
        tmp_path / "k.py", "    b = tl.make_block_ptr(p, (n,), (1,), (0,), (BLOCK,), (0,))\n"
    )
    base = tmp_path / "baseline.json"
    proc = run_cli("--write-baseline-file", str(base), str(src))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(base.read_text())["findings"][0]["rule"] == "TRI001"
    proc = run_cli("--baseline-file", str(base), str(src))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 in the baseline file" in proc.stderr
    # Lines moved and one new hazard added: only the new one is reported, and it fails.
    src.write_text(
        "# a new comment moves every line down\n"
        + src.read_text()
        + "    c = tl.advance(b, (BLOCK,))\n"
    )
    proc = run_cli("--format", "json", "--baseline-file", str(base), str(src))
    assert proc.returncode == 1
    [new] = json.loads(proc.stdout)["findings"]
    assert (new["rule"], new["line"]) == ("TRI001", 9)
    base.write_text('{"findings": 3}')
    proc = run_cli("--baseline-file", str(base), str(src))
    assert proc.returncode == 2 and "baseline.json" in proc.stderr


def test_sarif_output() -> None:
    proc = run_cli(
        "--format",
        "sarif",
        str(FIXTURES / "tri001_block_ptr.py"),
        str(FIXTURES / "tri003_allow_tf32.py"),
    )
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    [run] = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["TRI001", "TRI003"]
    assert rules[0]["help"]["text"].startswith("build a tensor descriptor")
    first = run["results"][0]
    assert first["ruleId"] == "TRI001" and rules[first["ruleIndex"]]["id"] == "TRI001"
    region = first["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 10, "startColumn": 13}
    assert first["level"] == "error"
    assert {r["level"] for r in run["results"] if r["ruleId"] == "TRI003"} == {"note"}


def test_github_annotations() -> None:
    path = FIXTURES / "tri001_block_ptr.py"
    proc = run_cli("--format", "github", str(path), str(FIXTURES / "tri003_allow_tf32.py"))
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"::error file={path},line=10,col=13,title=TRI001 block-pointer::")
    assert "fix%3A" not in lines[0] and "; fix: build a tensor descriptor" in lines[0]
    assert any(line.startswith("::notice ") and "TRI003" in line for line in lines)


# --------------------------------------------------------------------------- exit code rule


def _results(tmp_path: Path, statuses: dict[str, str], probe: str = "block_ptr") -> Path:
    # Synthetic statuses, deliberately not what any real release does: the verdict must
    # follow them.
    folder = tmp_path / "results"
    folder.mkdir()
    for release, status in statuses.items():
        run = Run(
            id=f"r{release}",
            env={"triton": release, "numpy": "2.0.0"},
            results=[Result(probe, "interpret", None, status)],
        )
        write_raw(run, folder / f"r{release}.json")
    return folder


def test_exit_code_counts_only_findings_that_break_or_change_the_candidate(
    tmp_path: Path,
) -> None:
    path = str(FIXTURES / "tri001_block_ptr.py")
    res = _results(tmp_path, {"1.0.0": "supported", "2.0.0": "deprecated", "3.0.0": "removed"})
    proc = run_cli("--results", str(res), path)
    assert proc.returncode == 1  # no candidate: a breaking rule's effect is unknown
    assert "[block_ptr: breaks 3.0.0; changes 2.0.0; does not affect 1.0.0]" in proc.stdout
    proc = run_cli("--results", str(res), "--candidate", "1.0.0", path)
    assert proc.returncode == 0, proc.stdout
    assert "[does not affect 1.0.0]" in proc.stdout
    assert "0 break or change 1.0.0" in proc.stderr
    proc = run_cli("--results", str(res), "--candidate", "3.0.0", path)
    assert proc.returncode == 1
    assert "block_ptr on 3.0.0: removed (interpret) (breaks 3.0.0;" in proc.stdout
    assert "[breaks 3.0.0]" in proc.stdout
    # deprecated is a change, not a break (it runs, with a warning); it still fails
    proc = run_cli("--results", str(res), "--candidate", "2.0.0", path)
    assert proc.returncode == 1 and "[changes 2.0.0]" in proc.stdout
    # Advisory findings never fail, whatever the candidate.
    proc = run_cli(
        str(FIXTURES / "tri003_allow_tf32.py"), str(FIXTURES / "tri004_dot_precision.py")
    )
    assert proc.returncode == 0, proc.stdout
    assert "[advisory]" in proc.stdout


def test_candidate_release_spelling_agrees_with_the_gate(tmp_path: Path) -> None:
    # The gate reads --candidate 3.9 as 3.9.0; so must the scanner.
    res = _results(tmp_path, {"3.8.0": "supported", "3.9.0": "removed"})
    path = str(FIXTURES / "tri001_block_ptr.py")
    proc = run_cli("--results", str(res), "--candidate", "3.9", path)
    assert "block_ptr on 3.9.0: removed (interpret) (breaks 3.9.0;" in proc.stdout
    assert proc.returncode == 1
    proc = run_cli("--results", str(res), "--candidate", "3.8", path)
    assert proc.returncode == 0 and "does not affect 3.8.0" in proc.stdout
    proc = run_cli("--results", str(res), "--candidate", "three", path)
    assert proc.returncode == 2 and "--candidate: 'three' is not a release" in proc.stderr


def test_candidate_without_results_is_a_usage_error() -> None:
    proc = run_cli("--candidate", "3.9.0", str(FIXTURES / "clean.py"))
    assert proc.returncode == 2
    assert "--candidate needs --results" in proc.stderr


# ---------------------------------------------------------------------------------- census


CENSUS_KERNEL = """\
    offs = tl.arange(0, BLOCK)
    x = tl.load(p + offs, offs < n, 0.0, "", ".ca")
    y = tl.cumprod(x, 0, dtype=tl.float32)
    tl.store(p + offs, y)
"""


def test_census_flags_what_a_candidate_lacks_with_no_rule_for_the_name(tmp_path: Path) -> None:
    # No hand-written rule mentions cumprod, its dtype= keyword, or load's fifth positional
    # argument: the findings come from the two recorded API snapshots alone.
    src = write_kernel(tmp_path / "k.py", CENSUS_KERNEL + "    q = tl.advance(p, (0,))\n")
    proc = run_cli("--format", "json", "--select", "TRI1", "--results", str(CENSUS), str(src))
    doc = json.loads(proc.stdout)
    assert doc["releases"] == ["3.8.0", "3.9.0"]
    got = {(f["line"], f["rule"], f["message"]) for f in doc["findings"]}
    assert got == {
        (
            8,
            "TRI102",
            "triton.language.load(...): takes at most 3 positional arguments, 5 given "
            "on 3.9.0 (from the API census)",
        ),
        (
            9,
            "TRI101",
            "triton.language.cumprod(...): no keyword dtype on 3.8.0 (from the API census)",
        ),
        (11, "TRI100", "triton.language.advance(...): absent on 3.9.0 (from the API census)"),
    }
    by_line = {f["line"]: f for f in doc["findings"]}
    assert by_line[8]["works_on"] == ["3.8.0", "3.8.0"]
    assert by_line[9]["works_on"] == ["3.9.0", "3.9.0"]
    # Every use together works on no single recorded release.
    assert doc["works_on"] == {str(src): None}
    assert proc.returncode == 1


def test_census_effect_and_exit_code_follow_the_candidate(tmp_path: Path) -> None:
    src = write_kernel(tmp_path / "k.py", "    y = tl.cumprod(tl.load(p), 0, dtype=tl.float32)\n")
    proc = run_cli("--select", "TRI1", "--results", str(CENSUS), "--candidate", "3.9", str(src))
    assert proc.returncode == 0, proc.stdout  # dtype= exists on the candidate
    # --candidate 3.9 is said as recorded: 3.9.0
    assert "[does not affect 3.9.0; works on 3.9.0]" in proc.stdout
    assert f"{src} (1; works on 3.9.0-3.9.0)" in proc.stdout
    proc = run_cli("--select", "TRI1", "--results", str(CENSUS), "--candidate", "3.8.0", str(src))
    assert proc.returncode == 1
    assert "[breaks 3.8.0; fails on 3.8.0]" in proc.stdout


def test_census_works_on_range_per_file(tmp_path: Path) -> None:
    fine = write_kernel(tmp_path / "fine.py", "    tl.store(p, tl.load(p, mask=n > 0))\n")
    new = write_kernel(
        tmp_path / "new.py", "    tl.store(p, tl.cumprod(tl.load(p), 0, dtype=tl.float32))\n"
    )
    from matrix.analyze.census import load_censuses

    report = scan.scan_paths([fine, new], censuses=load_censuses(CENSUS))
    assert report.works_on == {str(fine): ("3.8.0", "3.9.0"), str(new): ("3.9.0", "3.9.0")}
    assert {u.qualname for u in report.uses if u.path == str(fine)} == {
        "triton.language.load",
        "triton.language.store",
        "triton.jit",
        "triton.language.constexpr",
    }


def test_census_default_the_code_relies_on(tmp_path: Path) -> None:
    # A copy of the 3.9.0 snapshot in which tl.load's eviction_policy default differs: a call
    # that leaves it out relies on it; one that passes it does not.
    res = tmp_path / "census"
    res.mkdir()
    shutil.copy(CENSUS / "triton-3.8.0.json", res)
    doc = json.loads((CENSUS / "triton-3.9.0.json").read_text())
    census = doc["runs"][0]["results"][0]["data"]["census"]
    key = census["modules"]["triton.language"]["names"]["load"]
    params = census["defs"][key]["params"]
    i = next(i for i, p in enumerate(params) if p.startswith("eviction_policy="))
    params[i] = "eviction_policy='evict_last'"
    (res / "triton-3.9.0.json").write_text(json.dumps(doc))
    src = write_kernel(
        tmp_path / "k.py",
        "    x = tl.load(p)\n    y = tl.load(p, eviction_policy='')\n    z = tl.load(p + 1)\n"
        "    tl.store(p, x + y + z)\n",
    )
    proc = run_cli(
        "--format",
        "json",
        "--select",
        "TRI103",
        "--results",
        str(res),
        "--candidate",
        "3.9.0",
        str(src),
    )
    # The two calls that rely on the default are one finding, with the other line.
    [f] = json.loads(proc.stdout)["findings"]
    assert (f["line"], f["rule"], f["effect"], f["also_lines"]) == (7, "TRI103", "changes", [9])
    assert "eviction_policy = '' on 3.8.0; 'evict_last' on 3.9.0" in f["message"]
    assert proc.returncode == 1


def one_def_census(version: str, module: str, name: str, params: list[str]) -> Census:
    """A census of one recorded definition (``module.name`` with ``params``)."""
    key = f"{module}._def.{name}"
    return Census(
        {
            "format": 1,
            "version": version,
            "modules": {module: {"status": "ok", "names": {name: key}}},
            "defs": {key: {"kind": "function", "file": "x.py", "params": params}},
            "env": {},
        }
    )


TRI103 = [r for r in scan.load_rules() if r.id == "TRI103"]


def test_census_default_wrapped_in_constexpr_is_no_finding(tmp_path: Path) -> None:
    # The real case behind 19 false TRI103 findings on FlagGems: tl.philox/tl.rand's n_rounds
    # default as recorded on 3.5.1 ("10") and 3.6.0 ("constexpr[10]").
    def rand(version: str, n_rounds: str) -> Census:
        return one_def_census(
            version, "triton.language", "rand", ["seed", "offset", f"n_rounds={n_rounds}"]
        )

    src = write_kernel(tmp_path / "k.py", "    tl.store(p, tl.rand(n, tl.arange(0, BLOCK)))\n")
    wrapped = {"3.5.1": rand("3.5.1", "10"), "3.6.0": rand("3.6.0", "constexpr[10]")}
    assert scan.scan_paths([src], TRI103, censuses=wrapped).findings == []
    changed = {"3.5.1": rand("3.5.1", "10"), "3.6.0": rand("3.6.0", "constexpr[7]")}
    [f] = scan.scan_paths([src], TRI103, censuses=changed).findings
    assert (f.line, f.rule.id, f.detail) == (7, "TRI103", "n_rounds = 10 on 3.5.1; 7 on 3.6.0")


def test_census_default_that_became_a_same_valued_sentinel_is_no_finding(tmp_path: Path) -> None:
    # As recorded: tl.dot's out_dtype triton.language.float32 (3.7.1) -> None (3.8.0), and
    # triton.autotune's warmup/rep 25/100 (3.1.0) -> None (3.2.0). 190 of FlagGems' 222 and
    # 90 of flash-linear-attention's 149 TRI103 findings were these, on calls where None
    # resolves to the old value.
    dot = ["input", "other", "acc=None", "input_precision=None", "allow_tf32=None"]
    dots = {
        v: one_def_census(v, "triton.language", "dot", [*dot, f"out_dtype={d}"])
        for v, d in (("3.7.1", "triton.language.float32"), ("3.8.0", "None"))
    }
    src = write_kernel(
        tmp_path / "k.py",
        "    a = tl.load(p + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])\n"
        "    c = tl.dot(a, a)\n"  # line 8: None means float32, as before
        "    c = tl.dot(a, a, c)\n"  # line 9: None means c's dtype
        "    c = tl.dot(a, a, acc=c)\n"  # line 10
        "    c = tl.dot(a, a, c, out_dtype=tl.float32)\n",  # line 11: passed, no default
    )
    found = scan.scan_paths([src], TRI103, censuses=dots).findings
    assert [(f.line, f.also) for f in found] == [(9, [10])]
    tuner = ["configs", "key", "warmup={w}", "rep={r}"]
    tuners = {
        v: one_def_census(v, "triton", "autotune", [t.format(w=w, r=r) for t in tuner])
        for v, w, r in (("3.1.0", "25", "100"), ("3.2.0", "None", "None"))
    }
    host = tmp_path / "host.py"
    host.write_text("import triton\n\nDECORATE = triton.autotune([], key=[])\n")
    assert scan.scan_paths([host], TRI103, censuses=tuners).findings == []
    # The same sentinel on a name the rules file does not list is still a finding.
    renamed = {
        v: one_def_census(v, "triton", "retune", [t.format(w=w, r=r) for t in tuner])
        for v, w, r in (("3.1.0", "25", "100"), ("3.2.0", "None", "None"))
    }
    host.write_text("import triton\n\nDECORATE = triton.retune([], key=[])\n")
    assert len(scan.scan_paths([host], TRI103, censuses=renamed).findings) == 2
    # tl.pointer_type's address_space: 1 (3.8.0) -> 'global' (3.9.0), one address space.
    ptrs = {
        v: one_def_census(
            v, "triton.language", "pointer_type", ["element_ty", f"address_space={a}"]
        )
        for v, a in (("3.8.0", "1"), ("3.9.0", "'global'"))
    }
    host.write_text("import triton.language as tl\n\nP = tl.pointer_type(tl.float16)\n")
    assert scan.scan_paths([host], TRI103, censuses=ptrs).findings == []


# ------------------------------------------------------------------------- resolution, misc


def test_aliases_and_jit_scope(tmp_path: Path) -> None:
    src = tmp_path / "aliases.py"
    src.write_text(
        "import triton as tr\n"
        "import triton.language as language\n"
        "from triton.language import make_block_ptr as mbp\n"
        "\n"
        "@tr.jit(do_not_specialize=['n'])\n"
        "def k(p, n):\n"
        "    q = mbp(p, (n,), (1,), (0,), (16,), (0,))\n"
        "    i = language.program_id(0)\n"
        "    language.store(p + i / 2, 1.0)\n"
        "\n"
        "def not_a_kernel(p):\n"
        "    i = language.program_id(0)\n"
        "    return p + i / 2\n"
    )
    assert found(src) == {(7, "TRI001"), (9, "TRI006")}


def test_unrelated_names_are_not_triton(tmp_path: Path) -> None:
    src = tmp_path / "numpy_user.py"
    src.write_text("import numpy as tl\n\ndef f(a, b):\n    return tl.dot(a, b)\n")
    assert found(src) == set()


def test_splats_do_not_produce_guesses(tmp_path: Path) -> None:
    src = tmp_path / "splat.py"
    src.write_text(
        "import triton\nimport triton.language as tl\n\n"
        "@triton.jit\ndef k(a, b, kw):\n"
        "    c = tl.dot(a, b, **kw)\n"
        "    return tl.load(*a)\n"
    )
    assert found(src) == set()


def test_malformed_rules_are_rejected(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    head = '[[rule]]\nid = "TRI901"\nname = "x"\nmessage = "m"\nfix = "f"\nscope = "jit"\n'
    rules.write_text(head)
    with pytest.raises(scan.RuleError, match=r"TRI901\)\.match"):
        scan.load_rules(rules)
    rules.write_text(
        head + 'concerns = ["removed"]\n[rule.match]\nkind = "call"\ncalls = ["dot"]\n'
    )
    with pytest.raises(scan.RuleError, match="need a probe"):
        scan.load_rules(rules)
    rules.write_text(head + 'severity = "fatal"\n[rule.match]\nkind = "call"\ncalls = ["dot"]\n')
    with pytest.raises(scan.RuleError, match=r"severity: expected one of"):
        scan.load_rules(rules)
    rules.write_text(head.replace("TRI901", "X1") + '[rule.match]\nkind = "name"\nnames = ["a"]\n')
    with pytest.raises(scan.RuleError, match=r"id: expected TRI"):
        scan.load_rules(rules)
    census = '[rule.match]\nkind = "census-default"\n[[rule.same_default]]\nnames = ["a.b"]\n'
    rules.write_text(head + census)
    with pytest.raises(scan.RuleError, match=r"same_default\[0\]\.param: expected"):
        scan.load_rules(rules)
    rules.write_text(
        head + census.replace("census-default", "census-missing") + 'param = "p"\nreason = "r"\n'
    )
    with pytest.raises(scan.RuleError, match=r"only a census-default rule"):
        scan.load_rules(rules)


def test_scanner_imports_no_triton_torch_or_numpy() -> None:
    code = (
        "import sys, matrix.scan, matrix.gate\n"
        "bad = [m for m in ('triton', 'torch', 'numpy', 'jinja2') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_rule_probes_and_statuses_exist_in_the_catalog() -> None:
    from matrix.catalog import PROBES_BY_NAME
    from matrix.probes.fp.fp_rules import RULES as FP_RULE_CELLS

    for rule in scan.load_rules():
        if rule.probe is None:
            continue
        if rule.cell is not None:
            # a fingerprint cell: fp.rules cells are accepted, wrong or rejected (fp_rules.py)
            assert rule.probe == "fp.rules" and rule.cell in FP_RULE_CELLS, rule.id
            assert set(rule.concerns) | set(rule.breaking) <= {"accepted", "wrong", "rejected"}
            continue
        assert rule.probe in PROBES_BY_NAME, f"{rule.id}: unknown probe {rule.probe!r}"
        if rule.cases:
            # per-use cells: each case is one of the probe's, each status one it recorded
            import importlib

            from matrix.results import read_runs

            cases = importlib.import_module(f"matrix.probes.{rule.probe}.probe").CASES
            assert set(rule.cases.values()) <= set(cases), (rule.id, set(rule.cases.values()))
            recorded = {
                s
                for run in read_runs(ROOT / "reports" / "raw")
                for r in run.results
                if r.probe == rule.probe
                for s in ((r.data or {}).get("cells") or {}).values()
            }
            assert set(rule.breaking) | set(rule.concerns) <= recorded, (rule.id, recorded)
            continue
        statuses = set(PROBES_BY_NAME[rule.probe].all_statuses)
        assert set(rule.concerns) <= statuses, f"{rule.id}: {set(rule.concerns) - statuses}"
        assert set(rule.breaking) <= statuses, f"{rule.id}: {set(rule.breaking) - statuses}"


def test_census_decides_libdevice_paths(tmp_path: Path) -> None:
    # TRI009 is advisory and, with a census, only reported for a name that is not present on
    # every recorded release: tl.math.sqrt is in both snapshots, tl.math.tanh in neither.
    body = "    tl.store(p, tl.math.sqrt(tl.load(p)) + tl.math.tanh(p))\n"
    src = write_kernel(tmp_path / "k.py", body)
    plain = scan.scan_paths([src], scan.select_rules(scan.load_rules(), ["TRI009"]))
    assert [f.snippet for f in plain.findings] == ["tl.math.sqrt", "tl.math.tanh"]
    from matrix.analyze.census import load_censuses

    rules = scan.select_rules(scan.load_rules(), ["TRI009"])
    judged = scan.scan_paths([src], rules, censuses=load_censuses(CENSUS))
    assert [f.snippet for f in judged.findings] == ["tl.math.tanh"]


def test_relative_imports_inside_tritons_own_tree(tmp_path: Path) -> None:
    # triton/ops/matmul.py (Triton <= 2.x) reaches everything relatively: `from .. import jit`,
    # `from .. import language as tl`.
    ops = tmp_path / "triton" / "ops"
    ops.mkdir(parents=True)
    (tmp_path / "triton" / "__init__.py").write_text("")
    (ops / "__init__.py").write_text("")
    (ops / "matmul.py").write_text(
        "from .. import jit\nfrom .. import language as tl\n\n\n@jit\n"
        "def k(p, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(p + offs, tl.load(p + offs), boundary_check=(0,))\n"
    )
    assert found(ops / "matmul.py") == {(8, "TRI002")}


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("call", r"match\.calls: a call rule needs at least one call name"),
        ("name", r"match\.names: a name rule needs at least one name"),
        ("keyword", r"match\.keywords: a keyword rule needs at least one keyword"),
    ],
)
def test_a_rule_without_the_names_its_kind_needs_is_rejected(
    tmp_path: Path, kind: str, says: str
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rule]]\nid = "TRI901"\nname = "x"\nmessage = "m"\nfix = "f"\nscope = "jit"\n'
        f'[rule.match]\nkind = "{kind}"\n'
    )
    with pytest.raises(scan.RuleError, match=rf"TRI901\)\.{says}"):
        scan.load_rules(rules)
    # A method name is enough for a call rule, and for no other kind.
    rules.write_text(rules.read_text() + 'methods = ["dot"]\n')
    if kind == "call":
        assert scan.load_rules(rules)[0].methods == ("dot",)
    else:
        with pytest.raises(scan.RuleError, match=rf"TRI901\)\.{says}"):
            scan.load_rules(rules)


def test_every_rule_kind_is_registered_once_with_a_matcher() -> None:
    from matrix.scan.engine import MATCHERS
    from matrix.scan.kinds import KINDS

    assert sorted(MATCHERS) == sorted(KINDS)
    for kind in KINDS.values():
        assert callable(kind.matcher) and kind.matches, kind.name
        assert set(kind.needs) <= set(kind.keys), kind.name  # a list it needs is one it reads
    used = {r.kind for r in scan.load_rules()}
    assert used <= set(KINDS)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        # an unknown kind names the rule, the key and the registry
        (
            '[rule.match]\nkind = "call-ish"\n',
            r"TRI901\)\.match\.kind: expected one of .*kinds\.py",
        ),
        # a key of the rule table that no rule reads (a typo: `severty`)
        (
            'severty = "breaking"\n[rule.match]\nkind = "name"\nnames = ["a"]\n',
            r"TRI901\): unknown keys \['severty'\]",
        ),
        # a match key this kind does not read (it would be ignored silently)
        (
            '[rule.match]\nkind = "name"\nnames = ["a"]\nvalue = 1\n',
            r"TRI901\)\.match\.value: a name rule does not read it \(it takes names\)",
        ),
        # a required field missing
        ('[rule.match]\nkind = "name"\nnames = ["a"]\n', r"TRI901\)\.fix: expected a non-empty"),
    ],
)
def test_a_malformed_rule_table_names_the_table_and_key(
    tmp_path: Path, extra: str, says: str
) -> None:
    head = '[[rule]]\nid = "TRI901"\nname = "x"\nmessage = "m"\nfix = "f"\nscope = "jit"\n'
    if "fix: expected" in says:
        head = head.replace('fix = "f"\n', "")
    rules = tmp_path / "rules.toml"
    rules.write_text(head + extra)
    with pytest.raises(scan.RuleError, match=rf"rule\[0\] \({says}"):
        scan.load_rules(rules)
