"""GPU timings in the gate: slowdowns and failed checks between two releases' benchmark files.

The benchmark files (``matrix.measure.gpu_bench``; format in its docstring) hold, per case, the
time of split-K (and tiled) as a ratio to cuBLAS in the same run. cuBLAS is the same library in
both releases' runs, so the ratio cancels machine and clock drift. A case is a slowdown when

    candidate ratio / baseline ratio - 1 > max(threshold, baseline noise + candidate noise)

(``threshold`` defaults to 10 %; a run's noise is the spread of that ratio over its rounds).
A slowdown is a regression with its numbers unless ``[[slowdown]]`` in
``matrix/data/accepted_changes.toml`` acknowledges it with a reason::

    [[slowdown]]
    case = "256x256x32768 fp32-ieee *"   # glob over "MxNxK dtype layout"
    impl = "splitk"                      # default "splitk"
    where = "gpu:cuda:90"                # column glob, default "*"
    baseline = "3.8.*"                   # release ranges (matrix.release_range), default "*"
    candidate = "3.9.*"
    max_ratio = 40.0                     # optional: acknowledged up to this candidate ratio
    reason = "fp32 ieee at this shape is not on our hot path"

A check (the float64 comparison of a timed call) that passed on the baseline and failed on the
candidate is a regression too. Bench files for the baseline but none for the candidate (same
column and machine) are undecidable; bench files for neither side are a note.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from matrix.core import DataFileError, Release, table_keys, text_at
from matrix.gate.compare import ACCEPTED, REGRESSION, Comparison, GateFinding
from matrix.gate.config import entries_at, read_bounded_toml, reason_at, release_spec
from matrix.release_range import in_range
from matrix.results import SchemaError, read_json

BENCH_KIND = "triton-gpu-bench"
DEFAULT_THRESHOLD = 0.10
DEFAULT_IMPLS = ("splitk",)
SLOWDOWN_PREFIX = "slowdown "


@dataclass(frozen=True)
class AcceptedSlowdown:
    """An acknowledged slowdown: which case, implementation, column and releases, and why."""

    case: str
    reason: str
    impl: str = "splitk"
    where: str = "*"
    baseline: str = "*"
    candidate: str = "*"
    max_ratio: float | None = None

    def matches(
        self, case: str, impl: str, where: str, baseline: Release, candidate: Release, ratio: float
    ) -> bool:
        return (
            fnmatchcase(case, self.case)
            and fnmatchcase(impl, self.impl)
            and fnmatchcase(where, self.where)
            and in_range(baseline, self.baseline)
            and in_range(candidate, self.candidate)
            and (self.max_ratio is None or ratio <= self.max_ratio)
        )


_KEYS = {"case", "impl", "where", "baseline", "candidate", "max_ratio", "reason"}


def load_slowdowns(path: str | Path) -> list[AcceptedSlowdown]:
    """The ``[[slowdown]]`` entries; each needs a case glob and a non-empty reason."""
    entries = entries_at(path, read_bounded_toml(path), "slowdown")
    out = []
    for i, e in enumerate(entries):
        where = f"slowdown[{i}]"
        table_keys(path, where, e, _KEYS)
        text_at(path, where, e, "case")
        reason = reason_at(path, where, e, "a non-empty string")
        releases = {k: release_spec(path, f"{where}.{k}", e[k]) for k in ("baseline", "candidate")
                    if k in e}  # fmt: skip
        for key in ("impl", "where"):
            if key in e and (not isinstance(e[key], str) or not e[key]):
                raise DataFileError(path, f"{where}.{key}", "a non-empty glob", e[key])
        ratio = e.get("max_ratio")
        if ratio is not None and (not isinstance(ratio, int | float) or ratio <= 0):
            raise DataFileError(path, f"{where}.max_ratio", "a number > 0", ratio)
        out.append(
            AcceptedSlowdown(
                case=e["case"],
                reason=reason,
                impl=e.get("impl", "splitk"),
                where=e.get("where", "*"),
                baseline=releases.get("baseline", "*"),
                candidate=releases.get("candidate", "*"),
                max_ratio=float(ratio) if ratio is not None else None,
            )
        )
    return out


def read_bench(folder: str | Path) -> list[dict[str, Any]]:
    """Every benchmark file (``"kind": "triton-gpu-bench"``) in ``folder``; others are ignored
    (the older single-release files there have another shape)."""
    docs = []
    for path in sorted(Path(folder).glob("*.json")):
        try:  # bounded, regular files only (results.read_json): a FIFO here would block
            doc = read_json(path)
        except SchemaError as e:
            raise DataFileError(path, "", f"a readable benchmark JSON file ({e})") from e
        if isinstance(doc, dict) and doc.get("kind") == BENCH_KIND:
            for key in ("release", "column", "machine", "records", "ratios"):
                if key not in doc:
                    raise DataFileError(path, key, "a benchmark file field (gpu_bench format)")
            doc["_path"] = str(path)
            docs.append(doc)
    return docs


def _by_place(docs: Iterable[dict[str, Any]], release: Release) -> dict[tuple[str, str], dict]:
    out: dict[tuple[str, str], dict] = {}
    for d in docs:
        if Release.parse(d["release"], d.get("_path", "bench file")) == release:
            key = (d["column"], d["machine"])
            if key in out:
                raise DataFileError(
                    d["_path"],
                    "release",
                    f"one bench file per release and place "
                    f"({out[key]['_path']} is also {release} on {key})",
                )
            out[key] = d
    return out


def _records(doc: dict) -> dict[tuple[str, str], dict]:
    return {
        (r["impl"], f"{r['m']}x{r['n']}x{r['k']} {r['dtype']} {r['layout']}"): r
        for r in doc["records"]
    }


def compare_timings(
    docs: Sequence[dict[str, Any]],
    baseline: Release | str,
    candidate: Release | str,
    accepted: Sequence[AcceptedSlowdown],
    threshold: float = DEFAULT_THRESHOLD,
    impls: Sequence[str] = DEFAULT_IMPLS,
) -> Comparison:
    """Findings, undecidables and notes of the GPU timings of ``baseline`` -> ``candidate``."""
    out = Comparison()
    baseline, candidate = Release.parse(baseline), Release.parse(candidate)
    base, cand = _by_place(docs, baseline), _by_place(docs, candidate)
    if not base and not cand:
        out.notes.append(f"no GPU timings recorded for {baseline} or {candidate}")
    for place in sorted(set(base) - set(cand)):
        out.undecidable.append(
            f"GPU timings on {place[0]} ({place[1]}) for the baseline {baseline} but none for "
            f"the candidate {candidate}"
        )
    for place in sorted(set(cand) - set(base)):
        out.notes.append(f"not compared: GPU timings on {place[0]} ({place[1]}) for {candidate}")
    for place in sorted(set(base) & set(cand)):
        b, c = base[place], cand[place]
        where = f"{place[0]} ({place[1]})"
        out.compared.append(f"GPU timings {where}")
        for side, doc in ((baseline, b), (candidate, c)):
            if any(q.get("noise") is None for q in doc["ratios"]):
                out.notes.append(
                    f"GPU timings of {side} on {where}: one round per case "
                    f"({doc.get('converted_from', 'no noise measured')}); the margin uses the "
                    "threshold and the other side's noise only"
                )
        b_rec, c_rec = _records(b), _records(c)
        for key, br in sorted(b_rec.items()):
            cr = c_rec.get(key)
            if not br.get("ok"):
                continue
            if cr is None:
                out.undecidable.append(
                    f"timing check {key[0]} {key[1]} on {where}: passed on {baseline}, "
                    f"not measured on {candidate}"
                )
            elif not cr.get("ok"):
                why = cr.get("error") or (
                    f"rel. error {cr.get('rel_err')} over tolerance {cr.get('tolerance')}, "
                    f"{cr.get('unwritten')} unwritten"
                )
                out.findings.append(
                    GateFinding(
                        REGRESSION,
                        f"timing check {key[0]} {key[1]}",
                        where,
                        "ok",
                        "failed",
                        [
                            f"baseline {baseline}: rel. error {br.get('rel_err')}",
                            f"candidate {candidate}: {why}",
                        ],
                    )
                )
        b_ratio = {(r["impl"], r["case"]): r for r in b["ratios"]}
        c_ratio = {(r["impl"], r["case"]): r for r in c["ratios"]}
        for key in sorted(set(b_ratio) & set(c_ratio)):
            if key[0] not in impls:
                continue
            br, cr = b_ratio[key], c_ratio[key]
            change = cr["graph"] / br["graph"] - 1
            # A converted single-round file has no measured noise (null): counts as none.
            noise = (br["noise"] or 0.0) + (cr["noise"] or 0.0)
            margin = max(threshold, noise)
            if abs(change) <= margin:
                continue
            if change < 0:
                out.notes.append(
                    f"faster: {key[0]} {key[1]} on {where}: {key[0]}/cuBLAS "
                    f"{br['graph']:.3f} -> {cr['graph']:.3f} ({change:+.0%})"
                )
                continue
            evidence = [
                f"{key[0]}/cuBLAS under CUDA-graph replay {br['graph']:.3f} on {baseline} -> "
                f"{cr['graph']:.3f} on {candidate} ({change:+.1%}; threshold {margin:.1%} = "
                f"max({threshold:.0%}, measured noise {noise:.1%}))",
                _times(b_rec, key, baseline) + "; " + _times(c_rec, key, candidate),
                f"eager (do_bench) ratio {br['eager']:.3f} -> {cr['eager']:.3f}",
            ]
            finding = GateFinding(
                REGRESSION,
                f"{SLOWDOWN_PREFIX}{key[0]} {key[1]}",
                where,
                f"{br['graph']:.3f}",
                f"{cr['graph']:.3f}",
                evidence,
            )
            for ack in accepted:
                if ack.matches(key[1], key[0], place[0], baseline, candidate, cr["graph"]):
                    finding.kind, finding.reason = ACCEPTED, ack.reason
                    break
            out.findings.append(finding)
    return out


def _times(
    records: dict[tuple[str, str], dict], key: tuple[str, str], release: Release | str
) -> str:
    impl = records.get(key, {}).get("us_graph")
    cublas = records.get(("cublas", key[1]), {}).get("us_graph")
    if impl is None or cublas is None:
        return f"{release}: times not recorded"
    return f"{release}: {key[0]} {impl:.1f} us, cuBLAS {cublas:.1f} us"


def toml_ack(f: GateFinding) -> str:
    """A ready-made ``[[slowdown]]`` entry for a slowdown finding."""
    impl, case = f.probe[len(SLOWDOWN_PREFIX) :].split(" ", 1)
    column = f.where.split(" ", 1)[0]
    return (
        f'[[slowdown]]\ncase = "{case}"\nimpl = "{impl}"\nwhere = "{column}"\n'
        f'max_ratio = {f.candidate}\nreason = "..."  # why this slowdown is fine for you'
    )
