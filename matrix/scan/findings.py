"""What a scan finds: a Finding per hazard and line, a ScanReport, an ApiUse per name."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.scan.rules import NOT_AFFECTED, UNKNOWN, Rule


@dataclass
class Finding:
    """One use of a hazard in one file. ``effect`` says what it means for the candidate."""

    path: str
    line: int
    col: int  # 1-based
    rule: Rule
    snippet: str
    detail: str = ""  # census findings: the releases concerned
    effect: str = UNKNOWN
    note: str = ""  # why it does (not) affect the candidate
    works_on: tuple[str, str] | None = None
    end_line: int = 0
    source_line: str = ""
    census: Any = None  # census findings: the CensusProblem behind it
    also: list[int] = field(default_factory=list)  # census findings: the same use on these lines
    also_sources: list[str] = field(default_factory=list)  # the source text of the `also` lines
    qualname: str = ""  # name rules: the dotted name matched (the census decides it per release)
    anchor: int = 0  # id of the matched expression (a call's function): one hazard per use
    # the version tests (matrix.scan.guards.VersionGuard) of the branches the line is in
    guards: tuple[Any, ...] = ()
    # call rules the census decides: the call's keywords and positional count, as written
    call: tuple[tuple[str, ...], int] | None = None
    # python-call rules: the probe case whose cell decides this finding (None: none measures it)
    cell: str | None = None
    # ... and where the call means something else on releases a module-level branch rules out
    # (a name rebound to constexpr_function under a version test): (the branch's guard or None
    # when the scanner cannot evaluate it, the case there)
    alternative: tuple[Any, str | None] | None = None

    @property
    def message(self) -> str:
        text = self.rule.message.replace("{call}", self.snippet).replace("{detail}", self.detail)
        if self.also:
            shown = ", ".join(map(str, self.also[:5])) + (", ..." if len(self.also) > 5 else "")
            text += f" (also line{'s' if len(self.also) > 1 else ''} {shown})"
        return text

    @property
    def fails(self) -> bool:
        """Whether this finding makes the scan exit 1 (breaks or changes the candidate)."""
        return self.rule.severity != "advisory" and self.effect != NOT_AFFECTED

    def text(self, note: str = "") -> str:
        where = f"{self.path}:{self.line}:{self.col}"
        extra = f" [{note}]" if note else ""
        return f"{where}: {self.rule.id} {self.message}{extra}; fix: {self.rule.fix}"

    def key(self) -> tuple[str, str, str]:
        """What a baseline file remembers: stable under edits that only move lines."""
        return (Path(self.path).as_posix(), self.rule.id, self.source_line.strip())

    def use_keys(self) -> list[tuple[str, str, str]]:
        """One key per use this finding stands for (its line and its ``also`` lines), so that
        a new use folded into an old finding is still new to a baseline."""
        path = Path(self.path).as_posix()
        return [self.key(), *((path, self.rule.id, s.strip()) for s in self.also_sources)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "rule": self.rule.id,
            "name": self.rule.name,
            "severity": self.rule.severity,
            "message": self.message,
            "fix": self.rule.fix,
            "probe": self.rule.probe,
            "effect": self.effect,
            "note": self.note,
            "works_on": list(self.works_on) if self.works_on else None,
            "also_lines": self.also,
        }


@dataclass
class ScanReport:
    """Findings over a set of paths, plus the files skipped (undecodable or unparsable).

    ``errors`` stays empty: a file that cannot be read is skipped and listed in ``skipped``,
    never a reason to stop (the gate reads ``errors`` as undecidable)."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # files the default excludes dropped
    suppressed: int = 0  # by `a noqa comment`
    known: int = 0  # by the baseline file
    works_on: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    releases: list[str] = field(default_factory=list)  # the census's, oldest first
    uses: list[ApiUse] = field(default_factory=list)  # for matrix.gate.api


@dataclass(frozen=True)
class ApiUse:
    """A reference to a ``triton.*`` name in a file, with the call's arguments if it is called
    (the shape ``matrix.gate.api`` reads: qualname, path, line, keywords, positional)."""

    qualname: str
    path: str
    line: int
    keywords: tuple[str, ...] = ()
    positional: int = 0
    positional_known: bool = True  # False when a ``*args`` splat hides the count
    splat_kwargs: bool = False
    called: bool = False
    node: ast.AST | None = field(default=None, compare=False, repr=False)
    call: ast.Call | None = field(default=None, compare=False, repr=False)  # its call, if any
    # the feature guards around the line (matrix.scan.guards): the gate decides per release
    # whether the line runs there, or falls back where it fails
    guards: tuple[Any, ...] = field(default=(), compare=False, repr=False)
