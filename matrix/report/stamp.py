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

The stamp also keeps each input file's digest, by part (code, raw, bench, probes, accepted,
suites) and the digests of the parts read whole (freshness, tools), so that a build can say
what changed since the last one (``changes``): a fresh clone whose committed stamp predates a
commit to ``matrix/`` rebuilds, and says it was that code, not new measurements. The stamp
depends on nothing a clone changes: file contents and paths relative to their roots, never
modification times or absolute paths (``tests/test_report_stamp.py`` holds it).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core import REPO_ROOT
from matrix.report.team import suite_folder
from matrix.results import atomic_write_text

STAMP_NAME = ".build-stamp.json"
FORMAT = 2  # 2: per-part and per-file digests (``parts``, ``files``)
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
    inputs_read: Inputs | None = None


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


@dataclass(frozen=True)
class Inputs:
    """What a build reads: each part's files (name -> sha256; a name is relative to the part's
    root, prefixed by the root's label where a part has several), and the values read whole."""

    files: dict[str, dict[str, str]]
    values: dict[str, str]

    @property
    def digest(self) -> str:
        """One sha256 over all of it (the stamp's ``inputs``)."""
        h = hashlib.sha256(f"format {FORMAT}".encode())
        for part, files in sorted(self.files.items()):
            h.update(f"\0part {part}".encode())
            for name, sha in sorted(files.items()):
                h.update(f"\0{name}\0{sha}".encode())
        for key, value in sorted(self.values.items()):
            h.update(f"\0{key} {value}".encode())
        return h.hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, "values": self.values}

    @classmethod
    def from_json(cls, d: Any) -> Inputs:
        files = {str(k): {str(n): str(s) for n, s in v.items()} for k, v in d["files"].items()}
        return cls(files, {str(k): str(v) for k, v in d["values"].items()})


def _tree(label: str, root: Path, suffixes: tuple[str, ...] | None = None) -> dict[str, str]:
    """Each file under ``root`` (or ``root`` itself) -> its sha256, named ``label/rel``; an
    absent root is one entry, so that a folder that appears or goes counts as a change."""
    if not (root.is_dir() or root.is_file()):
        return {f"{label}/": "absent"}
    out = {}
    for p in _files(root, suffixes):
        rel = p.relative_to(root).as_posix() if root.is_dir() else p.name
        out[f"{label}/{rel}"] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def read_inputs(
    *,
    raw_dir: Path,
    bench_dir: Path,
    probes_dir: Path,
    accepted_path: Path,
    freshness: str,
    suites: Sequence[str],
    code_roots: Sequence[Path] | None = None,
) -> Inputs:
    """Everything a build reads (see the module's docstring), part by part."""
    import jinja2  # the pages' renderer: another version may write other bytes

    python = "{}.{}".format(*sys.version_info[:2])
    # The pages' verdict is the gate's on this project's own code (kernels/, compat/).
    default = [PACKAGE_DIR, REPO_ROOT / "kernels", REPO_ROOT / "compat"]
    roots = code_roots if code_roots is not None else default
    code: dict[str, str] = {}
    for root in roots:
        code.update(_tree(Path(root).name, Path(root)))
    # The team gate profiles the suites' Python sources and links their lines.
    team: dict[str, str] = {}
    for suite in suites:
        team.update(_tree(suite, suite_folder(suite), (".py",)))
    files = {
        "code": code,
        "raw": _tree("raw", Path(raw_dir)),
        "bench": _tree("bench", Path(bench_dir)),
        "probes": _tree("probes", Path(probes_dir)),
        "accepted": _tree("accepted", Path(accepted_path)),
        "suites": team,
    }
    values = {"tools": f"python {python}, jinja2 {jinja2.__version__}", "freshness": freshness}
    return Inputs(files, values)


def inputs_digest(**kwargs: Any) -> str:
    """One sha256 over everything a build reads (``read_inputs``'s arguments)."""
    return read_inputs(**kwargs).digest


# How ``changes`` names each part.
PART_NAMES = {
    "code": "the code that builds the pages",
    "raw": "the raw files",
    "bench": "the bench files",
    "probes": "the probe sources",
    "accepted": "the acknowledgements",
    "suites": "the team suites",
    "tools": "the Python or Jinja2 version",
    "freshness": "the commit the footers name",
}
NAMED_FILES = 3


def _brief(value: object) -> str:
    """A value as a rebuild's reason names it: a footer's commit by its hash, anything else cut
    to one short line (a whole Freshness record ran to thousands of characters)."""
    text = str(value)
    commit = re.search(r"commit='([0-9a-f]+)'", text)
    if commit:
        return commit.group(1)
    return text if len(text) <= 80 else text[:77] + "..."


def changes(before: Stamp | None, now: Inputs) -> str:
    """What changed between the last build's inputs and ``now``, in words: each part that
    changed, with its first few changed files ("" where nothing did)."""
    if before is None or before.inputs_read is None:
        return f"no usable build stamp ({STAMP_NAME}: missing, unreadable or an older format)"
    old = before.inputs_read
    said = []
    for part in sorted({*old.files, *now.files}):
        a, b = old.files.get(part, {}), now.files.get(part, {})
        changed = sorted(n for n in {*a, *b} if a.get(n) != b.get(n))
        if changed:
            shown = ", ".join(changed[:NAMED_FILES])
            more = f" and {len(changed) - NAMED_FILES} more" if len(changed) > NAMED_FILES else ""
            said.append(f"{PART_NAMES.get(part, part)} ({shown}{more})")
    for key in sorted({*old.values, *now.values}):
        if old.values.get(key) != now.values.get(key):
            was, now_is = old.values.get(key), now.values.get(key)
            said.append(f"{PART_NAMES.get(key, key)} ({_brief(was)} -> {_brief(now_is)})")
    return "; ".join(said)


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
            Inputs.from_json(d["read"]),
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
    inputs: Inputs,
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
        "why": "python -m matrix report skips a build whose inputs and outputs are as here",
        "inputs": inputs.digest,
        "suites": list(suites),
        "runs": runs,
        "claims_error": claims_error,
        "outputs": dict(sorted(outputs.items())),
        "read": inputs.to_json(),
    }
    atomic_write_text(out_dir / STAMP_NAME, json.dumps(doc, indent=1) + "\n")
