"""The documentation points at things that exist (issue 43: six stale references in docs/, and
one documented ``python -m matrix...`` command that did not exist).

Checked in README.md and docs/*.md: every relative Markdown link, every repository path
written in backticks or in a code block (``matrix/gate/verdict.py``), and every
``python -m matrix...`` command: ``python -m matrix COMMAND`` must name a command of the tree
(``matrix.commands``), ``python -m matrix.X`` a runnable module that is not a deprecated alias.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from matrix.commands import BY_NAME

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"(?<![\w\]])\[[^\]]*\]\(([^)\s]+)\)")
# A path in this repository: a top-level folder of ours, then at least one more part.
PATH = re.compile(
    r"(?<![\w./-])((?:matrix|docs|tests|kernels|compat|notes|\.ci|\.github)/[\w.+/-]*[\w+])"
)
COMMAND = re.compile(r"python -m (matrix[\w.]*)(?:[ \t]+([a-z][\w-]*))?")
# Paths that name a kind of file, not one file: a placeholder, a glob, a generated folder.
PLACEHOLDER = re.compile(r"[*<>{}]|\b[A-Z][A-Z_]*\b|\.\.\.")


def _paths_in(text: str) -> list[str]:
    """Repository paths in backticks or in fenced code blocks."""
    spans = re.findall(r"`([^`\n]+)`", text)
    spans += re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    return [m for span in spans for m in PATH.findall(span)]


def _runnable(module: str) -> bool:
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return False
    if spec is None or spec.origin is None:
        return False
    if spec.submodule_search_locations is not None:  # a package: needs its __main__
        return (Path(spec.origin).parent / "__main__.py").is_file()
    return '__name__ == "__main__"' in Path(spec.origin).read_text(encoding="utf-8")


def _deprecated(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    origin = Path(spec.origin)
    main = origin.parent / "__main__.py" if spec.submodule_search_locations else origin
    return "cli.deprecated(" in main.read_text(encoding="utf-8")


def problems(doc: Path, root: Path = ROOT) -> list[str]:
    """What ``doc`` references that does not exist, one line each."""
    text = doc.read_text(encoding="utf-8")
    where = doc.relative_to(root) if doc.is_relative_to(root) else doc
    found = []
    for target in LINK.findall(re.sub(r"`[^`\n]*`", "", text)):  # code is no link
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor of this page
        path = target.split("#", 1)[0]
        if path and not (doc.parent / path).exists():
            found.append(f"{where}: link to {target}: no such file")
    for path in _paths_in(text):
        if not PLACEHOLDER.search(path) and not (root / path).exists():
            found.append(f"{where}: `{path}`: no such file or folder")
    for module, word in COMMAND.findall(text):
        if module == "matrix":
            if word and word not in BY_NAME:
                found.append(f"{where}: python -m matrix {word}: no such command (python -m "
                              f"matrix --help lists them)")  # fmt: skip
        elif not _runnable(module):
            found.append(f"{where}: python -m {module}: no such runnable module")
        elif _deprecated(module):
            found.append(f"{where}: python -m {module}: a deprecated name (python -m matrix "
                         "--help lists the commands)")  # fmt: skip
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_reference_in_the_docs_exists(doc: Path) -> None:
    assert problems(doc) == []


def test_the_check_finds_a_stale_path_a_stale_link_and_a_missing_command(tmp_path: Path) -> None:
    doc = tmp_path / "page.md"
    doc.write_text(
        "See [the gate](gone.md) and `matrix/no_such.py`; run `python -m matrix gat` or\n"
        "`python -m matrix.measure.verify` or `python -m matrix.verify`.\n"
        "```\nmatrix/stale/thing.py   a tree line\n```\n"
        "Fine: [here](page.md#top), `matrix/commands.py`, `matrix/probes/<name>.py`, "
        "`python -m matrix gate --help`, [web](https://example.org/x).\n",
        encoding="utf-8",
    )
    assert problems(doc) == [
        f"{doc}: link to gone.md: no such file",
        f"{doc}: `matrix/no_such.py`: no such file or folder",
        f"{doc}: `matrix/stale/thing.py`: no such file or folder",
        f"{doc}: python -m matrix gat: no such command (python -m matrix --help lists them)",
        f"{doc}: python -m matrix.measure.verify: no such runnable module",
        f"{doc}: python -m matrix.verify: a deprecated name (python -m matrix --help lists the "
        "commands)",
    ]
