"""Raw files on disk: atomic writes, gzip, the names of cells, partial files and the
readers of a file, a folder or a merged ``matrix.json``, each bounded and naming what it
cannot read."""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from matrix.cli import named
from matrix.core import Release, ReleaseError
from matrix.results.model import Run, SchemaError
from matrix.results.schema import document, parse
from matrix.results.text import dumps, dumps_merged

# A raw file's name ends so: one cell's JSON, gzip-compressed (byte for byte the same for the
# same runs: no time stamp or name in the gzip header). ``LEGACY_SUFFIX`` files, plain JSON from
# before, are still read everywhere; the matrix converts one when it comes to its cell.
RAW_SUFFIX = ".json.gz"
LEGACY_SUFFIX = ".json"
GZIP_MAGIC = b"\x1f\x8b"
# Limits on what a results file may hold (docs/raw-files.md): the largest committed cell is
# 1.6 MB of JSON with 229 results, the merged matrix.json 17 MB; a file past a limit is named
# and not read (a folder's reader then cannot say SAFE), never decompressed or parsed whole.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # a document's JSON, after gzip
# Documents the tools write beside raw files that are no cell: the merged matrix and the
# gate's verdict. A folder reader never takes them for a raw file.
CELL_NAME_PREFIX = "triton-"  # how matrix.core.run_id spells every cell's id
NOT_CELLS = frozenset({"matrix.json", "gate.json"})


def _umask() -> int:
    """The process umask, read without changing it (``os.umask`` sets it: not thread-safe)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old content or the new, never a part.

    The file gets the mode a plain ``open`` would give (0666 less the umask). A failure (disk
    full) leaves the old file as it was.
    """
    # A lone surrogate (an undecodable byte a probe reported) is written escaped (``\udcff``):
    # one byte must not stop a page from being written.
    atomic_write_bytes(path, text.encode("utf-8", errors="backslashreplace"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """``atomic_write_text`` for bytes (a gzip-compressed raw file)."""
    path = Path(path)
    with named(path):  # a write to a full disk names no file: this one is meant
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            # mkstemp creates 0600; results and pages are published files, readable as any.
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def is_gzip_name(path: str | os.PathLike[str]) -> bool:
    """Whether a raw file (or its ``.partial``) at ``path`` is written gzip-compressed."""
    return Path(path).name.removesuffix(".partial").endswith(".gz")


def compress(text: str, level: int = 9) -> bytes:
    """``text`` gzip-compressed, the same bytes for the same text (mtime 0, no file name)."""
    data = text.encode("utf-8", errors="backslashreplace")
    return gzip.compress(data, compresslevel=level, mtime=0)


def write_raw(run: Run, path: str | os.PathLike[str], *, partial: bool = False) -> None:
    """Write one cell's raw file atomically: gzip-compressed where the name ends in ``.gz``
    (``RAW_SUFFIX``, also before ``.partial``), plain JSON otherwise. ``partial``: an
    unfinished cell's file, rewritten after every probe, in the fast form (one line, light
    compression); the complete cell is written in the committed form."""
    text = dumps(document([run]), compact=partial)
    if is_gzip_name(path):
        atomic_write_bytes(path, compress(text, level=1 if partial else 9))
    else:
        atomic_write_text(path, text)


def read_raw(path: str | os.PathLike[str]) -> Run:
    """Read one cell's raw file; raises SchemaError (naming the file) if it is not one run."""
    runs = parse(read_json(path), str(path))
    if len(runs) != 1:
        raise SchemaError(f"{path}: a raw file holds exactly one run, found {len(runs)}")
    return runs[0]


def raw_name(run_id: str) -> str:
    """The file name of run ``run_id``'s raw file."""
    return run_id + RAW_SUFFIX


def run_id_of(path: str | os.PathLike[str]) -> str | None:
    """The run id a raw file's name gives (``X.json.gz`` or a legacy ``X.json``), else None."""
    name = Path(path).name
    for suffix in (RAW_SUFFIX, LEGACY_SUFFIX):
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return None


def release_named(path: str | os.PathLike[str]) -> Release | None:
    """The Triton release a raw file's name spells (``triton-3.9.0-numpy-...``), or None for a
    name that spells no cell. Only a name: ``read_folder`` checks it against the content."""
    run_id = run_id_of(path) or ""
    if not run_id.startswith(CELL_NAME_PREFIX):
        return None
    try:
        return Release.parse(run_id[len(CELL_NAME_PREFIX) :].split("-", 1)[0])
    except ReleaseError:
        return None


def raw_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Every raw file in ``folder``, sorted by name: ``*.json.gz`` and legacy ``*.json`` alike
    (never a ``.partial``, an ``.unreadable-...`` file moved aside, a hidden temporary, or a
    document of ``NOT_CELLS``). Entries named like a raw file that are no regular file (a
    dangling symlink, a symlink loop, a folder) are listed too: reading one fails naming it,
    so that a cell that is missing is never skipped without a word."""
    folder = Path(folder)
    found = [*folder.glob("*" + RAW_SUFFIX), *folder.glob("*" + LEGACY_SUFFIX)]
    return sorted(p for p in found if not p.name.startswith(".") and p.name not in NOT_CELLS)


def partial_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Every interrupted cell's file in ``folder`` (``partial_path`` of a raw file)."""
    folder = Path(folder)
    return sorted(
        {*folder.glob(f"*{RAW_SUFFIX}.partial"), *folder.glob(f"*{LEGACY_SUFFIX}.partial")}
    )


def partial_path(out: str | os.PathLike[str]) -> Path:
    """Where the runner keeps an unfinished cell: beside ``out``, renamed onto it when complete,
    so that a redo that dies (disk full, a kill) never replaces a complete raw file. Not a
    ``*.json`` name: folder readers do not take it for a cell."""
    out = Path(out)
    return out.with_name(out.name + ".partial")


def move_aside(path: str | os.PathLike[str], why: str = "unreadable") -> Path:
    """Rename a raw file that cannot be used out of the way (kept, never deleted); the new
    name does not end in ``.json``, so no reader takes it for a cell again."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.{why}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{why}-{stamp}-{n}")
    os.replace(path, target)
    return target


def read_folder(path: str | os.PathLike[str]) -> tuple[list[Run], list[str]]:
    """The runs of every readable raw file in a folder, and one message per file that is not
    (naming it). A folder with no raw file at all is a SchemaError: nothing to report on."""
    path = Path(path)
    files = raw_files(path)
    if not files:
        raise SchemaError(
            f"{path}: no raw files (*{RAW_SUFFIX} or *{LEGACY_SUFFIX}) in this folder; run the "
            "matrix first"
        )
    runs, bad = [], []
    for p in files:
        try:
            run = read_raw(p)
        except SchemaError as e:
            bad.append(str(e) if str(p) in str(e) else f"{p}: {e}")
            continue
        named_id = run_id_of(p) or ""
        named = release_named(p)
        if (named is not None and named != run.release) or (
            "-numpy-" in named_id and named_id != run.id
        ):
            # A cell saved under another cell's name (a candidate's file copied over the
            # baseline's): which side it is cannot be told, so neither is believed. (A name
            # that spells no release, or only the release, claims no more than it says.)
            bad.append(
                f"{p}: the name says run {named_id!r} but the file holds run {run.id!r} "
                f"(triton {run.triton}); name and content disagree"
            )
            continue
        runs.append(run)
    if not runs:
        raise SchemaError(f"{path}: no raw file here can be read: " + "; ".join(bad))
    return runs, bad


def read_runs(path: str | os.PathLike[str]) -> list[Run]:
    """Runs from a merged ``matrix.json``, a single raw file, or a folder of raw files.

    In a folder, a raw file that cannot be read is named on stderr and left out; the others
    are read."""
    path = Path(path)
    if path.is_dir():
        runs, bad = read_folder(path)
        for message in bad:
            print(f"matrix: skipped a raw file that cannot be read: {message}", file=sys.stderr)
        return runs
    return parse(read_json(path), str(path))


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document in a results file, plain or gzip-compressed (told by its first bytes,
    whatever the name says); a SchemaError naming the file if it is neither."""
    path = Path(path)
    try:
        data = _read_bounded(path)
        return json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as e:
        raise SchemaError(f"{path}: not JSON ({e})") from e
    except UnicodeDecodeError as e:
        raise SchemaError(f"{path}: not UTF-8 text ({e})") from e
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise SchemaError(f"{path}: a damaged gzip file ({e})") from e
    except OSError as e:
        raise SchemaError(f"{path}: cannot read ({e.strerror or e})") from e


def _read_bounded(path: Path) -> bytes:
    """The JSON bytes of a results file, at most ``MAX_DOCUMENT_BYTES`` after gzip; a
    SchemaError naming it for anything that is not a regular file (a FIFO would block, a
    device never ends) or past the limit (a gzip bomb is stopped at the limit, not inflated)."""
    try:
        mode = path.stat().st_mode  # before opening: opening a FIFO nobody writes would block
    except FileNotFoundError:
        if path.is_symlink():  # a cache volume not mounted
            target = os.readlink(path)
            missing = f"{path}: a symlink to {target!r}, which is missing; not read"
            raise SchemaError(missing) from None
        raise
    if not stat.S_ISREG(mode):
        raise SchemaError(f"{path}: not a regular file ({_kind(mode)}); not read")
    with open(path, "rb") as f:
        data = f.read(MAX_DOCUMENT_BYTES + 1)
    if data[:2] == GZIP_MAGIC:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as z:
            data = z.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise SchemaError(
            f"{path}: more than {MAX_DOCUMENT_BYTES // 2**20} MiB of JSON (the limit on a results "
            "document, docs/raw-files.md); not read"
        )
    return data


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"),
    ):  # fmt: skip
        if test(mode):
            return name
    return "not a plain file"


def merge(raw_dir: str | os.PathLike[str], out: str | os.PathLike[str]) -> list[Run]:
    """Merge every raw file in ``raw_dir`` into one ``matrix.json`` at ``out`` (atomically)."""
    runs = read_runs(raw_dir)
    ids = [r.id for r in runs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SchemaError(f"{raw_dir}: run ids must be unique, repeated: {dupes}")
    atomic_write_text(out, dumps_merged(document(runs)))
    return runs
