"""The matrix's rows and cells: runs grouped by release (and numpy), one row per (probe, backend,
target), one cell per column, each with its status, tone and evidence.

The layout is in ``matrix.report.model``'s docstring; the model adds what changed between
releases on top of these rows. Nothing here imports Triton, torch or numpy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.catalog import AOT_TARGETS, MEANINGS_BY_NAME, PROBES, PROBES_BY_NAME, ProbeSpec
from matrix.catalog import meaning_of as catalog_meaning
from matrix.core import BACKENDS, Column, install_ok, release_key
from matrix.results import Result, Run, known_seconds

# Statuses for cells with no observation at all (no Result), as opposed to probe statuses.
MISSING = "missing"


NOT_INSTALLED = "not installed"


# Long strings are cut in the evidence; the full text stays in matrix.json.
EVIDENCE_TEXT_LIMIT = 4000


# The API census (hundreds of kB a release) is read by the what-changed page, not shown raw.
CENSUS_NOTE = "the API census: its changes are on the what-changed page; the whole in matrix.json"


def tone(spec: ProbeSpec | str | None, status: str, data: dict[str, Any] | None = None) -> str:
    """What ``status`` means for a team (a ``matrix.catalog.MEANINGS`` name), which decides its
    icon, label and colour. ``spec`` is the probe (its spec or its name); ``data`` the result's
    evidence, which can overrule the status (``correct: false`` is silently wrong)."""
    if status in (MISSING, NOT_INSTALLED):
        return "unmeasured"
    probe = spec if isinstance(spec, str) else (spec.name if spec is not None else "")
    return catalog_meaning(probe, status, data)


def icon(meaning: str) -> str:
    return MEANINGS_BY_NAME[meaning].icon


def is_problem(meaning: str) -> bool:
    return MEANINGS_BY_NAME[meaning].problem


def clip(text: str, limit: int = EVIDENCE_TEXT_LIMIT) -> str:
    """``text`` cut at ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (cut: {len(text)} characters in all; full text in matrix.json)"


def fmt_seconds(seconds: Any) -> str:
    """A duration for a page; one that is not known (``"nan"``, ``"inf"``) says so."""
    known = known_seconds(seconds)
    return "unknown" if known is None else f"{known:.2f} s"


@dataclass(frozen=True, order=True)
class RowKey:
    """One row of the matrix: what probe, on which backend, for which target."""

    probe: str
    backend: str
    target: str | None

    @property
    def label(self) -> str:
        return str(Column(self.backend, self.target))

    def __str__(self) -> str:
        return f"{self.probe} [{self.label}]"


@dataclass
class ReleaseGroup:
    """One Triton release: its runs and the numpy sub-axis its interpreter rows use.

    ``numpys`` is the matrix-wide axis; ``run_numpys`` the ones this release was run with.
    """

    version: str
    runs: list[Run]
    numpys: list[str | None]
    slug: str

    @property
    def run_numpys(self) -> list[str | None]:
        return sorted({r.env.get("numpy") for r in self.runs if not is_gpu_run(r)}, key=release_key)

    @property
    def installed_runs(self) -> list[Run]:
        return [r for r in self.runs if install_ok(r.install)]

    @property
    def install_status(self) -> str:
        """ "ok" when every run installed, else a summary like ``failed (1 of 3 runs)``."""
        bad = [r for r in self.runs if not install_ok(r.install)]
        if not bad:
            return "ok"
        kinds = sorted({str(r.install.get("status")) for r in bad})
        return f"{', '.join(kinds)} ({len(bad)} of {len(self.runs)} runs)"

    @property
    def seconds(self) -> float:
        return sum(run_seconds(r) for r in self.runs)


@dataclass
class Box:
    """One box of the matrix: an observation, or why there is none."""

    release: str
    numpy: str | None
    span: int
    status: str
    tone: str
    evidence_id: str
    result: Result | None = None
    run: Run | None = None
    note: str = ""
    # Why there is no result: "no-run", "no-result" or "not-installed" ("" when observed).
    reason: str = ""
    unknown_status: bool = False
    # Same row and release, other runs (aot/gpu rows gathered over several runs).
    others: list[tuple[Run, Result]] = field(default_factory=list)

    @property
    def observed(self) -> bool:
        return self.result is not None

    @property
    def icon(self) -> str:
        return icon(self.tone)

    @property
    def meaning_label(self) -> str:
        return MEANINGS_BY_NAME[self.tone].label

    @property
    def problem(self) -> bool:
        return is_problem(self.tone)

    def accessible_name(self, key: RowKey) -> str:
        """What a screen reader says for the cell: probe, backend, target, release, numpy and
        the status with its meaning (the visible text is only the status)."""
        where = f"backend {key.backend}" + (f", target {key.target}" if key.target else "")
        if key.backend == "aot":
            where += " (compiled, not run)"
        numpy = f", numpy {self.numpy}" if self.numpy else ""
        return (
            f"{key.probe}, {where}, Triton {self.release}{numpy}: {self.status} "
            f"({self.meaning_label})"
        )

    @property
    def title(self) -> str:
        """A one-line tooltip: status and the first line of the evidence."""
        first = (self.result.detail if self.result else self.note).splitlines()
        return f"{self.status}: {first[0]}" if first and first[0] else self.status

    @property
    def data_items(self) -> list[tuple[str, str]]:
        if self.result is None:
            return []
        return [
            (k, CENSUS_NOTE if k == "census" else clip(_show(v)))
            for k, v in sorted(self.result.data.items())
        ]


@dataclass
class Row:
    key: RowKey
    spec: ProbeSpec | None
    cells: list[Box]

    @property
    def known(self) -> bool:
        return self.spec is not None

    @property
    def split_by_numpy(self) -> bool:
        return self.key.backend == "interpret"

    @property
    def problem(self) -> bool:
        """Some cell is breaking or silently wrong (the "only problems" filter)."""
        return any(c.problem for c in self.cells)

    @property
    def changes(self) -> bool:
        """Observed statuses differ between cells (the "only changes" filter)."""
        return len({c.status for c in self.cells if c.observed}) > 1

    @property
    def measured(self) -> bool:
        """Some cell has an observation that is not "not measured" (the "hide" filter)."""
        return any(c.tone != "unmeasured" for c in self.cells)


def run_seconds(run: Run) -> float:
    """Time a cell cost: installing plus every probe (what the timing chart shows); a
    duration recorded as not known (``known_seconds``) counts for nothing."""
    return install_seconds(run) + probe_seconds(run)


def install_seconds(run: Run) -> float:
    """The install's recorded seconds, 0 where none is known."""
    return known_seconds(run.install.get("seconds")) or 0.0


def probe_seconds(run: Run) -> float:
    """The sum of the results' known seconds."""
    return sum(known_seconds(r.seconds) or 0.0 for r in run.results)


def is_gpu_run(run: Run) -> bool:
    return bool(run.env.get("gpu"))


def slug(text: str) -> str:
    """A file-name-safe form of a release or probe name (letters, digits, ``._-`` kept)."""
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in text)
    return safe.strip(".") or "_"


def group_releases(runs: Iterable[Run]) -> list[ReleaseGroup]:
    """Runs by ``env["triton"]``, releases sorted by version, all with the same numpy sub-axis."""
    runs = list(runs)
    by_release: dict[str, list[Run]] = {}
    for run in runs:
        by_release.setdefault(str(run.triton or "unknown"), []).append(run)
    # One numpy axis for every release, so that a numpy a release was not run with shows up
    # as a missing cell rather than silently narrowing that release's columns.
    numpys = sorted({r.env.get("numpy") for r in runs if not is_gpu_run(r)}, key=release_key) or [
        None
    ]
    releases = []
    used: set[str] = set()
    for version in sorted(by_release, key=release_key):
        group = sorted(by_release[version], key=lambda r: (release_key(r.env.get("numpy")), r.id))
        name = slug(version)
        while name in used:
            name += "_"
        used.add(name)
        releases.append(ReleaseGroup(version, group, list(numpys), name))
    return releases


def _target_key(target: str | None) -> tuple[int, str]:
    if target is None:
        return (-1, "")
    if target in AOT_TARGETS:
        return (AOT_TARGETS.index(target), target)
    return (len(AOT_TARGETS), target)


def _row_sort_key(k: tuple[str, str, str | None]) -> tuple[Any, ...]:
    """Catalog order of probes (unknown ones last, by name), then backend, then target."""
    probe, backend, target = k
    order = {p.name: i for i, p in enumerate(PROBES)}
    return (
        order.get(probe, len(order)),
        probe,
        BACKENDS.index(backend) if backend in BACKENDS else len(BACKENDS),
        backend,
        _target_key(target),
    )


def sorted_results(results: Iterable[Result]) -> list[Result]:
    """Results in the order the matrix rows have."""
    return sorted(results, key=lambda r: _row_sort_key(r.key))


def row_keys(runs: Iterable[Run]) -> list[RowKey]:
    """Every row seen in the data: catalog probes in catalog order, then unknown probes by name."""
    seen = {r.key for run in runs for r in run.results}
    return [RowKey(*k) for k in sorted(seen, key=_row_sort_key)]


def _absent(release: ReleaseGroup, runs: Sequence[Run], what: str) -> tuple[str, str, str]:
    """Status, reason and note for a cell with no result: not installed, or missing and why."""
    if not runs:
        return MISSING, "no-run", f"no run for Triton {release.version} {what}"
    failed = [r for r in runs if not install_ok(r.install)]
    if len(failed) == len(runs):
        r = failed[0]
        detail = r.install.get("detail") or "(no detail)"
        return NOT_INSTALLED, "not-installed", f"install {r.install.get('status')}: {detail}"
    incomplete = [r.id for r in runs if not r.complete]
    if incomplete:
        note = f"no result: run {', '.join(incomplete)} was interrupted (complete: false)"
    else:
        note = f"no result for this row in run {', '.join(r.id for r in runs)}"
    return MISSING, "no-result", note


def _cell(
    key: RowKey,
    spec: ProbeSpec | None,
    release: ReleaseGroup,
    numpy: str | None,
    span: int,
    runs: Sequence[Run],
    evidence_id: str,
    what: str,
) -> Box:
    found = [
        (run, res)
        for run in runs
        for res in run.results
        if res.key == (key.probe, key.backend, key.target)
    ]
    if not found:
        status, reason, note = _absent(release, runs, what)
        return Box(
            release.version,
            numpy,
            span,
            status,
            tone(spec or key.probe, status),
            evidence_id,
            note=note,
            reason=reason,
        )
    # Several observations (aot results in more than one run): show the newest numpy's, list all.
    found.sort(key=lambda rr: (release_key(rr[0].env.get("numpy")), rr[0].id), reverse=True)
    run, res = found[0]
    others = found[1:]
    note = ""
    differing = sorted({r.status for _, r in others if r.status != res.status})
    if differing:
        note = f"other runs of this release saw: {', '.join(differing)}"
    unknown = spec is not None and res.status not in spec.all_statuses
    return Box(
        release.version,
        numpy,
        span,
        res.status,
        tone(spec or key.probe, res.status, res.data),
        evidence_id,
        result=res,
        run=run,
        note=note,
        unknown_status=unknown,
        others=others,
    )


def evidence_id(key: RowKey, release: str, numpy: str | None) -> str:
    """The id of a cell's evidence, stable across rebuilds (a permalink ``#ev-...`` keeps
    pointing at the same probe, column, release and numpy when rows are added)."""
    parts = [key.probe, key.label, release] + ([f"np{numpy}"] if numpy else [])
    return "ev-" + "--".join(slug(p) for p in parts)


def build_rows(releases: Sequence[ReleaseGroup], keys: Sequence[RowKey]) -> list[Row]:
    rows = []
    for key in keys:
        spec = PROBES_BY_NAME.get(key.probe)
        cells: list[Box] = []
        for release in releases:
            if key.backend == "interpret":
                for numpy in release.numpys:
                    runs = [
                        r for r in release.runs if not is_gpu_run(r) and r.env.get("numpy") == numpy
                    ]
                    cells.append(
                        _cell(
                            key,
                            spec,
                            release,
                            numpy,
                            1,
                            runs,
                            evidence_id(key, release.version, numpy),
                            f"with numpy {numpy}",
                        )
                    )
            else:
                runs = [r for r in release.runs if (key.backend == "gpu") == is_gpu_run(r)]
                what = "on a GPU" if key.backend == "gpu" else f"for backend {key.backend}"
                cells.append(
                    _cell(
                        key,
                        spec,
                        release,
                        None,
                        len(release.numpys),
                        runs,
                        evidence_id(key, release.version, None),
                        what,
                    )
                )
        rows.append(Row(key, spec, cells))
    return rows


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:.6g}"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
