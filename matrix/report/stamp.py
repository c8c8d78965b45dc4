"""Skip a page build whose inputs have not changed since the last one.

A build reads the raw and bench files, the probe sources it shows, the code and data that
render and judge them (the whole ``matrix`` package, the project's ``kernels/`` the gate
scans), the team suites the raw files name, the footer's freshness (git) and the tool
versions. The digest of all of that, the suites it named and the digest of every file the
build wrote are kept in ``OUT/.build-stamp.json``. A build whose inputs digest to the same
value, and whose files are all still there as written, has nothing to do: the 45-pair
verdicts and 146 pages of the committed report take about 30 s to recompute for no change.

Over-inclusive on purpose: any change to the package's code (a comment too) rebuilds, since
a missed input would leave pages that disagree with the code.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core import REPO_ROOT
from matrix.measure.results import atomic_write_text
from matrix.report.team import suite_folder

STAMP_NAME = ".build-stamp.json"
FORMAT = 1
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # matrix/
SKIPPED_DIRS = {"__pycache__", "node_modules"}


@dataclass(frozen=True)
class Stamp:
    """What the last build read (``inputs``) and wrote (``outputs``: path relative to OUT ->
    sha256), with the suites its raw files named and its claims outcome."""

    inputs: str
    outputs: dict[str, str]
    suites: list[str]
    runs: int
    claims_error: str


def _files(root: Path, suffixes: tuple[str, ...] | None = None) -> Iterable[Path]:
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        return
    for p in sorted(root.rglob("*")):
        # Hidden names are nobody's input: the run lock held in the raw folder while the pages
        # build, editors' and atomic writes' temporaries, .git and virtual environments.
        parts = p.relative_to(root).parts
        if any(part in SKIPPED_DIRS or part.startswith(".") for part in parts):
            continue
        wanted = suffixes is None or p.name.endswith(suffixes)
        if wanted and p.is_file() and not p.name.endswith(".pyc"):
            yield p


def _add_tree(h: Any, label: str, root: Path, suffixes: tuple[str, ...] | None = None) -> None:
    kind = "dir" if root.is_dir() else "file" if root.is_file() else "absent"
    h.update(f"\0tree {label} {kind}".encode())
    for p in _files(root, suffixes):
        rel = p.relative_to(root).as_posix() if root.is_dir() else p.name
        h.update(f"\0{rel}\0".encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())


def inputs_digest(
    *,
    raw_dir: Path,
    bench_dir: Path,
    probes_dir: Path,
    accepted_path: Path,
    freshness: str,
    suites: Sequence[str],
    code_roots: Sequence[Path] | None = None,
) -> str:
    """One sha256 over everything a build reads (see the module's docstring)."""
    import jinja2  # the pages' renderer: another version may write other bytes

    python = "{}.{}".format(*sys.version_info[:2])
    h = hashlib.sha256(f"format {FORMAT}\0python {python}\0jinja2 {jinja2.__version__}".encode())
    # The pages' verdict is the gate's on this project's own code (kernels/, compat/).
    default = [PACKAGE_DIR, REPO_ROOT / "kernels", REPO_ROOT / "compat"]
    roots = code_roots if code_roots is not None else default
    for i, root in enumerate(roots):
        _add_tree(h, f"code{i}", Path(root))
    _add_tree(h, "raw", Path(raw_dir))
    _add_tree(h, "bench", Path(bench_dir))
    _add_tree(h, "probes", Path(probes_dir))
    _add_tree(h, "accepted", Path(accepted_path))
    h.update(f"\0freshness {freshness}".encode())
    for suite in suites:
        # The team gate profiles the suite's Python sources and links their lines.
        _add_tree(h, f"suite {suite}", suite_folder(suite), (".py",))
    return h.hexdigest()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read(out_dir: Path) -> Stamp | None:
    """The last build's stamp in ``out_dir``; None when there is none or it is unreadable
    (then the build runs: a stamp never stops a build it cannot vouch for)."""
    path = Path(out_dir) / STAMP_NAME
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        if d.get("format") != FORMAT:
            return None
        return Stamp(
            str(d["inputs"]),
            {str(k): str(v) for k, v in d["outputs"].items()},
            [str(s) for s in d["suites"]],
            int(d["runs"]),
            str(d["claims_error"]),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def outputs_intact(out_dir: Path, stamp: Stamp) -> bool:
    """Every file the stamped build wrote is still there with the bytes it wrote."""
    out_dir = Path(out_dir)
    for rel, digest in stamp.outputs.items():
        path = out_dir / rel
        if not path.is_file() or _sha(path) != digest:
            return False
    return bool(stamp.outputs)


def write(
    out_dir: Path,
    inputs: str,
    pages: Sequence[Path],
    suites: Sequence[str],
    runs: int,
    claims_error: str,
) -> None:
    out_dir = Path(out_dir)
    outputs = {
        Path(p).resolve().relative_to(out_dir.resolve()).as_posix(): _sha(Path(p)) for p in pages
    }
    doc = {
        "format": FORMAT,
        "why": "python -m matrix.report skips a build whose inputs and outputs are as here",
        "inputs": inputs,
        "suites": list(suites),
        "runs": runs,
        "claims_error": claims_error,
        "outputs": dict(sorted(outputs.items())),
    }
    atomic_write_text(out_dir / STAMP_NAME, json.dumps(doc, indent=1) + "\n")
