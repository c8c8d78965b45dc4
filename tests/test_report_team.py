"""A team's results on the report (matrix/report/team.py), read from a real run's raw files.

``tests/fixtures/teamlib_raw`` is the fixture library's suite through the matrix on 3.8.0 and
3.9.0 (its README has the commands): ``matmul_block_ptr_kernel`` compiles on 3.8.0 and is
rejected on 3.9.0, and its test passes then fails.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from matrix.gate import verdict as gate
from matrix.gate.kernel_compiles import BREAKS, CHANGES
from matrix.report import build, team
from matrix.results import read_raw, read_runs, write_raw

FIXTURES = Path(__file__).parent / "fixtures"
RAW = FIXTURES / "teamlib_raw"
BLOCK_PTR = "teamlib.kernels:matmul_block_ptr_kernel"
TARGETS = ["cuda:80", "cuda:90", "hip:gfx942"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("team-site")
    build(RAW, out)
    return out


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_a_page_per_captured_kernel_with_releases_by_targets(site: Path) -> None:
    view = team.build_view(read_runs(RAW))
    launched = {launch["kernel"] for r in read_runs(RAW) for launch in r.extra["launches"]}
    assert {k.kernel for k in view.kernels} == launched and len(launched) == 7
    assert view.releases == ["3.8.0", "3.9.0"] and view.targets == TARGETS
    (bp,) = [k for k in view.kernels if k.kernel == BLOCK_PTR]
    html = text(site / "team" / f"{bp.slug}.html")
    cells = re.findall(r'data-release="([\d.]+)" data-target="([\w:]+)" data-status="(\w+)"', html)
    assert sorted(cells) == sorted(
        [("3.8.0", t, "compiled") for t in TARGETS] + [("3.9.0", t, "rejected") for t in TARGETS]
    )
    assert html.count("Block pointers have been removed in favor of the tensor descriptor API") >= 3
    # The numbers are the records' own.
    (rec,) = [
        c
        for r in read_runs(RAW)
        if r.triton == "3.8.0"
        for c in r.extra["kernel_compiles"]
        if c["kernel"] == BLOCK_PTR and c["target"] == "cuda:90"
    ]
    assert f"registers {rec['registers']}, spills {rec['spills']} B" in html
    assert f"shared {rec['shared']} B" in html and f"{rec['instructions']} instructions" in html
    assert rec["ttgir_hash"] in html and rec["instruction_class"] == "mma.sync"


def test_ttgir_hash_is_compared_with_the_previous_release(tmp_path: Path) -> None:
    runs = read_runs(RAW)
    view = team.build_view(runs)
    (add,) = [k for k in view.kernels if k.kernel.endswith(":add_kernel")]
    (spec,) = add.specializations
    old, new = spec.cell("3.8.0", "cuda:80"), spec.cell("3.9.0", "cuda:80")
    assert old.ttgir_changed is None and old.previous is None  # nothing before it
    assert new.previous == "3.8.0"
    assert new.ttgir_changed is (old.record["ttgir_hash"] != new.record["ttgir_hash"])
    # The same hash on the candidate: not changed.
    same = copy.deepcopy(runs)
    for run in same:
        for rec in run.extra["kernel_compiles"]:
            rec["ttgir_hash"] = "0" * 16
    (add,) = [k for k in team.build_view(same).kernels if k.kernel.endswith(":add_kernel")]
    assert add.specializations[0].cell("3.9.0", "cuda:80").ttgir_changed is False


def test_tests_are_a_releases_by_tests_table_not_a_dump(site: Path) -> None:
    html = text(site / "team" / "tests.html")
    rows = re.findall(r'<tr data-test="([^"]+)"', html)
    assert len(rows) == 8
    block = re.search(r'<tr data-test="[^"]*test_matmul_block_ptr".*?</tr>', html, re.S).group(0)
    assert re.findall(r"</span> (passed|failed)<span", block) == ["passed", "failed"]
    assert "8/8 passed" in html and "7/8 passed" in html
    release = text(site / "releases" / "3.9.0.html")
    assert '"outcome"' not in release and '"kernel_compiles"' not in release  # no JSON dump
    assert "7/8 tests passed" in release and "18/21 kernel compiles" in release
    assert 'href="../team/tests.html"' in release and 'href="../team/index.html"' in release
    assert 'href="team/tests.html"' in text(site / "index.html")
    assert 'href="team/index.html"' in text(site / "index.html")


def test_team_links_resolve(site: Path) -> None:
    for page in [*(site / "team").glob("*.html"), *(site / "upgrades").glob("*.html")]:
        for href in re.findall(r'href="([^"#]+)(?:#[^"]*)?"', text(page)):
            assert (page.parent / href).resolve().is_file(), f"{page.name}: broken link {href}"


def _decisions(html: str) -> set[tuple[str, str, str]]:
    pattern = r'data-kernel="([^"]+)" data-target="([^"]+)" data-decision="([^"]+)"'
    return set(re.findall(pattern, html))


def _gate(tmp_path: Path, raw: Path) -> dict:
    out = tmp_path / "gate"
    gate.main(["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw),
               "--out", str(out), "--no-project-scan"])  # fmt: skip
    return json.loads((out / "gate.json").read_text())


def test_upgrade_page_names_the_kernels_the_gate_decides_on(site: Path, tmp_path: Path) -> None:
    html = text(site / "upgrades" / "3.8.0-to-3.9.0.html")
    decided = _decisions(html)
    breaking = {(k, t) for k, t, d in decided if d == BREAKS}
    assert breaking == {(BLOCK_PTR, t) for t in TARGETS}
    doc = _gate(tmp_path, RAW)
    gate_breaking = {
        (f["probe"].removeprefix("kernel "), f["where"].removeprefix("aot:"))
        for f in doc["findings"]
        if f["probe"].startswith("kernel ")
    }
    assert breaking == gate_breaking
    assert 'id="kernels-summary"' in html and "3 breaking" in html


def test_a_behaviour_change_on_the_page_is_the_gates(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(RAW, raw)
    for path in raw.glob("triton-3.9.0-*.json"):
        run = read_raw(path)
        for rec in run.extra["kernel_compiles"]:
            if rec["kernel"].endswith(":matmul_kernel") and rec["target"] == "cuda:90":
                rec["spills"] = 96
        write_raw(run, path)
    out = tmp_path / "site"
    build(raw, out)
    decided = _decisions(text(out / "upgrades" / "3.8.0-to-3.9.0.html"))
    assert ("teamlib.kernels:matmul_kernel", "cuda:90", CHANGES) in decided
    doc = _gate(tmp_path, raw)
    (f,) = [f for f in doc["findings"] if f["probe"] == "kernel teamlib.kernels:matmul_kernel"]
    assert f["kind"] == "behaviour-change" and f["where"] == "aot:cuda:90"
    assert "spills 0 -> 96 bytes" in f["evidence"][0]


def test_entries_in_another_shape_are_said_not_shown(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(RAW, raw)
    path = next(raw.glob("triton-3.9.0-*.json"))
    run = read_raw(path)
    run.extra["tests"] = [{"nodeid": "t::x", "outcome": "passed"}]
    write_raw(run, path)
    view = team.build_view(read_runs(raw))
    assert any("tests[0]" in e for e in view.errors)
    assert [c.release for c in view.columns] == ["3.8.0"]


def test_without_a_suite_the_team_pages_say_so(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "site"
    shutil.copytree(FIXTURES / "raw", raw)
    for path in raw.glob("*.json"):
        run = read_raw(path)
        run.extra.pop("tests", None)
        write_raw(run, path)
    build(raw, out)
    html = text(out / "team" / "index.html")
    assert "No run in these results ran a team's suite" in html
    assert not list((out / "team").glob("k-*.html"))


def test_the_markdown_report_has_the_suite_per_cell(site: Path) -> None:
    md = text(site / "README.md")
    assert "## Your suite" in md
    assert "| 3.8.0 | 2.4.6 | ✔ 8/8 | 21/21 |  |" in md
    assert "| 3.9.0 | 2.4.6 | ✖ 7/8 | 18/21 | `" in md and "test_matmul_block_ptr` failed |" in md


# ------------------------------------------------- gate.md and the pages say the same (issue 20)

REPO = Path(__file__).resolve().parent.parent
SUITE = "tests/fixtures/teamlib/tests"
KERNELS_PY = FIXTURES / "teamlib" / "teamlib" / "kernels.py"


def _with_definitions(raw: Path, suite: str = SUITE) -> None:
    """Give the fixture's launches the KERNEL DEFINITIONs a capture records today (its raw
    files are from before source capture): each kernel's source from its file, decorators
    stripped, its ``def`` line, its file relative to the suite's root."""
    import ast

    from matrix.measure.capture import strip_decorators

    text_ = KERNELS_PY.read_text()
    lines = text_.splitlines(keepends=True)
    defs = {}
    for node in ast.parse(text_).body:
        if isinstance(node, ast.FunctionDef) and node.decorator_list:
            block = "".join(lines[node.decorator_list[0].lineno - 1 : node.end_lineno])
            source, _ = strip_decorators(block)
            defs[node.name] = {"name": node.name, "qualname": node.name,
                               "module": "teamlib.kernels", "file": "../teamlib/kernels.py",
                               "line": node.lineno, "source": source, "source_hash": node.name,
                               "globals": {}, "closure": {}, "jit": {}, "cut": []}  # fmt: skip
    for path in raw.glob("*.json"):
        run = read_raw(path)
        run.extra["suite"] = {**run.extra["suite"], "path": suite}
        run.extra["kernel_sources"] = {f"d-{n}": d for n, d in defs.items()}
        for launch in run.extra["launches"]:
            launch["definition"] = f"d-{launch['kernel'].split(':')[-1]}"
        write_raw(run, path)


@pytest.fixture(scope="module")
def defined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(raw folder with definitions, its site, gate.md of ``--tests SUITE`` for 3.8.0 -> 3.9.0)."""
    base = tmp_path_factory.mktemp("defined")
    raw, out = base / "raw", base / "site"
    shutil.copytree(RAW, raw)
    _with_definitions(raw)
    build(raw, out)
    gate.main(["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw),
               "--out", str(base / "gate"), "--tests", str(REPO / SUITE)])  # fmt: skip
    return raw, out, (base / "gate" / "gate.md").read_text()


def _gate_md_entries(md: str) -> set[tuple[str, str, str]]:
    """(group, file:line, kernel) of every use gate.md ties a blocking entry to."""
    out, group = set(), None
    for line in md.splitlines():
        head = re.match(r"- \*\*(.+?)\*\*:", line)
        if head:
            group = head.group(1)
        use = re.match(r"  - (?:used at|may affect) `(\S+?):(\d+) in (\w+)", line)
        if use and group:
            path = Path(use.group(1))
            shown = (path if path.is_absolute() else REPO / path).resolve().relative_to(REPO)
            out.add((group, f"{shown.as_posix()}:{use.group(2)}", use.group(3)))
    return out


def _page_entries(html: str) -> set[tuple[str, str, str]]:
    """The same triples from an upgrade page's "Your code" table."""
    out = set()
    for row in re.findall(r'<tr data-kernel="([^"]+)" data-probe="([^"]+)".*?</tr>', html, re.S):
        kernel, probe = row
        body = re.search(
            rf'<tr data-kernel="{re.escape(kernel)}" data-probe="{re.escape(probe)}".*?</tr>',
            html,
            re.S,
        )
        assert body is not None
        for line in re.findall(r'data-line="([^"]+)"', body.group(0)):
            out.add((probe.split("[", 1)[0], line, kernel))
    return out


def test_gate_md_and_the_upgrade_page_tie_the_same_findings_to_the_same_lines(defined) -> None:
    _, out, md = defined
    html = text(out / "upgrades" / "3.8.0-to-3.9.0.html")
    from_md, from_page = _gate_md_entries(md), _page_entries(html)
    # Blocking uses of the block pointers (make_block_ptr, advance, boundary_check): named
    # with their kernel and line on both, and the same ones.
    assert from_md and from_md == from_page, from_md ^ from_page
    assert (
        "block_ptr",
        "tests/fixtures/teamlib/teamlib/kernels.py:51",
        "matmul_block_ptr_kernel",
    ) in from_md


def test_coverage_is_said_in_the_same_words_everywhere(defined) -> None:
    _, out, md = defined
    (line,) = [ln for ln in md.splitlines() if "captured specializations compiled" in ln]
    assert line == (
        "- baseline 3.8.0: 7 of 7 captured specializations compiled (21 of 21 compiles "
        "answered: 21 compiled, 0 rejected); candidate 3.9.0: 7 of 7 captured specializations "
        "compiled (21 of 21 compiles answered: 18 compiled, 3 rejected)"
    )
    upgrade_html = text(out / "upgrades" / "3.8.0-to-3.9.0.html")
    assert f'id="team-coverage">{line[2:]}</p>' in upgrade_html
    assert f'id="kernel-coverage">{line[2:]}</p>' in upgrade_html
    index = text(out / "team" / "index.html")
    for side in line[2:].split("; "):
        release, words = side.split(": ", 1)[0].split()[-1], side.split(": ", 1)[1]
        assert f'data-coverage="triton-{release}-numpy-2.4.6">{words}</td>' in index, side


def test_each_finding_links_to_its_source_line_and_its_fix(defined) -> None:
    raw, out, _ = defined
    view = team.build_view(read_runs(raw))
    (bp,) = [k for k in view.kernels if k.kernel == BLOCK_PTR]
    page = text(out / "team" / f"{bp.slug}.html")
    # The recorded source, a line anchor per file line.
    assert 'id="L51"' in page and "tl.make_block_ptr(a_ptr" in page
    findings = re.findall(r'<li id="(f-[^"]+)" data-probe="([^"]+)"(.*?)</li>', page, re.S)
    assert {p.split("[")[0] for _, p, _ in findings} >= {"block_ptr", "boundary_check"}
    for _, probe, body in findings:
        lines = re.findall(r'href="#L(\d+)" data-line="([^"]+)"', body)
        assert lines, probe
        for n, shown in lines:
            assert shown.endswith(f":{n}") and not shown.startswith("/")
            assert f'id="L{n}"' in page
        assert "<b>Fix:</b>" in body
    # The upgrade page links each line and each fix to that page.
    html = text(out / "upgrades" / "3.8.0-to-3.9.0.html")
    assert f'href="../team/{bp.slug}.html#L51"' in html
    for anchor, _, _ in findings:
        assert f'href="../team/{bp.slug}.html#{anchor}"' in html


def test_no_page_carries_an_absolute_path(tmp_path: Path) -> None:
    """A suite outside the checkout (the raw file names it absolutely) and test failures whose
    text names this machine's folders: no built page says where anything lived."""
    suite = tmp_path / "elsewhere" / "teamlib"
    shutil.copytree(FIXTURES / "teamlib", suite)
    raw, out = tmp_path / "raw", tmp_path / "site"
    shutil.copytree(RAW, raw)
    _with_definitions(raw, str(suite / "tests"))
    build(raw, out)
    roots = [str(tmp_path), str(REPO), str(Path.home())]
    pages = [p for p in out.rglob("*") if p.suffix in (".html", ".md")]  # matrix.json is raw
    assert any(p.parent.name == "team" and p.name.startswith("k-") for p in pages)
    for p in pages:
        body = p.read_text()
        for root in roots:
            assert root not in body, f"{p.relative_to(out)} names {root}"
    html = text(out / "upgrades" / "3.8.0-to-3.9.0.html")
    assert "--tests tests" in html and 'href="../team/' in html  # the suite named by its folder
