"""The matrix page in a real browser: Debian's chromium driven by Playwright, from file://.

Needs ``chromium`` on PATH and the ``playwright`` Python package (``.ci/install-browser.sh``);
Playwright's own browser download is never used. Without them the test skips, unless
``REQUIRE_BROWSER=1`` (CI) makes it fail: a browser test that silently never runs proves nothing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from matrix.measure.results import read_runs
from matrix.report import build

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


def test_matrix_page_in_chromium(page) -> None:
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

    # Click a cell: its evidence (detail and data fields) shows in the panel.
    panel = page.locator("#evidence-panel")
    assert not panel.is_visible()
    cell = page.locator(
        'tr[data-probe="block_ptr"][data-backend="interpret"] button.cell[data-release="3.7.1"]'
    ).first
    assert cell.inner_text().strip() == "deprecated"
    cell.click()
    assert panel.is_visible()
    evidence = panel.locator(f"#{cell.get_attribute('data-ev')}")
    assert evidence.is_visible()
    shown = evidence.inner_text()
    assert "UserWarning" in shown and "warning_category" in shown and "0.70 s" in shown
    assert panel.locator("section.evidence:visible").count() == 1
    page.screenshot(path=str(_shot("report-index-evidence.png")))

    # A cell with no observation explains itself.
    page.locator(
        'tr[data-probe="splitk"][data-backend="interpret"] button.cell[data-release="3.3.1"]'
    ).nth(1).click()
    assert "install failed" in panel.locator("section.evidence:visible").inner_text()
    page.keyboard.press("Escape")
    assert not panel.is_visible()

    # Filter by backend, then by probe.
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


def _shot(name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS / name
