"""The matrix page in a real browser: Debian's chromium driven by Playwright, from file://.

Needs ``chromium`` on PATH and the ``playwright`` Python package (``.ci/install-browser.sh``);
Playwright's own browser download is never used. Without them the test skips, unless
``REQUIRE_BROWSER=1`` (CI) makes it fail: a browser test that silently never runs proves nothing.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from matrix.report import build
from matrix.results import raw_files, read_runs

FIXTURES = Path(__file__).parent / "fixtures"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "test-output"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.browser


def _unavailable(reason: str) -> None:
    message = f"{reason}; install with .ci/install-browser.sh"
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(f"REQUIRE_BROWSER=1 but {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    if chromium is None:
        _unavailable("no `chromium` on PATH (Debian package chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the Python package `playwright` is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build(FIXTURES / "raw", out, bench_dir=FIXTURES / "bench")
    return out


@pytest.fixture
def page(browser, site: Path):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = context.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
    )
    pg.on(
        "request",
        lambda r: (
            None if r.url.startswith(("file:", "data:")) else problems.append(f"fetch {r.url}")
        ),
    )
    pg.goto((site / "index.html").as_uri())
    yield pg
    context.close()
    assert problems == [], "the page must work offline without errors"


def test_matrix_page_in_chromium(page, site: Path) -> None:
    runs = read_runs(FIXTURES / "raw")
    releases = sorted({r.env["triton"] for r in runs})
    probes = sorted({res.probe for r in runs for res in r.results})

    for release in releases:
        header = page.locator(f'thead th[data-release="{release}"]')
        assert header.is_visible(), f"no visible column header for release {release}"
    for probe in probes:
        assert page.locator(f'table.matrix tbody tr[data-probe="{probe}"]').count() > 0, (
            f"no row for {probe}"
        )
        assert page.locator(f'table.matrix tbody tr[data-probe="{probe}"]').first.is_visible()

    # Click a cell: its evidence (detail and data fields) shows in the panel, focus moves in.
    panel = page.locator("#evidence-panel")
    assert not panel.is_visible()
    cell = page.locator(
        'tr[data-probe="block_ptr"][data-backend="interpret"] a.cell[data-release="3.7.1"]'
    ).first
    # The cell shows its mark (every release fits the screen); its word is in its name, its
    # tooltip, and on screen with "show status words".
    assert cell.inner_text().strip() == "△" and "deprecated" in cell.get_attribute("title")
    page.check("#show-words")
    assert "deprecated" in cell.inner_text()
    page.uncheck("#show-words")
    name = cell.get_attribute("aria-label")
    assert "block_ptr" in name and "backend interpret" in name and "Triton 3.7.1" in name
    assert "numpy" in name and "deprecated" in name
    # The matrix page links the cell to its evidence on the probe's page (the evidence is
    # there once, not again on the matrix page), which opens it in its panel.
    assert not panel.count(), "the matrix page carries no evidence of its own"
    ev_id = cell.get_attribute("href").split("#")[1]
    cell.click()
    # The probe's page writes its state into the address (#cell=ev-...) as it opens the panel.
    page.wait_for_url(lambda url: "/probes/block_ptr.html#" in url and ev_id in url)
    assert panel.is_visible()
    evidence = panel.locator(f'[id="{ev_id}"]')
    assert evidence.is_visible()
    shown = evidence.inner_text()
    assert "UserWarning" in shown and "warning_category" in shown and "0.70 s" in shown
    assert panel.locator("details.evidence:visible").count() == 1
    assert page.evaluate("document.activeElement.id") == "evidence-heading"
    page.screenshot(path=str(_shot("report-index-evidence.png")))

    # A cell with no observation explains itself.
    page.goto((site / "index.html").as_uri())
    page.locator(
        'tr[data-probe="splitk"][data-backend="interpret"] a.cell[data-release="3.3.1"]'
    ).nth(1).click()
    assert "install failed" in panel.locator("details.evidence:visible").inner_text()
    page.keyboard.press("Escape")
    assert not panel.is_visible()

    # Filter by backend, then by probe.
    page.goto((site / "index.html").as_uri())
    total = page.locator("table.matrix tbody tr").count()
    page.select_option("#filter-backend", "aot")
    visible = page.locator("table.matrix tbody tr:visible")
    assert 0 < visible.count() < total
    backends = {visible.nth(i).get_attribute("data-backend") for i in range(visible.count())}
    assert backends == {"aot"}
    page.select_option("#filter-probe", "block_ptr")
    visible = page.locator("table.matrix tbody tr:visible")
    keys = {
        (visible.nth(i).get_attribute("data-probe"), visible.nth(i).get_attribute("data-backend"))
        for i in range(visible.count())
    }
    assert keys == {("block_ptr", "aot")} and visible.count() == 3
    # The probe name shows on the first row still visible, though that row is not its group's first.
    assert visible.first.locator("th .name").is_visible()
    assert f"3 of {total} rows" in page.locator("#row-count").inner_text()
    page.select_option("#filter-backend", "")
    page.select_option("#filter-probe", "")
    assert page.locator("table.matrix tbody tr:visible").count() == total

    page.screenshot(path=str(_shot("report-index.png")), full_page=True)


def _visible_rows(page) -> list:
    rows = page.locator("table.matrix tbody tr:visible")
    return [rows.nth(i) for i in range(rows.count())]


def test_filters_search_and_permalink(page, site: Path) -> None:
    total = page.locator("table.matrix tbody tr").count()
    page.check("#filter-problems")
    rows = _visible_rows(page)
    assert 0 < len(rows) < total
    for r in rows:
        meanings = r.locator("a.cell").evaluate_all("els => els.map(e => e.dataset.meaning)")
        assert {"breaking", "wrong"} & set(meanings), r.get_attribute("data-probe")
    page.uncheck("#filter-problems")
    page.check("#filter-changes")
    for r in _visible_rows(page):
        statuses = r.locator("a.cell:not(.tone-unmeasured)").evaluate_all(
            "els => els.map(e => e.textContent.trim())"
        )
        assert len(set(statuses)) > 1
    page.uncheck("#filter-changes")
    page.check("#filter-measured")
    for r in _visible_rows(page):
        assert r.locator("a.cell:not(.tone-unmeasured)").count() > 0
    page.uncheck("#filter-measured")
    # Free text over the evidence: a warning category that only the evidence names.
    page.fill("#filter-q", "UserWarning")
    rows = _visible_rows(page)
    assert 0 < len(rows) < total
    assert {r.get_attribute("data-probe") for r in rows} == {"block_ptr"}
    # The permalink keeps the filter and a cell; opening it restores both (on the probe's page,
    # where the evidence and its panel are).
    page.goto((site / "probes" / "block_ptr.html").as_uri())
    page.fill("#filter-q", "UserWarning")
    cell = page.locator("tr:visible a.cell.tone-changed").first
    cell.click()
    link = page.locator("#permalink").get_attribute("href")
    assert "q=UserWarning" in link and "cell=ev-" in link
    url = page.url.split("#")[0] + link
    fresh = page.context.new_page()
    fresh.goto(url)
    assert fresh.locator("#filter-q").input_value() == "UserWarning"
    assert fresh.locator("#evidence-panel").is_visible()
    assert fresh.locator(f'[id="{cell.get_attribute("href").split("#")[1]}"]').is_visible()
    # A cell's permalink from before the matrix page linked out (index.html#ev-...) follows
    # the cell to its probe's page.
    fresh.goto((site / "index.html").as_uri() + "#" + cell.get_attribute("href").split("#")[1])
    fresh.wait_for_url(lambda url: "/probes/block_ptr.html#" in url)
    assert fresh.locator(f'[id="{cell.get_attribute("href").split("#")[1]}"]').is_visible()
    # A bare #ev- link (as the evidence's own permalink) opens that cell's evidence too.
    fresh.goto(page.url.split("#")[0] + "#" + cell.get_attribute("href").split("#")[1])
    fresh.reload()
    assert fresh.locator(f'[id="{cell.get_attribute("href").split("#")[1]}"]').is_visible()
    fresh.close()


def test_keyboard_focus_into_and_out_of_the_panel(page, site: Path) -> None:
    page.goto((site / "probes" / "splitk.html").as_uri())  # a page with the evidence panel
    cell = page.locator("a.cell").first
    cell.focus()
    page.keyboard.press("Enter")
    assert page.locator("#evidence-panel").is_visible()
    assert page.evaluate("document.activeElement.id") == "evidence-heading"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "close"
    page.keyboard.press("Enter")
    assert not page.locator("#evidence-panel").is_visible()
    focused = "document.activeElement.getAttribute('href').split('#')[1]"
    assert page.evaluate(focused) == cell.get_attribute("href").split("#")[1]
    page.keyboard.press(" ")
    assert page.locator("#evidence-panel").is_visible()
    page.keyboard.press("Escape")
    focused = "document.activeElement.getAttribute('href').split('#')[1]"
    assert page.evaluate(focused) == cell.get_attribute("href").split("#")[1]


def test_evidence_without_javascript(browser, site: Path) -> None:
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1200, "height": 900}
    )
    pg = context.new_page()
    pg.goto((site / "index.html").as_uri())
    cell = pg.locator("a.cell").first
    target = cell.get_attribute("href")
    assert re.fullmatch(r"probes/[\w.]+\.html#ev-.+", target), target
    cell.click()  # the matrix page links to the evidence on the probe's page
    pg.wait_for_url(f"**/{target}")
    details = pg.locator(f'details[id="{target.split("#")[1]}"]')
    assert details.count() == 1
    if details.get_attribute("open") is None:
        details.locator("summary").click()
    assert details.locator("dl").is_visible()
    context.close()


def test_phone_width_scrolls_only_the_grid(browser, site: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    pg = context.new_page()
    for name in ["index.html", "changes.html", "claims.html", "upgrades/index.html"]:
        pg.goto((site / name).as_uri())
        wide = pg.evaluate("document.documentElement.scrollWidth")
        assert wide <= 390, f"{name}: the page is {wide} px wide at 390 px"
    pg.goto((site / "index.html").as_uri())
    pg.locator("a.cell").first.click()
    pg.wait_for_url(lambda url: "/probes/" in url)  # the evidence opens on the probe's page
    close = pg.locator("#evidence-panel .close")
    box = close.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390, "the close button is cut off"
    context.close()


def test_print_keeps_every_release_column(browser, site: Path) -> None:
    context = browser.new_context(viewport={"width": 1050, "height": 740})
    pg = context.new_page()
    pg.goto((site / "index.html").as_uri())
    pg.emulate_media(media="print")
    headers = pg.locator("thead th.rel")
    assert headers.count() == len({r.env["triton"] for r in read_runs(FIXTURES / "raw")})
    for i in range(headers.count()):
        box = headers.nth(i).bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1050, (
            f"release {headers.nth(i).inner_text()} is off the printed page"
        )
    assert pg.pdf(format="A4", landscape=True)[:4] == b"%PDF"
    context.close()


def _shot(name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS / name


REPORTS = Path(__file__).resolve().parent.parent / "reports"
# Evidence words that mean the result was wrong or the feature is gone.
BAD_EVIDENCE = ("correct: false", '"correct": false', "removed")


def test_committed_report_never_marks_bad_evidence_good(browser) -> None:
    """Every cell of the committed pages, read from the rendered probe pages (each has its
    probe's cells and their evidence; the matrix page links there): a cell whose status is
    ``wrong``/``removed`` or whose evidence has ``correct: false`` is not good."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    cells = []
    for probe_page in sorted((REPORTS / "probes").glob("*.html")):
        pg.goto(probe_page.as_uri())
        cells += pg.evaluate(
            """() => Array.from(document.querySelectorAll('a.cell')).map(a => {
            const id = a.getAttribute('href').split('#')[1];
            const ev = document.getElementById(id);
            const dd = ev ? Array.from(ev.querySelectorAll('dt')).map(
                dt => dt.textContent + ': ' + dt.nextElementSibling.textContent).join('\\n') : '';
            return {id: id, meaning: a.dataset.meaning, text: a.textContent.trim(),
                    evidence: dd, found: !!ev};
        })"""
        )
    assert len(cells) > 500
    assert all(c["found"] for c in cells), [c["id"] for c in cells if not c["found"]][:5]
    checked = 0
    for c in cells:
        status = c["text"].split(" ", 1)[-1]
        says_bad = status in ("wrong", "removed") or "correct: false" in c["evidence"]
        if says_bad:
            checked += 1
            assert c["meaning"] != "good" and not c["text"].startswith("✔"), c
    assert checked > 10
    context.close()


@pytest.mark.parametrize(
    "baseline,candidate", [("3.8.0", "3.9.0"), ("3.6.0", "3.7.1"), ("3.4.0", "3.5.1")]
)
def test_upgrade_page_verdict_is_the_gates_exit(browser, committed_gate, baseline, candidate):
    from matrix.gate.verdict import EXIT_SAFE, VERDICTS

    code, _ = committed_gate(baseline, candidate)
    assert code in VERDICTS
    context = browser.new_context()
    pg = context.new_page()
    pg.goto((REPORTS / "upgrades" / f"{baseline}-to-{candidate}.html").as_uri())
    verdict = pg.locator("#verdict")
    assert verdict.get_attribute("data-exit") == str(code)
    assert VERDICTS[code] in verdict.inner_text()
    if code != EXIT_SAFE:
        assert "✔" not in verdict.inner_text()
    context.close()


@pytest.fixture(scope="module")
def team_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("team-site")
    build(FIXTURES / "teamlib_raw", out)
    return out


TEAM_PAGES = ["team/index.html", "team/tests.html", "upgrades/3.8.0-to-3.9.0.html",
              "releases/3.9.0.html"]  # fmt: skip


def test_team_pages_at_phone_width(browser, team_site: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    pg = context.new_page()
    kernel_pages = sorted(p.relative_to(team_site) for p in (team_site / "team").glob("k-*.html"))
    assert len(kernel_pages) == 7
    for name in [*TEAM_PAGES, *map(str, kernel_pages)]:
        pg.goto((team_site / name).as_uri())
        wide = pg.evaluate("document.documentElement.scrollWidth")
        assert wide <= 390, f"{name}: the page is {wide} px wide at 390 px"
    pg.goto((team_site / "team" / kernel_pages[0].name).as_uri())
    pg.screenshot(path=str(_shot("team-kernel-phone.png")), full_page=True)
    context.close()


def test_team_pages_by_keyboard(browser, team_site: Path) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.goto((team_site / "index.html").as_uri())
    # From the matrix page, Tab reaches the link to the kernel index; Enter opens it.
    for _ in range(400):
        pg.keyboard.press("Tab")
        if pg.evaluate("document.activeElement.getAttribute('href')") == "team/index.html":
            break
    else:
        pytest.fail("Tab never reached the link to the team's kernels")
    pg.keyboard.press("Enter")
    pg.wait_for_url("**/team/index.html")
    # The first kernel link in the index, then its page: a releases x targets table.
    for _ in range(100):
        pg.keyboard.press("Tab")
        href = pg.evaluate("document.activeElement.getAttribute('href') || ''")
        if href.startswith("k-"):
            break
    else:
        pytest.fail("Tab never reached a kernel page link")
    pg.keyboard.press("Enter")
    pg.wait_for_url("**/team/k-*.html")
    grid = pg.locator("table.kernel-grid").first
    assert grid.locator("td[data-status]").count() == 6  # 2 releases x 3 targets
    pg.screenshot(path=str(_shot("team-kernel.png")), full_page=True)
    pg.goto((team_site / "team" / "tests.html").as_uri())
    region = pg.locator('[role="region"][aria-label="tests by release"]')
    region.focus()
    assert pg.evaluate("document.activeElement.getAttribute('role')") == "region"
    pg.screenshot(path=str(_shot("team-tests.png")), full_page=True)
    context.close()


# ------------------------------------------------------------------ every pair, on committed data

# A subset of the committed results (five releases, with the GPU benchmark files beside them, as
# the gate reads them): 3.2.0 -> 3.9.0 is a pair with no page of its own, decided for the
# chooser by the gate's code at build time, and UNSAFE for this project's kernels (its loader
# moves from pointers to descriptors at 3.3.1), so its page names what blocks; every pair of
# 3.6.0-3.9.0 is SAFE for them.
SUBSET = ("3.2.0", "3.6.0", "3.7.1", "3.8.0", "3.9.0")


@pytest.fixture(scope="module")
def committed_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("committed")
    raw = root / "raw"
    raw.mkdir()
    for path in raw_files(REPORTS / "raw"):
        if path.name.split("-")[1] in SUBSET:
            shutil.copy(path, raw / path.name)
    shutil.copytree(REPORTS / "bench", root / "bench")
    out = root / "site"
    build(raw, out, bench_dir=root / "bench", commit="abc1234", date="2026-12-01")
    return out


@pytest.fixture(scope="module")
def committed_gate(tmp_path_factory: pytest.TempPathFactory):
    """``python -m matrix.gate --scan kernels`` (the pages' verdict: this project's
    own code) on the committed raw files, once per pair for the module:
    (exit code, its markdown). Four tests read the same three pairs; each gate run reads all
    the committed cells. Its stderr goes with a code outside the verdicts."""
    import functools
    import subprocess
    import sys

    from matrix.gate.verdict import VERDICTS

    out = tmp_path_factory.mktemp("committed-gate")

    @functools.cache
    def gate(baseline: str, candidate: str) -> tuple[int, str]:
        from matrix.report.upgrade import own_paths

        scans = [a for p in own_paths() for a in ("--scan", p)]
        done = subprocess.run(
            [sys.executable, "-m", "matrix.gate", "--baseline", baseline, "--candidate",
             candidate, "--results", str(REPORTS / "raw"), "--out",
             str(out / f"{baseline}-{candidate}"), *scans],
            cwd=REPORTS.parent, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode in VERDICTS, done.stderr[-3000:]
        return done.returncode, done.stdout

    return gate


# On the four-release build (committed_site: a full report build of four releases): tests_slow,
# which CI runs after tests.
@pytest.mark.slow
def test_any_pair_shows_the_gates_verdict_for_a_non_adjacent_pair(
    browser, committed_site: Path, committed_gate
) -> None:
    from matrix.gate.verdict import VERDICTS

    code, markdown = committed_gate("3.2.0", "3.9.0")
    assert code == 1, markdown[:2000]  # a page that names what blocks
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    pg = context.new_page()
    pg.goto((committed_site / "upgrades" / "index.html").as_uri())
    cell = pg.locator('#pair-grid td[data-baseline="3.2.0"][data-candidate="3.9.0"]')
    assert cell.get_attribute("data-verdict") == VERDICTS[code]
    cell.locator("a").click()
    verdict = pg.locator("#verdict")
    assert verdict.get_attribute("data-exit") == str(code)
    assert verdict.get_attribute("data-verdict") == VERDICTS[code]
    # The gate's reasons in its order: its first entry is the first reason named.
    details = markdown.split("## Details", 1)[-1]  # the first screen groups them its own way
    first = next(line for line in details.splitlines() if line.startswith("- **"))
    first_name = first.split("**")[1]
    assert first_name in pg.locator("#top-reasons li").first.inner_text()
    pg.screenshot(path=str(_shot("any-pair-3.2.0-3.9.0.png")))
    # A downgrade has its page and verdict too.
    down, _ = committed_gate("3.9.0", "3.6.0")
    pg.goto((committed_site / "upgrades" / "3.9.0-to-3.6.0.html").as_uri())
    assert pg.locator("#verdict").get_attribute("data-exit") == str(down)
    context.close()


def _gate_entries(markdown: str) -> int:
    """Entries the gate lists: the counts in its "### Section (N)" headings, undecidable aside."""
    import re

    return sum(
        int(n)
        for title, n in re.findall(r"^### (.+) \((\d+)\)$", markdown, re.M)
        if title != "Undecidable"
    )


# On the four-release build (committed_site: a full report build of four releases): tests_slow,
# which CI runs after tests.
@pytest.mark.slow
def test_upgrade_page_names_entries_as_the_gate_does_and_prints_short(
    browser, committed_site: Path, committed_gate
) -> None:
    import re

    # (3.2.0 -> 3.6.0: UNSAFE for kernels/, the loader moves to descriptors; 3.6.0-3.9.0 SAFE)
    code, markdown = committed_gate("3.2.0", "3.6.0")
    assert code == 1, markdown[:2000]
    gate_entries = _gate_entries(markdown)
    assert gate_entries > 10
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    pg = context.new_page()
    pg.goto((committed_site / "upgrades" / "3.2.0-to-3.6.0.html").as_uri())
    shown = pg.locator('details.item[id^="o-"]').count()  # this project's code's entries
    assert 0 < shown <= 1.5 * gate_entries, (shown, gate_entries)
    assert pg.locator("#verdict").get_attribute("data-exit") == str(code)
    assert "for this project's own code" in pg.locator("#verdict").inner_text()
    assert "--scan YOUR_DIR" in pg.locator("#verdict").inner_text()
    # The verdict's first reasons come before any entry; what it cannot decide is collapsed.
    order = pg.evaluate(
        """() => { const top = document.getElementById('top-reasons');
                   const first = document.querySelector('details.item');
                   const after = Node.DOCUMENT_POSITION_FOLLOWING;
                   return !!(top.compareDocumentPosition(first) & after); }"""
    )
    assert order, "the first reasons must come before the entries"
    assert pg.locator("#cannot-decide").get_attribute("open") is None
    # Every jump link lands on a section of the page.
    hrefs = pg.locator("nav.jumps a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    for href in [h for h in hrefs if h.startswith("#")]:
        assert pg.locator(href).count() == 1, href
    pdf = pg.pdf(format="A4")
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    assert 0 < pages <= 10, f"the printed upgrade page is {pages} pages"
    context.close()


def test_grid_is_one_tab_stop_with_arrow_keys(page) -> None:
    cells = page.locator("table.matrix a.cell")
    assert cells.count() > 20
    # Of every link in the grid (cells, probe names, release headers), one is a tab stop.
    assert page.locator('table.matrix a:not([tabindex="-1"])').count() == 1
    assert page.locator('table.matrix a.cell[tabindex="0"]').count() == 1
    assert page.locator(".tablewrap[tabindex]").count() == 0
    # Tab from the permalink (the last control before the grid) lands on the grid's one stop.
    page.locator("#permalink").focus()
    page.keyboard.press("Tab")
    first = page.evaluate("document.activeElement.getAttribute('href').split('#')[1]")
    assert first == cells.first.get_attribute("href").split("#")[1]

    def active() -> dict:
        return page.evaluate(
            """() => { const a = document.activeElement, tr = a.closest('tr');
                       return {ev: a.getAttribute('href').split('#')[1],
                               release: a.dataset.release,
                               row: Array.from(tr.parentNode.children).indexOf(tr),
                               x: a.closest('td').getBoundingClientRect().left}; }"""
        )

    start = active()
    page.keyboard.press("ArrowRight")
    right = active()
    assert right["row"] == start["row"] and right["x"] > start["x"]
    page.keyboard.press("ArrowDown")
    down = active()
    assert down["row"] == right["row"] + 1 and down["release"] == right["release"]
    page.keyboard.press("ArrowUp")
    assert active()["ev"] == right["ev"]
    page.keyboard.press("ArrowLeft")
    assert active()["ev"] == start["ev"]
    page.keyboard.press("End")
    end = active()
    assert end["row"] == start["row"] and end["x"] > right["x"]
    # The stop moved with the focus: Tab away and back returns to the last cell focused.
    assert page.locator('table.matrix a:not([tabindex="-1"])').count() == 1
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert active()["ev"] == end["ev"]


def _all_pages(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))


# Every page of the fixture build in tests; of the four-release build (over a hundred pages) in
# tests_slow.
@pytest.mark.parametrize("which", ["fixture", pytest.param("committed", marks=pytest.mark.slow)])
def test_no_page_scrolls_sideways_at_phone_width(browser, which, site, request) -> None:
    root = site if which == "fixture" else request.getfixturevalue("committed_site")
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    pg = context.new_page()
    wide = {}
    names = _all_pages(root)
    assert len(names) > 30
    for name in names:
        pg.goto((root / name).as_uri())
        w = pg.evaluate("document.documentElement.scrollWidth")
        if w > 390:
            wide[name] = w
    context.close()
    assert wide == {}, f"pages wider than 390 px: {wide}"


def _rgb(text: str) -> tuple[float, float, float]:
    import re

    r, g, b = (int(x) for x in re.findall(r"\d+", text)[:3])
    return r, g, b


def _lum(rgb: tuple[float, float, float]) -> float:
    def lin(c: float) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = rgb
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def _ratio(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    la, lb = sorted((_lum(a), _lum(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


# On the four-release build (committed_site: a full report build of four releases): tests_slow,
# which CI runs after tests.
@pytest.mark.slow
def test_every_tone_and_banner_link_has_readable_contrast(browser, committed_site: Path) -> None:
    """As rendered: a chip of every tone, and a verdict banner of every tone with a link and
    code in it (the banner's links were 1.22:1 on red)."""
    from matrix.report.render import TONES_BY_NAME

    context = browser.new_context()
    pg = context.new_page()
    pg.goto((committed_site / "upgrades" / "index.html").as_uri())
    measured = pg.evaluate(
        """(tones) => tones.map(t => {
            const chip = document.createElement('span'); chip.className = 'chip tone-' + t;
            chip.textContent = t;
            const banner = document.createElement('div'); banner.className = 'verdict tone-' + t;
            banner.innerHTML = '<p>verdict <a href="#">a link</a> <code>code</code></p>';
            document.body.append(chip, banner);
            const cs = e => getComputedStyle(e);
            return {tone: t, chip: [cs(chip).color, cs(chip).backgroundColor],
                    link: [cs(banner.querySelector('a')).color, cs(banner).backgroundColor],
                    code: [cs(banner.querySelector('code')).color, cs(banner).backgroundColor],
                    text: [cs(banner).color, cs(banner).backgroundColor]};
        })""",
        sorted(TONES_BY_NAME),
    )
    assert len(measured) == len(TONES_BY_NAME) >= 7
    for m in measured:
        for part in ("chip", "link", "code", "text"):
            fg, bg = m[part]
            ratio = _ratio(_rgb(fg), _rgb(bg))
            assert ratio >= 4.5, f"{m['tone']} {part}: {fg} on {bg} is {ratio:.2f}:1"
    # The committed pages' real banners, links included.
    for name in ("index.html", "upgrades/3.8.0-to-3.9.0.html", "upgrades/3.6.0-to-3.7.1.html"):
        pg.goto((committed_site / name).as_uri())
        for pair in pg.locator(".verdict a, .verdict").evaluate_all(
            """els => els.map(e => [getComputedStyle(e).color,
                                   getComputedStyle(e.closest('.verdict')).backgroundColor])"""
        ):
            assert _ratio(_rgb(pair[0]), _rgb(pair[1])) >= 4.5, (name, pair)
    context.close()


# On the four-release build (committed_site: a full report build of four releases): tests_slow,
# which CI runs after tests.
@pytest.mark.slow
def test_regression_has_its_own_tone_on_the_upgrade_page(browser, committed_site: Path) -> None:
    context = browser.new_context()
    pg = context.new_page()
    # Whichever committed upgrade page (reports/upgrades, all releases) has a regression: the
    # data decides which pair; the four-release site may have none.
    pages = sorted((REPORTS / "upgrades").glob("*-to-*.html"))
    page = next(
        p
        for p in pages
        if re.search(
            r'<details class="item"[^>]*data-kind="regression"', p.read_text(encoding="utf-8")
        )
    )
    pg.goto(page.as_uri())
    slow = pg.locator('details.item[data-kind="regression"]')
    assert slow.count() >= 1
    assert slow.first.locator(".chip.tone-regression").count() >= 1
    assert slow.first.locator(".chip.tone-changed").count() == 0
    context.close()


# ------------------------------------------------------------------------ axe-core, questions


def _axe_script() -> Path:
    """axe-core's axe.min.js: ``AXE_CORE_JS``, else the npm package in the checkout's
    .cache/axe (.ci/install-browser.sh) or node_modules, or installed globally (``npm install -g
    axe-core``); unavailable otherwise (skip, or fail in CI)."""
    import subprocess

    given = os.environ.get("AXE_CORE_JS")
    candidates = [Path(given)] if given else []
    # .ci/install-browser.sh installs it in .cache/axe (project-local, git-ignored)
    candidates.append(
        REPORTS.parent / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
    )
    candidates.append(REPORTS.parent / "node_modules" / "axe-core" / "axe.min.js")
    npm = shutil.which("npm")
    if npm:
        done = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, check=False)
        candidates.append(Path(done.stdout.strip()) / "axe-core" / "axe.min.js")
    for path in candidates:
        if path.is_file():
            return path
    _unavailable("no axe-core (npm install -g axe-core, or AXE_CORE_JS=path/to/axe.min.js)")
    raise AssertionError("unreachable")


# One page of each template; the committed site (four releases) has them all. The slow test
# below crawls every page of the full report.
AXE_PAGES = [
    "index.html", "upgrades/index.html", "upgrades/3.8.0-to-3.9.0.html",
    "upgrades/3.9.0-to-3.6.0.html", "changes.html", "api/index.html", "known-issues.html",
    "performance.html", "fingerprint.html", "fingerprint/binary_fn.maximum.html", "claims.html",
    "releases/3.9.0.html", "probes/splitk.html", "team/index.html", "team/tests.html",
]  # fmt: skip
AXE_RUN = """async () => { const r = await axe.run(document, {resultTypes: ['violations']});
    return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => ({id: v.id, impact: v.impact, n: v.nodes.length,
                    first: v.nodes[0].target.join(' ')})); }"""


def _axe_serious(pg, page: Path) -> list[dict]:
    """axe-core's serious and critical violations on one rendered page."""
    pg.goto(page.as_uri())
    pg.add_script_tag(path=str(_axe_script()))
    return pg.evaluate(AXE_RUN)


# Fifteen pages of a four-release build through axe-core: tests_slow (CI runs it after tests).
@pytest.mark.slow
@pytest.mark.parametrize("name", AXE_PAGES)
def test_axe_finds_no_serious_violation(browser, committed_site: Path, name: str) -> None:
    """axe-core on the rendered page: no serious or critical violation (a link inside a
    <summary>, a scroll box no keyboard can reach, ...)."""
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    serious = _axe_serious(context.new_page(), committed_site / name)
    context.close()
    assert not serious, f"{name}: {serious}"


@pytest.mark.slow
@pytest.mark.crawl
def test_axe_on_every_page_of_the_report(browser) -> None:
    """Every page of the full report (``REPORT_SITE``, else the committed reports/), not one of
    each kind: axe-core finds no serious or critical violation. Some 230 pages: 31 min on a
    loaded 2-core machine, so ``nox -s pages_crawl`` runs it (not CI's ``tests_slow``); the
    per-template test above runs in ``nox -s tests_slow``."""
    site = _report_site()
    names = _all_pages(site)
    assert len(names) > 200, f"{site}: {len(names)} pages, expected the full report"
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = context.new_page()
    found = {name: v for name in names if (v := _axe_serious(pg, site / name))}
    context.close()
    assert not found, "serious axe violations:\n" + "\n".join(
        f"{name}: {v}" for name, v in found.items()
    )


# Screenshots of the five questions: written to the temp folder, never into the checkout
# (``REPORT_SCREENS`` names another folder, e.g. to keep them beside a build).
QUESTION_SHOTS = Path(
    os.environ.get(
        "REPORT_SCREENS", Path(os.environ.get("TMPDIR", "/tmp")) / "triton-compat-questions"
    )
)


def _report_site() -> Path:
    """The committed report (``REPORT_SITE`` to check another build of all releases)."""
    site = Path(os.environ.get("REPORT_SITE", REPORTS))
    assert (site / "feed" / "index.json").is_file(), (
        f"{site}: no feed/index.json: rebuild the pages (python -m matrix.report)"
    )
    return site


@pytest.fixture(scope="module")
def committed_runs():
    """The committed runs and the gate's inputs on them, read once for both widths below."""
    from matrix.report import upgrade
    from matrix.results import read_folder

    runs, _ = read_folder(REPORTS / "raw")
    return runs, upgrade.gate_inputs(str(REPORTS / "raw"), runs=runs)


# The full committed report walked at two widths, its answers checked against the gate:
# tests_slow (CI runs it after tests).
@pytest.mark.slow
@pytest.mark.parametrize("width,height", [(1366, 768), (390, 844)])
def test_five_questions_within_three_clicks(
    browser, committed_runs, width: int, height: int
) -> None:
    """Each question a team asks is answered at most 3 clicks from index.html, within the
    first 2 screens of the page it lands on, and the answer is the gate's (the verdicts the
    committed-verdict test checks against a fresh gate decision; here against the gate too)."""
    import json

    from matrix.analyze.census import censuses_from_runs
    from matrix.report import api_pages, upgrade

    site = _report_site()
    QUESTION_SHOTS.mkdir(parents=True, exist_ok=True)
    runs, g = committed_runs
    feed = json.loads((site / "feed" / "index.json").read_text(encoding="utf-8"))
    assert len(feed["pairs"]) == 90  # every ordered pair of ten releases
    context = browser.new_context(viewport={"width": width, "height": height},
                                  is_mobile=width < 600)  # fmt: skip
    pg = context.new_page()

    def start() -> None:
        pg.goto((site / "index.html").as_uri())

    def within_two_screens(locator) -> None:
        assert locator.first.is_visible(), f"{locator}: not shown"
        locator.first.scroll_into_view_if_needed()
        top = pg.evaluate("e => e.getBoundingClientRect().top + window.scrollY",
                          locator.first.element_handle())  # fmt: skip
        assert top < 2 * height, f"{locator}: {top:.0f} px down, past 2 screens of {height}"

    def shot(name: str) -> None:
        pg.screenshot(path=str(QUESTION_SHOTS / f"{name}-{width}.png"))

    # 1. Can we move from 3.2.0 to 3.9.0, and what blocks? (2 clicks; UNSAFE for kernels/: its
    # loader moves to descriptors at 3.3.1, so the page names what blocks)
    start()
    pg.locator("header nav a", has_text="Can we upgrade?").click()
    pg.locator('#pair-grid td[data-baseline="3.2.0"][data-candidate="3.9.0"] a').click()
    gate = upgrade.decide_pair(runs, "3.2.0", "3.9.0", g)
    assert gate.verdict == "UNSAFE"
    assert pg.locator("#verdict").get_attribute("data-verdict") == gate.verdict
    first_group = upgrade.items_of(gate, g.fixes)[0].probe
    within_two_screens(pg.locator("#top-reasons li"))
    assert first_group in pg.locator("#top-reasons li").first.inner_text()
    pg.evaluate("window.scrollTo(0, 0)")
    shot("q1-3.2.0-to-3.9.0")
    # ... and from 3.6.0 to 3.9.0 nothing blocks: the verdict is the answer, first on the page
    start()
    pg.locator("header nav a", has_text="Can we upgrade?").click()
    pg.locator('#pair-grid td[data-baseline="3.6.0"][data-candidate="3.9.0"] a').click()
    gate = upgrade.decide_pair(runs, "3.6.0", "3.9.0", g)
    assert pg.locator("#verdict").get_attribute("data-verdict") == gate.verdict == "SAFE"
    within_two_screens(pg.locator("#verdict"))
    assert pg.locator("#top-reasons li").count() == 0
    shot("q1-3.6.0-to-3.9.0")

    # 2. What broke between 3.8.0 and 3.9.0 for code using block pointers? (2 clicks)
    start()
    pg.locator("header nav a", has_text="Can we upgrade?").click()
    pg.locator('#pair-grid td[data-baseline="3.8.0"][data-candidate="3.9.0"] a').click()
    removal = pg.locator('details.item[id^="t-"][data-kind="breaking-api"][data-name="block_ptr"]')
    within_two_screens(removal)
    changes = upgrade.triton_changes(runs, "3.8.0", "3.9.0", g)
    (f,) = {(f.baseline, f.candidate) for f in changes.comparison.findings
            if f.probe == "block_ptr" and f.kind == "breaking-api"}  # fmt: skip
    assert f"{f[0]} → {f[1]}" in removal.locator("summary").inner_text()
    shot("q2-3.8.0-to-3.9.0-block-pointers")

    # 3. When did make_tensor_descriptor appear, and is it stable since? (1 click, a search)
    start()
    pg.locator("header nav a", has_text="API").click()
    pg.wait_for_load_state("load")  # the search's script comes after the 1,200-row table
    pg.fill("#api-q", "make_tensor_descriptor")
    row = pg.locator('#api-table tr[data-name="triton.language.make_tensor_descriptor"]')
    within_two_screens(row)
    censuses = censuses_from_runs([r for r in runs if r.env.get("gpu") is None])
    names = api_pages.build_names(censuses, [], api_pages.probe_statuses(runs))
    name = next(n for n in names if n.name == "triton.language.make_tensor_descriptor")
    text = row.inner_text()
    assert name.added_in and f"added in {name.added_in}" in text
    assert ("none" in text) == (not name.changes) and (name.stops_working is None) == ("—" in text)
    shot("q3-make-tensor-descriptor")

    # 4. Which releases compute bf16 tl.maximum wrong under the interpreter? (2 clicks)
    start()
    pg.locator("header nav a", has_text="Fingerprint").click()
    pg.locator('a[href$="values.maximum.html"]').first.click()
    table = pg.locator("#wrong-table")
    within_two_screens(table)
    # The answer is the analysis's: the releases with a wrong bfloat16 case in an interpreter
    # column, and those whose runs stored nothing, exactly as the table shows them.
    from matrix.report import fp_pages

    groups = {gr.name: gr for gr in fp_pages.build_groups(runs) or ()}
    wrong = groups["values.maximum"].wrong
    expected = {v for v, per in wrong.items() for where, c in per.items()
                if where.startswith("interpret") and c and "bfloat16" in c}  # fmt: skip
    assert len(expected) >= 3, expected
    shown = set()
    heads = table.locator("thead th").evaluate_all("els => els.map(e => e.textContent)")[1:]
    for v in wrong:
        row = table.locator(f'tr[data-release="{v}"]')
        cells = row.locator("td").evaluate_all("els => els.map(e => e.textContent)")
        pairs = zip(heads, cells, strict=True)
        if any(h.startswith("interpret") and "bfloat16" in c for h, c in pairs):
            shown.add(v)
    assert shown == expected, (shown, expected)
    shot("q4-bf16-maximum")

    # 5. Is split-K slower on 3.9.0 than on 3.6.0 on the GPU? (2 clicks: the pair's page
    # names the gate's GPU timing findings among Triton's changes; the performance page has
    # the times.)
    start()
    pg.locator("header nav a", has_text="Performance").click()
    within_two_screens(pg.locator('#perf-table th[data-release="3.9.0"]'))
    within_two_screens(pg.locator('#perf-table th[data-release="3.6.0"]'))
    shot("q5-performance")
    start()
    pg.locator("header nav a", has_text="Can we upgrade?").click()
    pg.locator('#pair-grid td[data-baseline="3.6.0"][data-candidate="3.9.0"] a').click()
    from matrix.gate.timing import SLOWDOWN_PREFIX

    timed = upgrade.triton_changes(runs, "3.6.0", "3.9.0", g).comparison
    slower = [f for f in timed.findings if f.probe.startswith(SLOWDOWN_PREFIX)]
    line = pg.locator("#gpu-timings")
    within_two_screens(line)
    assert f"{len(slower)} slower" in line.inner_text()
    assert any(c.startswith("GPU timings") for c in timed.compared)
    shot("q5-3.6.0-to-3.9.0-gpu-timings")
    context.close()


def test_every_release_in_the_first_viewport_at_1366(browser) -> None:
    """The committed matrix at a glance: every release's column header inside the first
    1366 x 768 screen of index.html, and the legend above it."""
    site = _report_site()
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = context.new_page()
    pg.goto((site / "index.html").as_uri())
    heads = pg.locator("table.matrix th.rel")
    assert heads.count() == 10
    for i in range(heads.count()):
        box = heads.nth(i).bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1366 and box["y"] < 768, (
            f"release {heads.nth(i).inner_text()} is outside the first screen: {box}"
        )
    legend = pg.locator("ul.legend").first.bounding_box()
    assert legend is not None and legend["y"] < heads.first.bounding_box()["y"]
    # No colour contradicts its word: a "silently wrong" (purple) cell's word says wrong (a
    # misaligned descriptor "accepted" read as fine), and a good (green) cell's never names a
    # failure.
    words = pg.locator("table.matrix a.cell").evaluate_all(
        "els => els.map(e => [e.dataset.meaning, e.querySelector('.word').textContent.trim()])"
    )
    assert len(words) > 500
    contradicting = sorted(
        {(tone, word) for tone, word in words if (tone == "wrong") != ("wrong" in word)}
        | {(t, w) for t, w in words if t == "good" and w in ("fail", "removed", "broken")}
    )
    assert not contradicting, f"cells whose colour contradicts their word: {contradicting}"
    QUESTION_SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(QUESTION_SHOTS / "matrix-first-screen-1366.png"))
    context.close()
