"""The report pages (matrix.report): what they show, self-contained and deterministic."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from matrix.catalog import PROBES
from matrix.report import __main__ as cli
from matrix.report import build, charts, model, render, verdicts
from matrix.results import Result, Run, SchemaError, read_runs, write_raw

FIXTURES = Path(__file__).parent / "fixtures"
RAW = FIXTURES / "raw"
BENCH = FIXTURES / "bench"


@dataclass
class StandInVerdict:
    """The shape matrix.report.claims.Verdict promises: id, note, quote, verdict, evidence."""

    id: str
    note: str
    quote: str
    verdict: str
    evidence: list[str]


def stand_in_claims(verdict_list: list[StandInVerdict]) -> Callable[[list[Run]], list]:
    return lambda runs: list(verdict_list)


STAND_IN = [
    StandInVerdict(
        "bp-removed-3.9", "matmul", "removed in 3.9", "holds", ["3.9.0 aot cuda:90: removed"]
    ),
    StandInVerdict(
        "bp-deprecated-3.7", "matmul", "deprecated in 3.7", "fails", ["3.7.1: supported"]
    ),
    StandInVerdict("acc-dtype-3.8", "matmul", "Triton 3.8 changed the dtype", "untested", []),
]


def render_fixtures(out: Path, claims: verdicts.ClaimsOutcome | None = None, **kw) -> model.Matrix:
    runs = read_runs(RAW)
    m = model.build(runs)
    if claims is None:
        claims = verdicts.evaluate_claims(runs, stand_in_claims(STAND_IN))
    render.render_site(m, out, claims=claims, bench=charts.load_bench(BENCH), **kw)
    return m


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, model.Matrix]:
    out = tmp_path_factory.mktemp("site")
    return out, render_fixtures(out)


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def html(site: tuple[Path, model.Matrix]) -> str:
    """The rendered index page's text."""
    return text(site[0] / "index.html")


def test_index_has_every_release_and_every_row(site: tuple[Path, model.Matrix]) -> None:
    out, m = site
    html = text(out / "index.html")
    runs = read_runs(RAW)
    for release in {r.env["triton"] for r in runs}:
        assert f'data-release="{release}"' in html
    for probe in {res.probe for r in runs for res in r.results}:
        assert f'data-probe="{probe}"' in html
    for row in m.rows:
        assert f'data-probe="{row.key.probe}" data-backend="{row.key.backend}"' in html
    assert html.count('class="cell tone-') == sum(len(r.cells) for r in m.rows)


def test_cells_show_status_as_text_and_colour(html: str) -> None:
    buttons = re.findall(
        r'<a class="cell tone-(\w+)"[^>]*>'
        r'<span class="icon" aria-hidden="true">(.)</span><span class="word"> ([^<]+)<',
        html,
    )
    assert buttons
    assert all(label.strip() for _, _, label in buttons)
    tones = {label: tone for tone, _, label in buttons}
    assert tones["pass"] == "good" and tones["fail"] == "breaking"
    assert tones["crashed"] == "breaking"
    assert tones["deprecated"] == "changed" and tones["skipped"] == "unmeasured"
    assert tones["missing"] == "unmeasured" and tones["not installed"] == "unmeasured"
    from matrix.catalog import MEANINGS_BY_NAME

    for tone, mark, _ in buttons:
        assert mark == MEANINGS_BY_NAME[tone].icon  # icon and text, never colour alone
    for tone in MEANINGS_BY_NAME:
        assert f'class="chip tone-{tone}"' in html  # the legend
    # No colour contradicts its word: a "silently wrong" cell whose status word is not wrong
    # (evidence says correct: false) says so in its word.
    for tone, _, label in buttons:
        if tone == "wrong" and not label.startswith("wrong"):
            assert label.endswith(", wrong result"), label


def test_missing_and_uninstalled_cells_explain_themselves(html: str) -> None:
    detail = read_runs(RAW / "triton-3.3.1-numpy-2.3.5.json")[0].install["detail"]
    assert detail in html
    assert "no run for Triton 3.6.0 with numpy 2.3.5" in html
    assert "was interrupted (complete: false)" in html
    assert "child process died with signal 11" in html
    assert "unknown probe" in html


def test_evidence_shows_data_fields_and_seconds(html: str, site: tuple[Path, model.Matrix]) -> None:
    # The matrix page's cell links to its evidence on the probe's page, which has it once.
    ev_id = "ev-dot_f32_default_precision--aot_cuda_90--3.9.0"
    assert f'href="probes/dot_f32_default_precision.html#{ev_id}"' in html
    assert f'id="{ev_id}"' not in html
    html = text(site[0] / "probes" / "dot_f32_default_precision.html")
    ev = re.search(
        r'<details class="evidence" id="ev-dot_f32_default_precision--aot_cuda_90--3.9.0">'
        r"\s*<summary>dot_f32_default_precision · aot:cuda:90 · Triton 3.9.0 .*?</details>",
        html,
        re.S,
    )
    assert ev, "no evidence block for dot_f32_default_precision aot cuda:90 on 3.9.0"
    block = ev.group(0)
    assert "<dt>asm_excerpt</dt>" in block and "mma.sync" in block
    assert "<dt>ttir</dt>" in block and "0.80 s" in block


def test_summary_names_kernel_releases_changes_and_wrong_claims(
    site: tuple[Path, model.Matrix],
) -> None:
    html = text(site[0] / "index.html")
    summary = html[html.index('id="summary"') : html.index('id="releases"')]
    kernels = summary[summary.index("summary-kernels") : summary.index("summary-changes")]
    assert re.search(
        r"pass<span class=\"sr\"> \(good\)</span></span> on\s*<a[^>]*>3.3.1</a>", kernels
    )
    assert "3.9.0: splitk [interpret, numpy 1.26.4]: fail" in kernels
    assert "block_ptr" in summary and "deprecated" in summary
    claims = summary[summary.index("summary-claims") :]
    assert "bp-deprecated-3.7" in claims and "bp-removed-3.9" not in claims


def test_pages_are_self_contained(site: tuple[Path, model.Matrix]) -> None:
    out = site[0]
    pages = sorted(out.rglob("*.html"))
    upgrades = 1  # the upgrades index (render_site is given no pairs here)
    upgrades += 4  # performance.html, fingerprint.html, known-issues.html, api/index.html
    upgrades += 2  # team/index.html, team/tests.html (no suite here: no kernel pages)
    # +1: the unknown probe
    assert len(pages) == 3 + len(site[1].releases) + len(PROBES) + 1 + upgrades
    for page in pages:
        html = text(page)
        assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", html), page
        assert "<link" not in html and "<script src" not in html and "@import" not in html, page
        assert "<style>" in html and "<script>" in html


def test_links_between_pages_resolve(site: tuple[Path, model.Matrix]) -> None:
    out = site[0]
    for page in out.rglob("*.html"):
        for href in re.findall(r'href="([^"#]+)(?:#[^"]*)?"', text(page)):
            assert (page.parent / href).resolve().is_file(), f"{page.name}: broken link {href}"


def test_rendering_is_deterministic(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(RAW, raw)
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        build(raw, out, bench_dir=BENCH)
        outs.append(out)
    files_a = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) > 10
    for rel in files_a:
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes(), rel


def test_merge_writes_matrix_json(tmp_path: Path) -> None:
    built = build(RAW, tmp_path, bench_dir=BENCH)
    doc = json.loads((tmp_path / "matrix.json").read_text())
    assert built.runs == len(doc["runs"]) == len(list(RAW.glob("*.json")))


def test_release_page_has_env_install_results_and_timings(site: tuple[Path, model.Matrix]) -> None:
    html = text(site[0] / "releases" / "3.3.1.html")
    assert "triton-3.3.1-numpy-2.3.5" in html and "Install failed" in html
    assert "torch" in html and "2.13.0+cpu" in html
    assert "<svg" in html
    gpu = text(site[0] / "releases" / "3.9.0.html")
    assert "NVIDIA H200 (9.0)" in gpu
    assert "tests/test_user_kernels.py::test_matmul[fp32]" in gpu  # a run's extra "tests" key
    assert "interrupted" in gpu


def test_probe_page_reads_source_without_importing(tmp_path: Path) -> None:
    probes = tmp_path / "probes"
    (probes / "block_ptr").mkdir(parents=True)
    (probes / "block_ptr" / "probe.py").write_text(
        '"""Does tl.make_block_ptr still work, warn, or raise?"""\n'
        "import triton_not_installed_here  # importing this module would fail\n\n"
        "def run(backend):\n    '''Compile and run a block-pointer kernel.'''\n"
    )
    out = tmp_path / "site"
    render_fixtures(out, probes_dir=probes)
    page = text(out / "probes" / "block_ptr.html")
    assert "Does tl.make_block_ptr still work, warn, or raise?" in page
    assert "Compile and run a block-pointer kernel." in page
    assert "import triton_not_installed_here" in page
    missing = text(out / "probes" / "tiled.html")
    assert "tiled/probe.py does not exist (yet)" in missing
    (probes / "loader").mkdir()
    broken = probes / "loader" / "probe.py"
    broken.write_text("def (:\n")
    render_fixtures(out, probes_dir=probes)
    assert "does not parse" in text(out / "probes" / "loader.html")


def test_unknown_probe_has_a_page(site: tuple[Path, model.Matrix]) -> None:
    page = text(site[0] / "probes" / "dot_scaled_fp8.html")
    assert "not in <code>matrix.catalog.PROBES</code>" in page


def test_changes_page_lists_every_change(site: tuple[Path, model.Matrix]) -> None:
    out, m = site
    html = text(out / "changes.html")
    assert m.changes
    for c in m.changes:
        assert c.text.replace(">", "&gt;") in html or c.text in html


def test_claims_page_with_verdicts(site: tuple[Path, model.Matrix]) -> None:
    html = text(site[0] / "claims.html")
    for v in STAND_IN:
        assert f'id="claim-{v.id}"' in html and v.quote in html
    assert "3.7.1: supported" in html


def test_claims_not_available_is_said_visibly(tmp_path: Path) -> None:
    def raising(runs: list[Run]) -> list[StandInVerdict]:
        raise RuntimeError("claims.toml: bad check")

    outcome = verdicts.evaluate_claims([], raising)
    assert "claims.toml: bad check" in outcome.error and not outcome.available
    render_fixtures(tmp_path, claims=outcome)
    assert 'id="claims-unavailable"' in text(tmp_path / "claims.html")
    assert "Claims not available" in text(tmp_path / "index.html")
    assert "not available" in text(tmp_path / "README.md")


def test_a_malformed_verdict_is_an_error() -> None:
    bad = stand_in_claims([StandInVerdict("x", "n", "q", "maybe", [])])
    assert "expected one of" in verdicts.evaluate_claims([], bad).error


def test_cli_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    assert cli.main(["--raw", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "raw_dir" in capsys.readouterr().err
    monkeypatch.setattr(
        verdicts, "evaluate_claims", lambda runs: verdicts.ClaimsOutcome(error="RuntimeError: boom")
    )
    assert cli.main(["--raw", str(RAW), "--out", str(tmp_path / "o")]) == 1
    assert "boom" in capsys.readouterr().err
    assert "boom" in text(tmp_path / "o" / "claims.html")


def test_cli_with_the_real_claims(tmp_path: Path) -> None:
    rc = cli.main(["--raw", str(RAW), "--out", str(tmp_path), "--bench", str(BENCH)])
    assert rc == 0
    assert verdicts.evaluate_claims(read_runs(RAW)).available
    assert "claim-" in text(tmp_path / "claims.html")


def test_bad_raw_file_fails_loudly(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "broken.json").write_text('{"schema": 1, "runs": [{"id": "x"}]}')
    assert cli.main(["--raw", str(raw), "--out", str(tmp_path / "o")]) == 2


def test_empty_raw_folder_is_an_error_not_empty_pages(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    assert cli.main(["--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o" / "index.html").exists()


def test_stale_pages_are_removed(tmp_path: Path) -> None:
    stale = tmp_path / "releases" / "9.9.9.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    render_fixtures(tmp_path)
    assert not stale.exists() and (tmp_path / "releases" / "3.9.0.html").exists()


def test_untrusted_text_is_escaped(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    run = Run(
        "evil",
        {"triton": "3.9.0", "numpy": "2.4.6"},
        results=[
            Result(
                "block_ptr",
                "interpret",
                None,
                "removed",
                detail="<script>alert(1)</script>",
                data={"note": "<img src=x onerror=alert(1)>"},
            )
        ],
    )
    write_raw(run, raw / "evil.json")
    build(raw, tmp_path / "o")
    for page in (tmp_path / "o").rglob("*.html"):
        html = text(page)
        assert "<script>alert(1)" not in html and "<img src=x" not in html, page


def test_readme_has_the_matrix_in_markdown(site: tuple[Path, model.Matrix]) -> None:
    out, m = site
    md = text(out / "README.md")
    header = next(line for line in md.splitlines() if line.startswith("| probe | backend |"))
    assert [c.strip() for c in header.strip("| ").split("|")][2:] == [r.version for r in m.releases]
    for row in m.rows:
        assert f"| {row.key.probe}" in md and f"| {row.key.label} |" in md
    table = [line for line in md.splitlines() if line.startswith("| splitk | interpret")]
    assert table and "✖ fail" in table[0] and "✔ pass" in table[0]


def test_bench_ratios_come_from_the_records() -> None:
    doc = json.loads((BENCH / "splitk-vs-cublas.json").read_text())
    recs = doc["records"]
    ratios, unmatched = charts.bench_ratios(recs)
    # Graph time where every record has it (the README's headline timer), eager beside it.
    timer = "us_graph" if all(x.get("us_graph") for x in recs) else "us"
    for r in ratios:
        key = ("m", "n", "k", "dtype", "layout")
        same = [x for x in recs if all(x[f] == r.record[f] for f in key)]
        assert r.shape == "{m}×{n}×{k} {dtype} {layout}".format(**r.record)
        fastest = min(x[timer] for x in same if x["impl"] == r.impl)
        cublas = min(x[timer] for x in same if x["impl"] == "cublas")
        assert r.ratio == pytest.approx(fastest / cublas)  # lower is faster, as everywhere
        assert (r.eager_ratio is None) == (timer == "us")
    assert {r.impl for r in ratios} == {"splitk", "splitk_deterministic", "tiled"}
    assert unmatched == ["32×32×65536 float16 tn: no cublas record"]


def test_bench_chart_on_the_index(html: str) -> None:
    assert "Split-K time over cuBLAS's" in html and "splitk-vs-cublas.json" in html
    assert html.count("<svg") == 2  # time per cell and the benchmark


def test_bad_bench_record_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text(
        json.dumps([{"m": 1, "n": 1, "k": 1, "dtype": "float16", "layout": "nn", "impl": "splitk"}])
    )
    with pytest.raises(SchemaError, match=r"b.json\[0\]\.us: missing"):
        charts.load_bench(tmp_path)
    (tmp_path / "b.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(SchemaError, match="expected a list of records"):
        charts.load_bench(tmp_path)


def test_time_chart_totals_install_and_probe_seconds() -> None:
    run = Run(
        "r",
        {"triton": "3.9.0", "numpy": "2.4.6"},
        install={"status": "ok", "seconds": 4.25, "detail": ""},
        results=[
            Result("splitk", "interpret", None, "pass", seconds=1.5),
            Result("tiled", "interpret", None, "pass", seconds=2.0),
        ],
    )
    svg = charts.time_chart([run])
    assert svg.startswith("<svg") and "7.8 s" in svg and "total 7.75 s" in svg
    assert model.run_seconds(run) == pytest.approx(7.75)


def _luminance(hex_colour: str) -> float:
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_meaning_colours_differ_in_luminance_and_text_is_readable() -> None:
    from matrix.catalog import MEANINGS
    from matrix.report.render import MEANING_COLOURS, REGRESSION, TONES_BY_NAME

    # Every catalog meaning, and the report's regression tone (a transition), has colours.
    assert set(MEANING_COLOURS) == {m.name for m in MEANINGS} | {REGRESSION.name}
    assert set(TONES_BY_NAME) == set(MEANING_COLOURS)
    backgrounds = {name: bg for name, (bg, _, _) in MEANING_COLOURS.items()}
    names = sorted(backgrounds)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ratio = _contrast(backgrounds[a], backgrounds[b])
            assert ratio >= 1.3, f"{a} and {b} backgrounds: contrast {ratio:.2f} < 1.3"
    for name, (bg, fg, _) in MEANING_COLOURS.items():
        assert _contrast(bg, fg) >= 4.5, f"{name}: text contrast {_contrast(bg, fg):.2f}"


def test_every_catalog_status_has_a_meaning_and_bad_evidence_is_never_good() -> None:
    from matrix.catalog import MEANINGS_BY_NAME, PROBES, meaning_of

    for spec in PROBES:
        for status in spec.all_statuses:
            assert spec.meaning(status) in MEANINGS_BY_NAME
            assert meaning_of(spec.name, status, {"correct": False}) == "wrong"
    assert meaning_of("block_ptr", "removed") == "breaking"
    assert meaning_of("descriptor_misaligned_stride", "accepted") == "wrong"
    assert meaning_of("allow_tf32", "accepted", {"correct": True}) == "good"
    assert meaning_of("allow_tf32", "accepted", {"correct": False}) == "wrong"


def test_rst_docstrings_become_text() -> None:
    from matrix.report.render import rst

    html = str(rst("Uses ``tl.dot`` and *one* case.\n\n- first\n- second ``x``"))
    assert "<code>tl.dot</code>" in html and "<em>one</em>" in html and "``" not in html
    assert "<ul><li>first</li><li>second <code>x</code></li></ul>" in html


def test_as_text_block_keeps_its_line_breaks(tmp_path) -> None:
    from matrix.report import build

    build(FIXTURES / "raw", tmp_path, bench_dir=FIXTURES / "bench")
    page = (tmp_path / "changes.html").read_text()
    block = page.split("<h3>As text</h3>\n<pre", 1)[1].split(">", 1)[1].split("</pre>", 1)[0]
    assert block.count("\n") >= 2 and all(" -&gt; " in line for line in block.splitlines())
    assert oct((tmp_path / "index.html").stat().st_mode & 0o777) == "0o644"


# A page a browser opens whole: the matrix page was 1.97 MB with every cell's evidence again.
PAGE_LIMIT = 1_000_000


def test_every_page_of_the_report_is_under_1_mb() -> None:
    """Every page of the full report (``REPORT_SITE``, else the committed reports/) is under
    1 MB."""
    import os

    site = Path(os.environ.get("REPORT_SITE", Path(__file__).resolve().parent.parent / "reports"))
    sizes = {str(p.relative_to(site)): p.stat().st_size for p in site.rglob("*.html")}
    assert len(sizes) > 200, f"{site}: {len(sizes)} pages, expected the full report"
    big = {name: size for name, size in sizes.items() if size >= PAGE_LIMIT}
    assert not big, f"pages of 1 MB or more: {big}"
