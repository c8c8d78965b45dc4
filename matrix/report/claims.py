"""The seed notes' claims about Triton, checked against what the matrix measured.

The two seed notes make claims about Triton releases (what was deprecated or removed when, which
defaults, which dtypes). Some are wrong, so none is taken on trust: ``matrix/data/claims.toml``
quotes each one and states, as data, what the results would show if it were right. ``evaluate``
reads the results and gives each claim a verdict with the evidence behind it::

    holds     every check that has data agrees with the results
    fails     every check that has data disagrees
    partly    a mix (right about 3.9, wrong about 3.7)
    untested  no result bears on it ("no results for probe X")

The vocabulary of ``claims.toml``::

    [[claim]]
    id = "block-ptr-deprecated-in-3.7"    # unique, used by the report
    note = "matmul"                       # which seed note: "split-k" or "matmul"
    quote = "That API was deprecated in 3.7"   # word for word from the note
    reading = "..."                       # optional: how the quote became checks
    [[claim.check]]                       # one or more; all of them make the claim
    probe = "block_ptr"                   # a probe of matrix/catalog.py or a [planned.*] one
    backend = "aot"                       # optional: a backend or a list (default: any)
    target = ["cuda:80", "cuda:90"]       # optional: a target or a list (default: any)
    releases = ">=3.7,<3.9"               # optional: a PEP 440 specifier set (default: all)
    # and exactly one of:
    expect = "deprecated"                 # a status or a list: the result agrees if its status
    #                                     # is one of them, and also (optional):
    #   detail_contains = "NotImplementedError"       # text(s) the detail must contain
    #   data = { max_ulps = { le = 16 } }            # eq ne lt le gt ge on result.data fields
    changes_at = "3.8"                    # per backend/target, the last release before 3.8 and
    #                                     # the first 3.8.x release give different statuses
    differs_from = { backend = "aot", target = "cuda:90" }   # the status differs from that
    #                                     # backend/target's status in the same release
    quantifier = "some"                   # optional with expect/differs_from: "every" (default)
    #                                     # or "some" (one agreeing result is enough; for
    #                                     # "may not be supported")

A check may instead be a group, ``{ any = [ {...}, {...} ] }`` or ``{ all = [...] }``, nested as
deep as needed. A group ``all`` holds when all its decided members hold, fails when all fail; a
group ``any`` holds when one holds, fails when all fail; otherwise each is ``partly``.
``matrix.report.claims_file`` reads the file and checks every key.

Results whose status is skipped, error, crashed or timeout are not observations: they show up in
the evidence as such and count for nothing. The exception is a probe that lists such a status as
one of its own (``python_min_runtime`` ends ``error`` when ``min()`` is refused): there the status
is the observation. Releases come from ``run.env["triton"]`` and are compared with
``packaging.version``; a pre-release, dev or local build of 3.9 counts as 3.9.

This module needs only the standard library, ``packaging`` and ``matrix.catalog``/``results``: the
report and the gate use it where Triton, torch and numpy are not installed.

>>> claims = load_claims()
>>> [v.verdict for v in evaluate([], claims)][:2]
['untested', 'untested']
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet

from matrix import cli
from matrix.core import (
    INSTALL_OK,
    NO_OBSERVATION_STATUSES,
    Column,
    DataFileError,
    Release,
    ReleaseError,
)
from matrix.exitcodes import ExitCode
from matrix.report.claims_file import DATA_OPS as DATA_OPS
from matrix.report.claims_file import (
    DEFAULT_PATH,
    Check,
    Claim,
    Group,
    Verdict,
    load_claims,
)
from matrix.report.claims_file import GROUP_OPS as GROUP_OPS
from matrix.report.claims_file import NOTES as NOTES
from matrix.report.claims_file import QUANTIFIERS as QUANTIFIERS
from matrix.report.claims_file import VERDICTS as VERDICTS
from matrix.report.claims_file import ClaimsError as ClaimsError
from matrix.report.claims_file import DataCondition as DataCondition
from matrix.report.claims_file import ProbeInfo as ProbeInfo
from matrix.report.claims_file import load_probes as load_probes
from matrix.results import Result, Run

# (``X as X`` above: the claims file's vocabulary, read from here before it had its own
# module; the same objects.)

_DETAIL_WIDTH = 120


# --- evaluating ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    release: Release
    run: Run
    result: Result


@dataclass
class _Index:
    """The runs, parsed once: release per run, and notes on runs that cannot be used."""

    rows: list[_Row] = field(default_factory=list)
    # (release, backends the cell would have run, text): a gpu cell runs gpu, the others the rest.
    failed_installs: list[tuple[Release | None, tuple[str, ...], str]] = field(default_factory=list)
    # (probes the run has results for, text): runs whose env.triton is not a version.
    unusable: list[tuple[frozenset[str], str]] = field(default_factory=list)

    @classmethod
    def build(cls, runs: Iterable[Run]) -> _Index:
        index = cls()
        for run in runs:
            release = _release(run)
            install = run.install.get("status", INSTALL_OK)
            if install != INSTALL_OK:
                detail = _short(str(run.install.get("detail", "")))
                cell = " ".join(
                    filter(None, (str(run.triton or run.id), _numpy_label(run.env.get("numpy"))))
                )
                text = f"{cell} install={install}: no results"
                kinds = ("gpu",) if run.env.get("gpu") else ("interpret", "aot")
                text += f" ({detail})" if detail else ""
                index.failed_installs.append((release, kinds, text))
            if release is None:
                if run.results:
                    index.unusable.append(
                        (
                            frozenset(r.probe for r in run.results),
                            f"run {run.id}: env.triton {run.triton!r} is not a version; "
                            f"its {len(run.results)} results are ignored",
                        )
                    )
                continue
            index.rows.extend(_Row(release, run, r) for r in run.results)
        index.rows.sort(
            key=lambda w: (
                w.release,
                w.result.backend,
                w.result.target or "",
                str(w.run.env.get("numpy") or ""),
            )
        )
        return index


def evaluate(runs: Sequence[Run], claims: Sequence[Claim] | None = None) -> list[Verdict]:
    """One Verdict per claim (in the claims' order), from the results of ``runs``."""
    if claims is None:
        claims = load_claims()
    index = _Index.build(runs)
    verdicts = []
    for claim in claims:
        outcome, evidence = _eval_node(claim.check, index)
        verdicts.append(
            Verdict(
                id=claim.id,
                note=claim.note,
                quote=claim.quote,
                verdict=outcome,
                evidence=list(dict.fromkeys(evidence)),
                reading=claim.reading,
                probes=claim.probes,
            )
        )
    return verdicts


def _eval_node(node: Check | Group, index: _Index) -> tuple[str, list[str]]:
    if isinstance(node, Check):
        return _eval_check(node, index)
    outcomes, evidence = [], []
    for child in node.children:
        outcome, lines = _eval_node(child, index)
        outcomes.append(outcome)
        evidence.extend(lines)
    return _combine(node.op, outcomes), evidence


def _combine(op: str, outcomes: list[str]) -> str:
    decided = [o for o in outcomes if o != "untested"]
    if not decided:
        return "untested"
    if all(o == "fails" for o in decided):
        return "fails"
    if op == "any":
        return "holds" if "holds" in decided else "partly"
    return "holds" if all(o == "holds" for o in decided) else "partly"


def _eval_check(check: Check, index: _Index) -> tuple[str, list[str]]:
    spec = check.specifier
    evidence = [
        text
        for rel, kinds, text in index.failed_installs
        if (rel is None or _in(spec, rel)) and any(check.looks_at(k) for k in kinds)
    ]
    evidence += [text for probes, text in index.unusable if check.probe in probes]
    of_probe = [w for w in index.rows if w.result.probe == check.probe]
    rows = [w for w in of_probe if _matches(check, w)]
    if not rows:
        if of_probe:
            evidence.append(f"no results for {check.scope()} (the probe has other results)")
        else:
            evidence.append(f"no results for probe {check.probe}")
        return "untested", evidence
    if check.changes_at:
        return _eval_change(check, rows, evidence)
    verdicts: list[bool] = []
    refs = _reference_statuses(check, index) if check.differs_from else {}
    fields = [c.field for c in check.data]
    for w in rows:
        line = _describe(w, fields)
        if not _is_observation(check, w.result):
            evidence.append(f"not an observation: {line}")
            continue
        agrees, why = _agrees(check, w, refs)
        if agrees is None:
            evidence.append(f"not an observation: {line}: {why}")
            continue
        verdicts.append(agrees)
        evidence.append(f"{'agrees' if agrees else 'disagrees'}: {line}; {why}")
    return _tally(verdicts, check.quantifier), evidence


def _tally(verdicts: list[bool], quantifier: str) -> str:
    if not verdicts:
        return "untested"
    if quantifier == "some":
        return "holds" if any(verdicts) else "fails"
    if all(verdicts):
        return "holds"
    return "fails" if not any(verdicts) else "partly"


def _agrees(check: Check, w: _Row, refs: dict[Release, set[str]]) -> tuple[bool | None, str]:
    """Whether one observation agrees with the check, and why (None: it cannot say)."""
    r = w.result
    if check.differs_from:
        backend, target = check.differs_from
        other = str(Column(backend, target))
        ref = refs.get(w.release)
        if not ref:
            return None, f"no {other} result of the same release to compare with"
        return r.status not in ref, f"{other} gives {'/'.join(sorted(ref))}"
    ok = r.status in check.expect
    for text in check.detail_contains:
        ok = ok and text in r.detail
    for cond in check.data:
        passed = cond.test(r.data)
        if passed is None:
            return None, f"no data.{cond.field} in the result"
        ok = ok and passed
    return ok, check.expectation()


def _reference_statuses(check: Check, index: _Index) -> dict[Release, set[str]]:
    assert check.differs_from is not None
    backend, target = check.differs_from
    refs: dict[Release, set[str]] = {}
    for w in index.rows:
        r = w.result
        if (
            r.probe == check.probe
            and r.backend == backend
            and (target is None or r.target == target)
            and _is_observation(check, r)
        ):
            refs.setdefault(w.release, set()).add(r.status)
    return refs


def _eval_change(check: Check, rows: list[_Row], evidence: list[str]) -> tuple[str, list[str]]:
    # ``changes_at`` names a series ("3.8"): every release whose major.minor is that.
    at = str(check.changes_at)
    series = Release.parse(at).version.release[:2]
    by_key: dict[tuple[str, str], dict[Release, set[str]]] = {}
    for w in rows:
        if not _is_observation(check, w.result):
            evidence.append(f"not an observation: {_describe(w)}")
            continue
        key = (w.result.backend, w.result.target or "")
        by_key.setdefault(key, {}).setdefault(w.release, set()).add(w.result.status)
    verdicts = []
    for (backend, target), releases in sorted(by_key.items()):
        where = f"{Column(backend, target or None)} {check.probe}"
        before = [v for v in releases if v.version.release[:2] < series]
        after = [v for v in releases if v.version.release[:2] == series]
        if not before or not after:
            missing = f"no release before {at}" if not before else f"no {at} release"
            evidence.append(f"no data: {where}: {missing} among {_versions(releases)}")
            continue
        b, a = max(before), min(after)
        old, new = "/".join(sorted(releases[b])), "/".join(sorted(releases[a]))
        changed = releases[b] != releases[a]
        verdicts.append(changed)
        evidence.append(
            f"{'agrees' if changed else 'disagrees'}: {where}: {b} {old} -> {a} {new}"
            f" ({'changed' if changed else 'unchanged'} at {at})"
        )
    return _tally(verdicts, "every"), evidence


def _matches(check: Check, w: _Row) -> bool:
    r = w.result
    return (
        (check.backends is None or r.backend in check.backends)
        and (check.targets is None or r.target in check.targets)
        and _in(check.specifier, w.release)
    )


def _in(spec: SpecifierSet, release: Release) -> bool:
    # A 3.9 release candidate or dev build behaves as 3.9, not as "<3.9" (PEP 440 orders it below).
    return spec.contains(release.final.version)


def _is_observation(check: Check, r: Result) -> bool:
    return r.status in check.own_statuses or r.status not in NO_OBSERVATION_STATUSES


def _release(run: Run) -> Release | None:
    try:
        return Release.parse(run.triton)
    except ReleaseError:
        return None


def _versions(releases: Iterable[Release]) -> str:
    return ", ".join(str(v) for v in sorted(releases)) or "none"


def _describe(w: _Row, fields: Iterable[str] = ()) -> str:
    """'3.7.1 numpy 2.4.6 interpret block_ptr=deprecated (UserWarning: ...)'."""
    r = w.result
    parts = [str(w.run.triton)]
    numpy = w.run.env.get("numpy")
    if r.backend == "interpret":
        parts.append(_numpy_label(numpy))
    parts.append(str(Column(r.backend, r.target)))
    parts.append(f"{r.probe}={r.status}")
    # Only the data fields the check tests: the rest is in the report, and the detail says why.
    parts += [f"{k}={r.data[k]}" for k in dict.fromkeys(fields) if k in r.data]
    detail = _short(r.detail)
    text = " ".join(p for p in parts if p)
    return f"{text} ({detail})" if detail else text


def _numpy_label(numpy: Any) -> str:
    return f"numpy {numpy}" if numpy else ""


def _short(text: str) -> str:
    one_line = " ".join(text.split())
    if len(one_line) <= _DETAIL_WIDTH:
        return one_line
    return one_line[: _DETAIL_WIDTH - 3] + "..."


# --- command line --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m matrix claims reports/matrix.json``: each claim's verdict and evidence."""
    from matrix.results import SchemaError, read_runs

    parser = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix claims",
        description=main.__doc__,
    )
    parser.add_argument("results", help="matrix.json, a raw file, or a folder of raw files")
    parser.add_argument("--claims", default=str(DEFAULT_PATH), help="claims file (TOML)")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    args = parser.parse_args(argv)
    try:
        claims = load_claims(args.claims)
        runs = read_runs(args.results)
    except (DataFileError, SchemaError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    verdicts = evaluate(runs, claims)
    if args.json:
        print(json.dumps([v.to_dict() for v in verdicts], indent=1, ensure_ascii=False))
        return ExitCode.OK
    for v in verdicts:
        print(f"{v.verdict:9} {v.id} ({v.note})")
        for line in v.evidence:
            print(f"          {line}")
    return ExitCode.OK


if __name__ == "__main__":
    cli.deprecated("python -m matrix.report.claims", "claims")
    sys.exit(cli.run(main, "matrix.report.claims"))
