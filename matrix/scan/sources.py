"""The files a scan reads: which ones (folders walked, default excludes), how they are decoded
(PEP 263 coding lines, notebooks' code cells), and the cheap test that spares the parser files
that cannot reach Triton."""

from __future__ import annotations

import fnmatch
import functools
import io
import json
import re
import stat
import tokenize
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from matrix.scan.rules import DEFAULT_EXCLUDE

SUFFIXES = (".py", ".ipynb")
# Limits on one scanned file (docs/scanner.md): past one the file is skipped, named, and the
# gate cannot say SAFE for it; the other files are scanned. The largest source of five Triton
# kernel libraries is 167 kB and no AST of theirs is deeper than 26 levels; a 2 MB generated
# file took the scanner about 2 minutes, and a tree nested 1,200 levels deep overflows the
# recursion of Python's own parser and of the scanner's walks.
MAX_READ_BYTES = 32 * 1024 * 1024  # any file read (most are only searched for "triton")
MAX_PARSED_BYTES = 1024 * 1024  # a file parsed (one that may reach Triton)
MAX_AST_DEPTH = 200
# A notebook line that is IPython, not Python (%magic, !shell, ?help): blanked, so that line
# numbers within the cells stay the notebook's.
IPYTHON_LINE = re.compile(r"^\s*[%!?]")


def excluded(path: Path, patterns: Sequence[str]) -> bool:
    """Whether ``path`` or one of its folders matches an ``--exclude`` glob."""
    posix = path.as_posix()
    return any(
        fnmatch.fnmatch(posix, pat) or any(fnmatch.fnmatch(part, pat) for part in path.parts)
        for pat in patterns
    )


def iter_python_files(
    paths: Iterable[str | Path],
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    left_out: list[str] | None = None,
) -> Iterator[Path]:
    """Each ``.py`` and ``.ipynb`` file under ``paths`` (files as given, folders recursively,
    sorted), minus the excluded ones (a folder's own path given explicitly is never excluded by
    the defaults). Files the default excludes drop are appended to ``left_out``.

    Raises FileNotFoundError naming the path when one does not exist.
    """
    defaults = [e for e in exclude if e in DEFAULT_EXCLUDE]
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(q for s in SUFFIXES for q in p.rglob(f"*{s}"))
            for q in found:
                # a folder named x.py is walked into; anything else (a dangling symlink, a
                # symlink loop, a FIFO) is yielded, and reading it fails naming it
                if q.is_dir():
                    continue
                rel = q.relative_to(p)
                if not excluded(rel, exclude):
                    yield q
                elif left_out is not None and excluded(rel, defaults):
                    left_out.append(str(q))
        elif p.exists() or p.is_symlink():
            if not excluded(p, [e for e in exclude if e not in DEFAULT_EXCLUDE]):
                yield p
        else:
            raise FileNotFoundError(f"scan path {str(p)!r}: no such file or folder")


def decode_python(data: bytes) -> str:
    """The text of a Python file in the encoding it declares (PEP 263; UTF-8 by default).
    Raises UnicodeDecodeError, or SyntaxError for an unknown encoding name."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:  # bytes in the first two lines that UTF-8 cannot read
        raise ValueError(f"not decodable: {e}") from e
    return data.decode(encoding)


def notebook_source(data: bytes, path: Path) -> str:
    """A notebook's code cells as one module, cell after cell; IPython-only lines blanked.
    Raises ValueError naming the file when it is no notebook."""
    try:
        doc = json.loads(data.decode("utf-8"))
        cells = doc["cells"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"not a Jupyter notebook ({type(e).__name__}: {e})") from e
    lines: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell.get("source", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        lines += ["" if IPYTHON_LINE.match(ln) else ln for ln in text.splitlines()]
        lines.append("")
    return "\n".join(lines) + "\n"


def read_source(path: Path) -> tuple[bytes, str]:
    """(raw bytes, source text) of a ``.py`` or ``.ipynb`` file, decoded as Python reads it
    (PEP 263 coding line, UTF-8 BOM): the one reader of a team's sources (the scanner, the
    gate's usage profile). Raises OSError, UnicodeDecodeError, or ValueError naming why for a
    file that is not a regular file or is larger than ``MAX_READ_BYTES``."""
    data = read_bounded(path, MAX_READ_BYTES)
    if path.suffix == ".ipynb":
        return data, notebook_source(data, path)
    return data, decode_python(data)


def read_bounded(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most ``limit``; ValueError naming it otherwise (checked
    before opening: a FIFO nobody writes would block the read)."""
    if path.is_symlink() and not path.exists():
        raise ValueError(f"a symlink to {str(path.readlink())!r}, which does not exist (or loops)")
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise ValueError("not a regular file (a FIFO, device or socket)")
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit // 1024} KiB, the limit on a scanned file")
    return data


_PUNCTUATION = b"(),;\\"


def import_words(data: bytes) -> frozenset[bytes]:
    """The last parts of the module names beside each ``import`` of a file (``from a.utils
    import x``, ``import a.utils``: ``utils``; ``from . import utils``: ``utils``). Read with
    ``bytes.find``, not a regular expression: one that starts with a word class tries every
    position of a 47 MB tree."""
    out: set[bytes] = set()
    i = data.find(b"import")
    while i >= 0:
        before = data[max(0, i - 120) : i]
        if before.endswith(b" "):
            parts = before.split()
            if parts:
                out.add(parts[-1].strip(_PUNCTUATION).rsplit(b".", 1)[-1])
        after = data[i + 6 : i + 126].split(None, 1)
        if after:
            out.add(after[0].split(b",")[0].strip(_PUNCTUATION).rsplit(b".", 1)[-1])
        i = data.find(b"import", i + 6)
    out.discard(b"")
    return frozenset(out)


def may_reach_triton(
    data: bytes,
    carriers: Mapping[bytes, Iterable[bytes]],
    words: frozenset[bytes] | None = None,
) -> bool:
    """Whether a file could use Triton: it spells ``triton``, or imports a module of the tree
    that binds a Triton name, and spells that name (``carriers``: {the last part of the
    module's name, as an import spells it: ``from .utils import tl``: {b"tl"}}; ``*`` for a
    star re-export). A file that does neither cannot name a Triton object: it is not parsed.
    ``words``: the file's ``import_words``, for a caller that asks about one file repeatedly."""
    if b"triton" in data:
        return True
    if b"import" not in data:
        return False
    words = import_words(data) if words is None else words
    return any(
        n == b"*" or _spells(data, n) for tail in words & carriers.keys() for n in carriers[tail]
    )


@functools.lru_cache(maxsize=4096)
def _word(name: bytes) -> re.Pattern[bytes]:
    return re.compile(rb"\b" + re.escape(name) + rb"\b")


def _spells(data: bytes, name: bytes) -> bool:
    """``name`` as a whole word: a carried ``tl`` is not the "tl" of "title" (a substring test
    pulled 1,296 of unsloth's 1,817 files into the question; the word test runs only on the
    files the cheap one lets through)."""
    return name in data and _word(name).search(data) is not None
