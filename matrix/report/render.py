"""Write the report pages from the page model with Jinja2 templates (``matrix/report/templates/``).

Pages are static and self-contained (inline CSS, JS and SVG; no network), so they open from
``file://`` and from a CI artifact. Nothing here reads the clock: the same inputs give the same
bytes, which keeps ``reports/`` diffs down to what the matrix actually saw.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from matrix.analyze.census import censuses_from_runs
from matrix.analyze.census_diff import changes_by_pair
from matrix.catalog import MEANINGS, MEANINGS_BY_NAME, PROBES, PROBES_BY_NAME, Meaning
from matrix.core import release_key
from matrix.report import (
    all_pairs,
    api_pages,
    charts,
    fp_pages,
    perf,
    resource_rows,
    team,
    team_verdict,
    upgrade,
)
from matrix.report.freshness import Freshness
from matrix.report.known import CASES_SHOWN as KNOWN_CASES_SHOWN
from matrix.report.known import KnownIssue
from matrix.report.model import (
    MISSING,
    NOT_INSTALLED,
    Box,
    Matrix,
    Row,
    fmt_seconds,
    probe_seconds,
    run_seconds,
    slug,
    sorted_results,
    tone,
)
from matrix.report.sources import PROBES_DIR, read_probe_source
from matrix.report.verdicts import VERDICT_TONES, ClaimsOutcome
from matrix.results import PAGE_TEXT_CAP, atomic_write_text, cap_text
from matrix.scan import load_rules

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

# Colours of each meaning (matrix.catalog.MEANINGS): background, text, border. Backgrounds
# differ in relative luminance by a contrast ratio of at least 1.3 from each other, and text has
# at least 4.5 against its background (tests/test_report_render.py computes both), so that the
# meanings stay apart in greyscale and for colour-blind readers; icon and label say it anyway.
MEANING_COLOURS = {
    "breaking": ("#c62828", "#ffffff", "#7f1010"),
    "wrong": ("#4a148c", "#ffffff", "#22063f"),
    "changed": ("#d98200", "#1a1000", "#8a5200"),
    "good": ("#66c27a", "#0b2e13", "#2e7d32"),
    "neutral": ("#d5dbe3", "#1d232b", "#8b96a3"),
    "unmeasured": ("#ffffff", "#4a5058", "#9aa0a6"),
    "regression": ("#8e2400", "#ffffff", "#4a1200"),
}

# The report's one tone beyond the catalog's meanings: a *transition*, never a status. Something
# that worked on the baseline and does not on the candidate (a slowdown beyond noise, right ->
# wrong, a check that now fails) is a regression, apart from "changed" (needs a look).
REGRESSION = Meaning(
    "regression",
    "regression",
    "▼",
    "worked on the older release and not on the newer one: it now fails, is wrong, or is "
    "slower beyond the measured noise",
    problem=True,
)
TONES_BY_NAME = {**MEANINGS_BY_NAME, REGRESSION.name: REGRESSION}

# Meaning of a fingerprint cell change's kind (matrix.analyze.fingerprint.classify).
FP_KIND_MEANINGS = {
    "regression": "regression",
    "fixed": "good",
    "behaviour": "changed",
    "unobserved": "unmeasured",
    **fp_pages.SHOWN_KIND_MEANINGS,
}

# Markdown marks per meaning, next to the status text (never the mark alone).
MD_MARKS = {m.name: m.icon for m in MEANINGS}

# Meaning of a release's kernel verdict (model.kernel_verdicts).
KERNEL_TONES = {"pass": "good", "fail": "breaking", "untested": "unmeasured"}

# How many what-changed lines the summary shows before pointing to the full page.
HIGHLIGHTS_SHOWN = 8


@dataclass(frozen=True)
class ProbePage:
    name: str
    slug: str
    known: bool
    measured: bool


# Any one plain text on a page, whatever it is (a source file too): a backstop, so that no
# single text makes a page megabytes long; details get the tighter ``excerpt``.
ANY_TEXT_CAP = 256 * 1024
RAW_FILE = "the cell's raw file (reports/raw)"


def excerpt(text: Any) -> str:
    """A detail as a page shows it: at most ``PAGE_TEXT_CAP`` characters (head, tail and the
    full size); the whole text stays in the raw file."""
    return cap_text("" if text is None else str(text), PAGE_TEXT_CAP, RAW_FILE)


def _bounded(value: Any) -> Any:
    """Jinja's ``finalize``: every plain text printed, at most ``ANY_TEXT_CAP`` characters.
    Markup (a chart, JSON for a script) is the page's own and passes whole."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return cap_text(value, ANY_TEXT_CAP, RAW_FILE)
    return value


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_bounded,
    )
    env.filters["excerpt"] = excerpt
    env.filters["seconds"] = fmt_seconds
    env.filters["md"] = _md
    env.filters["svg"] = Markup  # charts.py escapes every text it puts in an SVG
    env.filters["wbr"] = _wbr
    env.filters["rst"] = rst
    # What the templates may name, by kind: the catalog's and the page model's words; the
    # colour, mark or tone of each meaning for each kind of thing shown; helpers they call.
    env.globals.update(
        MEANINGS=MEANINGS, MEANINGS_BY_NAME=TONES_BY_NAME, PROBES_BY_NAME=PROBES_BY_NAME,
        REGRESSION=REGRESSION, SCOPE=upgrade.SCOPE, KIND_TONES=upgrade.KIND_TONES,
        shown_kind=fp_pages.shown_kind,
        MISSING=MISSING, NOT_INSTALLED=NOT_INSTALLED, UPGRADE_SECTIONS=upgrade.SECTIONS,
        LIST_SHOWN=upgrade.LIST_SHOWN,
        CHANGE_SECTIONS=upgrade.CHANGE_SECTIONS,
        SUITE_KEYS=team.SUITE_KEYS,
        MEANING_COLOURS=MEANING_COLOURS, FP_KIND_MEANINGS=FP_KIND_MEANINGS, MD_MARKS=MD_MARKS,
        KERNEL_TONES=KERNEL_TONES, VERDICT_TONES=VERDICT_TONES, DECISION_TONES=team.DECISION_TONES,
        run_seconds=run_seconds, probe_seconds=probe_seconds, sorted_results=sorted_results,
        run_label=charts.run_label, tone=tone, md_cell=_md_cell,
    )  # fmt: skip
    return env


def _wbr(name: str) -> Markup:
    """A long identifier that may break after its underscores (narrower matrix rows)."""
    return Markup("_<wbr>").join(str(name).split("_"))


_RST_CODE = re.compile(r"``(.+?)``")
_RST_EMPH = re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])")


def rst(text: str) -> Markup:
    """A docstring's reStructuredText as simple HTML: paragraphs, ``- `` lists, ````code````,
    ``*emphasis*`` and ``::`` literal blocks; everything else shown as written (escaped)."""
    out = []
    blocks = re.split(r"\n\s*\n", text.strip())
    literal = False
    for block in blocks:
        if literal:
            out.append(f"<pre>{escape(block)}</pre>")
            literal = False
            continue
        if block.rstrip().endswith("::"):
            literal = True
            block = block.rstrip()[:-1]
        lines = block.splitlines()

        def inline(t: str) -> str:
            t = str(escape(t))
            t = _RST_CODE.sub(r"<code>\1</code>", t)
            return _RST_EMPH.sub(r"<em>\1</em>", t)

        if all(line.lstrip().startswith(("- ", "* ")) or line.startswith("  ") for line in lines):
            items: list[str] = []
            for line in lines:
                if line.lstrip().startswith(("- ", "* ")):
                    items.append(line.lstrip()[2:])
                elif items:
                    items[-1] += " " + line.strip()
            out.append("<ul>" + "".join(f"<li>{inline(i)}</li>" for i in items) + "</ul>")
        else:
            out.append(f"<p>{inline(' '.join(line.strip() for line in lines))}</p>")
    return Markup("\n".join(out))


def _md(text: Any) -> str:
    """Text safe inside a Markdown table cell: no pipes or newlines breaking the row."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _md_cell(row: Row, release: str) -> str:
    """A Markdown cell: the status, or per-numpy statuses where the interpreter cells differ."""
    cells = [c for c in row.cells if c.release == release]

    def one(c: Box) -> str:
        return f"{MD_MARKS[c.tone]} {_md(c.status)}"

    if len({c.status for c in cells}) <= 1:
        return one(cells[0]) if cells else ""
    return "<br>".join(f"np {c.numpy}: {one(c)}" for c in cells)


def probe_pages(matrix: Matrix) -> list[ProbePage]:
    """Every catalog probe (measured or not), then probes only the data knows, by name."""
    measured = {row.key.probe for row in matrix.rows}
    unknown = sorted(measured - set(PROBES_BY_NAME))
    pages, used = [], set()
    for name in [p.name for p in PROBES] + unknown:
        s = slug(name)
        while s in used:
            s += "_"
        used.add(s)
        pages.append(ProbePage(name, s, name in PROBES_BY_NAME, name in measured))
    return pages


# Pages a build writes by the folder: one a build no longer writes is removed (upgrades/pairs.json
# was the any-pair panel's data before the feed).
STALE_GLOBS = (
    *((sub, "*.html") for sub in ("releases", "probes", "upgrades", "fingerprint", "team", "api")),
    ("upgrades", "*.json"),
    ("feed", "*.json"),
)


def pair_grid(upgrades: Sequence[upgrade.UpgradePage]) -> dict[str, Any]:
    """Every ordered pair's page by (baseline, candidate), and the releases in order: the
    any-pair panel's from x to table."""
    by_pair = {(u.baseline, u.candidate): u for u in upgrades}
    versions = sorted({v for pair in by_pair for v in pair}, key=release_key)
    return {"releases": versions, "pages": by_pair}


def _common_context(
    matrix: Matrix,
    claims: ClaimsOutcome,
    probes: Sequence[ProbePage],
    upgrades: Sequence[upgrade.UpgradePage],
    performance: perf.PerfView | None,
    team_view: team.TeamView,
    every_pair: all_pairs.AllPairs | None,
    fresh: Freshness | None,
    fp_groups: Sequence[fp_pages.Group] | None,
) -> dict[str, Any]:
    """What every page's template may read, whichever page it is."""
    return {
        "m": matrix,
        "claims": claims,
        "probe_pages": probes,
        "probe_slugs": {p.name: p.slug for p in probes},
        "release_slugs": {r.version: r.slug for r in matrix.releases},
        "highlights_shown": HIGHLIGHTS_SHOWN,
        "upgrades": list(upgrades),
        "performance": performance,
        "team": team_view,
        "fresh": fresh or Freshness(),
        "readiness": all_pairs.readiness(every_pair, upgrades) if every_pair else [],
        "every_pair": every_pair,
        "fp_slugs": {g.name: g.slug for g in fp_groups or ()},
    }


def render_site(
    matrix: Matrix,
    out_dir: Path,
    *,
    claims: ClaimsOutcome,
    bench: Sequence[charts.BenchSet] = (),
    probes_dir: Path = PROBES_DIR,
    upgrades: Sequence[upgrade.UpgradePage] = (),
    performance: perf.PerfView | None = None,
    resources: resource_rows.ResourceView | None = None,
    fp_groups: Sequence[fp_pages.Group] | None = None,
    team_view: team.TeamView | None = None,
    every_pair: all_pairs.AllPairs | None = None,
    fresh: Freshness | None = None,
    known: Sequence[KnownIssue] = (),
) -> list[Path]:
    """Write every page under ``out_dir``; return their paths (sorted). Stale pages are removed."""
    env = environment()
    probes = probe_pages(matrix)
    team_view = team_view if team_view is not None else team.build_view(matrix.runs)
    common = _common_context(
        matrix, claims, probes, upgrades, performance, team_view, every_pair, fresh, fp_groups
    )
    pages: dict[Path, str] = {}

    def page(rel: str, template: str, **ctx: Any) -> None:
        root = "../" * rel.count("/")
        pages[out_dir / rel] = env.get_template(template).render(
            **common, root=root, page_path=rel, **ctx
        )

    page(
        "index.html",
        "index.html",
        time_chart=charts.time_chart(matrix.runs),
        bench=list(bench),
    )
    censuses = censuses_from_runs(matrix.runs)
    page("changes.html", "changes.html", api_pairs=changes_by_pair(censuses))
    statuses = api_pages.probe_statuses(matrix.runs)
    names = api_pages.build_names(censuses, load_rules(), statuses) if censuses else []
    page(
        "api/index.html",
        "api.html",
        api_names=names,
        api_releases=sorted(censuses, key=release_key),
        ranges=api_pages.ranges,
    )
    page("claims.html", "claims.html")
    for release in matrix.releases:
        page(
            f"releases/{release.slug}.html",
            "release.html",
            release=release,
            time_chart=charts.time_chart(release.runs),
        )
    for p in probes:
        page(
            f"probes/{p.slug}.html",
            "probe.html",
            probe=p,
            spec=PROBES_BY_NAME.get(p.name),
            source=read_probe_source(p.name, probes_dir),
            rows=matrix.rows_for(p.name),
        )
    page(
        "performance.html",
        "performance.html",
        min_change=perf.MIN_CHANGE,
        band_cap=perf.BAND_CAP,
        resources=resources,
        resource_blocks=resource_rows.rc.BLOCKS[resource_rows.rc.PROJECT],
    )
    page(
        "known-issues.html",
        "known_issues.html",
        known=list(known),
        cases_shown=KNOWN_CASES_SHOWN,
    )
    page("fingerprint.html", "fingerprint.html", fp_groups=fp_groups)
    for g in fp_groups or ():
        page(
            f"fingerprint/{g.slug}.html", "fp_group.html", group=g, cells_shown=fp_pages.CELLS_SHOWN
        )
    featured = [u for u in upgrades if u.featured] or list(upgrades)
    page("upgrades/index.html", "upgrades.html", featured=featured, grid=pair_grid(upgrades))
    for u in upgrades:
        page(f"upgrades/{u.slug}.html", "upgrade.html", u=u)
    if every_pair is not None:
        pages.update(feed_pages(every_pair, out_dir / "feed"))
    page("team/index.html", "team.html")
    page("team/tests.html", "team_tests.html")
    for k in team_view.kernels:
        findings = team_verdict.kernel_findings(k, upgrades)
        page(f"team/{k.slug}.html", "team_kernel.html", k=k, findings=findings)
    page("README.md", "README.md.j2")

    return write_pages(out_dir, pages)


def feed_pages(every_pair: all_pairs.AllPairs, folder: Path) -> dict[Path, str]:
    """The feed: one document per ordered pair and an index (matrix/data/pair_feed.schema.json)."""
    pages = {}
    for r in every_pair.records:
        text = json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
        pages[folder / all_pairs.feed_file(r["baseline"], r["candidate"])] = text
    index = all_pairs.feed_index(every_pair.records)
    pages[folder / "index.json"] = json.dumps(index, indent=1) + "\n"
    return pages


def write_pages(out_dir: Path, pages: dict[Path, str]) -> list[Path]:
    """Write ``pages`` (path -> text) and remove the pages of ``STALE_GLOBS`` under ``out_dir``
    that this build no longer makes; return the paths written (sorted)."""
    for sub, pattern in STALE_GLOBS:
        folder = out_dir / sub
        if folder.is_dir():
            for stale in sorted(folder.glob(pattern)):
                if stale not in pages:
                    stale.unlink()
    for path, text in sorted(pages.items()):
        atomic_write_text(path, text)
    return sorted(pages)
