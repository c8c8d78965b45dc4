"""Baseline files: findings a team already knows, remembered by file, rule and line text."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from matrix.scan.findings import Finding


class BaselineError(ValueError):
    """The baseline file is malformed; the message names the file and what was expected."""


# ------------------------------------------------------------------------------------ baseline


def write_baseline(findings: Iterable[Finding], path: str | Path) -> None:
    """Remember today's findings, so that later scans report only new ones."""
    counts = Counter(k for f in findings for k in f.use_keys())
    doc = {
        "format": 1,
        "tool": "matrix.scan",
        "findings": [
            {"path": p, "rule": r, "source": s, "count": n}
            for (p, r, s), n in sorted(counts.items())
        ],
    }
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def read_baseline(path: str | Path) -> Counter[tuple[str, str, str]]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise BaselineError(f"--baseline-file {str(path)!r}: cannot read ({e})") from e
    items = doc.get("findings") if isinstance(doc, dict) else None
    if doc.get("format") != 1 or not isinstance(items, list):
        raise BaselineError(
            f'--baseline-file {str(path)!r}: expected {{"format": 1, "findings": [...]}} '
            "as written by --write-baseline-file"
        )
    known: Counter[tuple[str, str, str]] = Counter()
    for i, item in enumerate(items):
        try:
            known[(item["path"], item["rule"], item["source"])] += int(item.get("count", 1))
        except (KeyError, TypeError, ValueError) as e:
            raise BaselineError(
                f"--baseline-file {str(path)!r}: findings[{i}]: expected path, rule, source "
                f"and count, got {item!r}"
            ) from e
    return known


def drop_known(
    findings: list[Finding], known: Counter[tuple[str, str, str]]
) -> tuple[list[Finding], int]:
    """Findings not in the baseline (as many of each use as it remembers are dropped). A
    finding that stands for several uses keeps only its new ones: a new use of a problem the
    file already had is reported, at its own line."""
    left = Counter(known)
    kept, dropped = [], 0
    for f in findings:
        uses = list(zip([f.line, *f.also], [f.source_line, *f.also_sources], strict=True))
        new = []
        for line, source in uses:
            k = (Path(f.path).as_posix(), f.rule.id, source.strip())
            if left[k] > 0:
                left[k] -= 1
            else:
                new.append((line, source))
        if not new:
            dropped += 1
            continue
        if len(new) < len(uses):
            f.line, f.source_line = new[0]
            f.also = [line for line, _ in new[1:]]
            f.also_sources = [source for _, source in new[1:]]
            f.col, f.end_line = 1, new[0][0]
        kept.append(f)
    return kept, dropped
