"""Output formats: text, JSON, SARIF 2.1.0 and GitHub annotations."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matrix.scan.findings import Finding, ScanReport
from matrix.scan.rules import BREAKS, CHANGES, NOT_AFFECTED, Rule

# -------------------------------------------------------------------------------------- output


def _effect_tag(f: Finding, candidate: str | None) -> str:
    if f.rule.severity == "advisory":
        return "advisory"
    if candidate is None:
        return f.rule.severity
    word = {BREAKS: "breaks", CHANGES: "changes", NOT_AFFECTED: "does not affect"}.get(
        f.effect, "effect unknown on"
    )
    return f"{word} {candidate}"


def render_text(
    report: ScanReport,
    rules: Sequence[Rule],
    notes: dict[str, str],
    candidate: str | None,
    *,
    summary_only: bool = False,
    top_files: int = 15,
) -> str:
    """Findings grouped by file (one short line each), then the summary by rule (with each
    rule's fix and releases, once) and by file."""
    out: list[str] = []
    by_file: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_file.setdefault(f.path, []).append(f)
    if not summary_only:
        for path, fs in by_file.items():
            span = report.works_on.get(path, "")
            works = f"; works on {span[0]}-{span[1]}" if span else ""
            if path in report.works_on and span is None:
                works = "; works on no single recorded release"
            out.append(f"{path} ({len(fs)}{works})")
            for f in fs:
                tag = _effect_tag(f, candidate)
                extra = f"; {f.note}" if f.note else ""
                out.append(f"  {f.line}:{f.col} {f.rule.id} {f.message} [{tag}{extra}]")
    if report.findings:
        rule_by_id = {r.id: r for r in rules}
        counts = Counter(f.rule.id for f in report.findings)
        files_per = {
            rid: len({f.path for f in report.findings if f.rule.id == rid}) for rid in counts
        }
        out.append("")
        out.append("by rule:")
        for rid, n in sorted(counts.items()):
            r = rule_by_id[rid]
            fails = sum(1 for f in report.findings if f.rule.id == rid and f.fails)
            out.append(
                f"  {rid} {r.name} ({r.severity}): {n} in {files_per[rid]} file(s)"
                + (f", {fails} fail" if candidate and fails else "")
                + (f" [{notes[rid]}]" if notes.get(rid) else "")
            )
            out.append(f"      fix: {r.fix}")
        out.append(f"by file ({min(top_files, len(by_file))} of {len(by_file)}, most first):")
        ranked = sorted(by_file.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top_files]
        for path, fs in ranked:
            c = Counter(f.rule.id for f in fs)
            out.append(
                f"  {path}: {len(fs)} ({', '.join(f'{k} {v}' for k, v in sorted(c.items()))})"
            )
    return "\n".join(out) + ("\n" if out else "")


def summary_line(report: ScanReport, candidate: str | None, seconds: float) -> str:
    fails = sum(1 for f in report.findings if f.fails)
    parts = [f"{len(report.findings)} finding(s) in {len(report.files)} file(s)"]
    verdict = f"{fails} break or change {candidate}" if candidate else f"{fails} not advisory"
    parts.append(verdict)
    if report.skipped:
        parts.append(f"{len(report.skipped)} file(s) skipped")
    if report.suppressed:
        parts.append(f"{report.suppressed} suppressed by noqa")
    if report.known:
        parts.append(f"{report.known} in the baseline file")
    if report.releases:
        parts.append(f"census of {len(report.releases)} release(s)")
    return "; ".join(parts) + f" ({seconds:.1f} s)"


def to_json(report: ScanReport, notes: dict[str, str], candidate: str | None) -> dict[str, Any]:
    return {
        "candidate": candidate,
        "files": report.files,
        "skipped": report.skipped,
        "errors": report.errors,
        "suppressed": report.suppressed,
        "known": report.known,
        "releases": report.releases,
        "works_on": {p: list(s) if s else None for p, s in report.works_on.items()},
        "rules": notes,
        "findings": [
            dict(f.to_dict(), releases=notes.get(f.rule.id, f.detail)) for f in report.findings
        ],
    }


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _level(f: Finding) -> str:
    if f.rule.severity == "advisory" or f.effect == NOT_AFFECTED:
        return "note"
    return "error" if f.rule.severity == "breaking" else "warning"


def sarif_uri(path: str, root: Path | None) -> str:
    """``path`` relative to ``root`` (as code scanning maps it onto the repository), or as
    given when it lies outside ``root``."""
    if root is None:
        return Path(path).as_posix()
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(path).resolve().as_uri()


def to_sarif(
    report: ScanReport, rules: Sequence[Rule], notes: dict[str, str], root: Path | None = None
) -> dict[str, Any]:
    """SARIF 2.1.0, one run: rules with their fix as help, results with 1-based regions; with
    ``root``, URIs relative to it under ``uriBaseId`` SRCROOT (``originalUriBaseIds``)."""
    used = sorted({f.rule.id for f in report.findings})
    rule_by_id = {r.id: r for r in rules}
    index = {rid: i for i, rid in enumerate(used)}
    driver = {
        "name": "matrix.scan",
        "informationUri": "https://github.com/",
        "rules": [
            {
                "id": rid,
                "name": rule_by_id[rid].name,
                "shortDescription": {"text": rule_by_id[rid].name},
                "help": {"text": rule_by_id[rid].fix},
                "properties": {
                    "severity": rule_by_id[rid].severity,
                    "releases": notes.get(rid, ""),
                },
            }
            for rid in used
        ],
    }
    results = [
        {
            "ruleId": f.rule.id,
            "ruleIndex": index[f.rule.id],
            "level": _level(f),
            "message": {"text": f.message + (f" ({f.note})" if f.note else "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _location(f.path, root),
                        "region": {"startLine": max(f.line, 1), "startColumn": max(f.col, 1)},
                    }
                }
            ],
            "properties": {"effect": f.effect},
        }
        for f in report.findings
    ]
    notifications = [{"level": "warning", "message": {"text": s}} for s in report.skipped]
    run: dict[str, Any] = {"tool": {"driver": driver}, "results": results}
    if root is not None:
        run["originalUriBaseIds"] = {"SRCROOT": {"uri": root.resolve().as_uri() + "/"}}
    if notifications:
        run["invocations"] = [
            {"executionSuccessful": True, "toolExecutionNotifications": notifications}
        ]
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _location(path: str, root: Path | None) -> dict[str, str]:
    uri = sarif_uri(path, root)
    if root is None or uri.startswith("file:"):
        return {"uri": uri}
    return {"uri": uri, "uriBaseId": "SRCROOT"}


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def to_github(report: ScanReport, candidate: str | None) -> str:
    """GitHub Actions workflow commands: one annotation per finding on its line."""
    command = {"error": "error", "warning": "warning", "note": "notice"}
    lines = []
    for f in report.findings:
        props = f"file={_gh_escape(f.path, True)},line={f.line},col={f.col}"
        props += f",title={_gh_escape(f'{f.rule.id} {f.rule.name}', True)}"
        msg = f"{f.message} [{_effect_tag(f, candidate)}]; fix: {f.rule.fix}"
        lines.append(f"::{command[_level(f)]} {props}::{_gh_escape(msg)}")
    for s in report.skipped:
        lines.append(f"::warning ::{_gh_escape(s)}")
    return "\n".join(lines) + ("\n" if lines else "")
