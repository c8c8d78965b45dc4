"""Find Triton upgrade hazards in a team's kernel sources, by reading them with ``ast``.

Why ``ast`` and not regular expressions: a hazard depends on how a name was imported
(``import triton.language as tl``, ``from mypkg.triton_utils import tl``, ``from .. import
language as tl``), on which arguments a call passes (by keyword or by position), and on where a
value came from; text patterns get all three wrong.

Two sources of findings:

- hand-written rules (``matrix/data/scan_rules.toml``) for what no API listing shows: semantics
  (block pointers, precision defaults, module globals, driver internals, ...);
- the API census (the ``api_surface`` probe, read through ``matrix.analyze.census``): any
  ``triton.*`` name, keyword or positional argument that a recorded release lacks, and any
  default the code relies on (argument omitted) that differs between releases, with no rule
  written for the name.
  With a census each file and each finding also gets a *works-on* range.

Names are resolved across the scanned tree: re-exports (``from mypkg.triton_utils import tl``),
relative imports and ``from X import *`` are followed; a project class that subclasses a
matched internal (``class LibTuner(triton.runtime.Autotuner)``) and module-level functions that
use it carry the finding to the files that use them.

    python -m matrix scan src/ --results reports/raw --candidate 3.9.0

Exit status: 0 nothing breaks or changes the candidate; 1 a finding of severity ``breaking`` or
``change`` that affects the candidate (or whose effect is unknown: it fails closed); advisory
findings and findings that do not affect the candidate never fail; 2 bad arguments, a missing
path, a malformed rules or baseline file. Files that cannot be decoded or parsed (newer syntax)
are reported and skipped. This package must not import triton, torch or numpy.

The package, one job a module: ``rules`` (a rule as an object), ``rule_file`` (the rules file
read and checked), ``kinds`` (the match kinds, registered in one place), ``findings`` (what a
scan finds), ``imports`` (name resolution), ``matchers`` and ``flow`` (what a rule matches),
``census_checks`` (findings from the API census), ``engine`` (files and modules scanned),
``baseline``, ``judge`` (the effect on the candidate), ``output`` (text, JSON, SARIF, GitHub)
and ``command`` (the command line). Every name below stays importable from ``matrix.scan``.
"""

from __future__ import annotations

from matrix.scan.baseline import (
    BaselineError,
    drop_known,
    read_baseline,
    write_baseline,
)
from matrix.scan.census_checks import (
    Censuses,
    CensusProblem,
    api_uses,
    census_findings,
    census_problems,
)
from matrix.scan.command import (
    main,
)
from matrix.scan.engine import (
    NOQA,
    derive_carriers,
    noqa_codes,
    parse_module,
    scan_module,
    scan_paths,
    scan_source,
)
from matrix.scan.findings import (
    ApiUse,
    Finding,
    ScanReport,
)
from matrix.scan.flow import (
    F32,
    F32_MAKERS,
    INT_CALLS,
    INT_ONLY_OPS,
    LOOP_CALLS,
    PASS_THROUGH_CALLS,
    POINTER_CALLS,
    DivisionFlow,
    Float32Names,
    match_dot_acc_dtype,
    match_int_true_division,
)
from matrix.scan.imports import (
    Imports,
    Matcher,
    Module,
    Project,
    SourceModule,
    absolute_module,
    imported_files,
    module_name,
)
from matrix.scan.judge import (
    judge,
    judge_rule,
    probe_statuses,
    releases_note,
    same_release,
)
from matrix.scan.kinds import (
    KINDS,
    MATCH_KINDS,
    MATCHERS,
    NEEDS_NAMES,
    MatchKind,
)
from matrix.scan.matchers import (
    match_annotated_constexpr_global,
    match_call,
    match_global_read,
    match_keyword,
    match_name,
)
from matrix.scan.output import (
    SARIF_SCHEMA,
    render_text,
    summary_line,
    to_github,
    to_json,
    to_sarif,
)
from matrix.scan.rule_file import (
    MATCH_KEYS,
    NAME_LISTS,
    load_rules,
)
from matrix.scan.rules import (
    AFFECTS,
    DEFAULT_EXCLUDE,
    MAX_RESOLVE_DEPTH,
    NOT_AFFECTED,
    RULES_PATH,
    SCOPES,
    SEVERITIES,
    TL,
    TL_MODULES,
    UNKNOWN,
    ArgSpec,
    Rule,
    RuleError,
    SameDefault,
    select_rules,
)
from matrix.scan.sources import (
    decode_python,
    excluded,
    import_words,
    iter_python_files,
    may_reach_triton,
    notebook_source,
    read_source,
)

__all__ = [
    "AFFECTS",
    "DEFAULT_EXCLUDE",
    "F32",
    "F32_MAKERS",
    "INT_CALLS",
    "INT_ONLY_OPS",
    "KINDS",
    "LOOP_CALLS",
    "MATCHERS",
    "MATCH_KEYS",
    "MATCH_KINDS",
    "MAX_RESOLVE_DEPTH",
    "NAME_LISTS",
    "NEEDS_NAMES",
    "NOQA",
    "NOT_AFFECTED",
    "PASS_THROUGH_CALLS",
    "POINTER_CALLS",
    "RULES_PATH",
    "SARIF_SCHEMA",
    "SCOPES",
    "SEVERITIES",
    "TL",
    "TL_MODULES",
    "UNKNOWN",
    "ApiUse",
    "ArgSpec",
    "BaselineError",
    "CensusProblem",
    "Censuses",
    "DivisionFlow",
    "Finding",
    "Float32Names",
    "Imports",
    "MatchKind",
    "Matcher",
    "Module",
    "Project",
    "Rule",
    "RuleError",
    "SameDefault",
    "ScanReport",
    "SourceModule",
    "absolute_module",
    "api_uses",
    "census_findings",
    "census_problems",
    "decode_python",
    "derive_carriers",
    "drop_known",
    "excluded",
    "import_words",
    "imported_files",
    "iter_python_files",
    "judge",
    "judge_rule",
    "load_rules",
    "main",
    "match_annotated_constexpr_global",
    "match_call",
    "match_dot_acc_dtype",
    "match_global_read",
    "match_int_true_division",
    "match_keyword",
    "match_name",
    "may_reach_triton",
    "module_name",
    "noqa_codes",
    "notebook_source",
    "parse_module",
    "probe_statuses",
    "read_baseline",
    "read_source",
    "releases_note",
    "render_text",
    "same_release",
    "scan_module",
    "scan_paths",
    "scan_source",
    "select_rules",
    "summary_line",
    "to_github",
    "to_json",
    "to_sarif",
    "write_baseline",
]
