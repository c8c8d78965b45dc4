"""The results contract: one raw file per matrix cell, merged into ``reports/matrix.json``.

The shape is the project's results contract (this docstring is where it is written down)::

    {"schema": 2, "runs": [{"id": ..., "env": {...}, "install": {...}, "results": [...]}]}

A raw file (``reports/raw/<run-id>.json.gz``) has the same shape with exactly one run, stored
gzip-compressed (``RAW_SUFFIX``): the fingerprint's tables make a cell's JSON about 1 MB, which
gzip brings to about 60 kB, and the committed tree must stay small (the report's 60 MB limit,
the device's carry). A plain ``<run-id>.json`` (written before) is read as well; ``python -m
matrix.measure.migrate --gzip DIR`` converts a folder. Every write is
atomic (temporary file in the same folder, then ``os.replace``), so a crash or a kill never leaves a
half-written file behind: readers see the old file or the new one. Files get the mode the umask
gives (not ``mkstemp``'s 0600).

Nothing a probe reports is lost on the way to disk: a detail with lone surrogates is written
with JSON escapes (``\\udc80``), bytes as ``{"$bytes_b64": ...}`` (``to_json``). A folder reader
(``read_folder``) names each raw file it cannot read and goes on with the others; the matrix
moves such a file aside (``move_aside``: kept, never deleted) and redoes its cell.

Every read checks the document against ``matrix/data/raw.schema.json`` (``validate``): a field
of the wrong type (``"complete": "false"``, ``env.triton: null``) is a SchemaError that names
the file and the field's path, never believed. A non-finite number is written as the string
``"nan"`` (undefined: an error measured over an output with unwritten elements), ``"inf"`` or
``"-inf"`` (overflowed), since a bare ``NaN`` is not JSON; ``number`` reads both spellings.

Schema 2 renamed a status that said two things: schema 1's ``dot_acc_out_dtype`` ``error`` meant
"the release refuses the code" (now ``rejected``), while ``error`` everywhere else means "the
probe broke". A schema 1 document is still read: ``parse`` converts it in memory and warns on
stderr, naming the file (``python -m matrix.measure.migrate FILE...`` rewrites it on disk).

>>> r = Result(probe="splitk", backend="interpret", target=None, status="pass")
>>> run = Run(id="triton-3.9.0-numpy-2.4.6", env={"triton": "3.9.0"}, results=[r])
>>> Run.from_dict(run.to_dict()) == run
True
"""

from __future__ import annotations

import base64
import functools
import gzip
import io
import json
import math
import os
import stat
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from matrix.cli import named
from matrix.core import BACKENDS, DATA_DIR, InputError, Release, ReleaseError

SCHEMA = 2
# A raw file's name ends so: one cell's JSON, gzip-compressed (byte for byte the same for the
# same runs: no time stamp or name in the gzip header). ``LEGACY_SUFFIX`` files, plain JSON from
# before, are still read everywhere; the matrix converts one when it comes to its cell.
RAW_SUFFIX = ".json.gz"
LEGACY_SUFFIX = ".json"
GZIP_MAGIC = b"\x1f\x8b"
# The shape every reader checks (JSON Schema): field types, required keys, the "nan" strings.
SCHEMA_PATH = DATA_DIR / "raw.schema.json"
# What JSON has no number for is written as these strings (``finite_json``); readers take them
# and a bare NaN/Infinity of older files alike (``number``).
NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
# Limits on what a results file may hold (docs/raw-files.md): the largest committed cell is
# 1.6 MB of JSON with 229 results, the merged matrix.json 17 MB; a file past a limit is named
# and not read (a folder's reader then cannot say SAFE), never decompressed or parsed whole.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # a document's JSON, after gzip
# results of one run: the report writes a page per probe (5,000 results: 5,038 pages in 327 s
# on a busy 2-core machine; 100,000 never finished)
MAX_RESULTS = 5_000
MAX_LIST_ENTRIES = 20_000  # each other list a run keeps (``LISTS_BOUNDED``): a team's tests
# Documents the tools write beside raw files that are no cell: the merged matrix and the
# gate's verdict. A folder reader never takes them for a raw file.
CELL_NAME_PREFIX = "triton-"  # how matrix.core.run_id spells every cell's id
NOT_CELLS = frozenset({"matrix.json", "gate.json"})

# Schema 1 -> 2: statuses that meant "the release refuses the code", by probe. A schema 1
# ``error`` whose detail says the probe itself failed (it could not read the IR, or an
# unexpected exception escaped with its traceback) stays ``error``.
_RENAMED_IN_2: dict[tuple[object, object], str] = {("dot_acc_out_dtype", "error"): "rejected"}
_STILL_BROKEN = ("could not read", "Traceback")


# Lists a run keeps beside its results, bounded by ``MAX_LIST_ENTRIES``.
LISTS_BOUNDED = ("launches", "tests", "kernel_compiles")


class SchemaError(InputError):
    """A results document lacks the shape this module promises; the message names the field."""


class NoValidator(InputError):
    """This Python can check no raw file against the schema: neither fastjsonschema nor
    jsonschema is installed. Not a ``SchemaError``: it is about this Python, not one file, so
    a folder's reader says it once (its first read) instead of once per file."""


@dataclass(frozen=True)
class Result:
    """One observation: what ``probe`` saw on ``backend`` (for ``target``, where one applies)."""

    probe: str
    backend: str
    target: str | None
    status: str
    detail: str = ""
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, str, str | None]:
        """Identifies the row of the matrix this result belongs to."""
        return (self.probe, self.backend, self.target)

    @property
    def task(self) -> tuple[str, str, str | None]:
        """The task this result came from: a row ``fp.binary.add`` belongs to the task ``fp``."""
        return (self.probe.split(".", 1)[0], self.backend, self.target)

    @property
    def is_row(self) -> bool:
        """One of a task's many rows (``fp.binary.add``), not the task's own result."""
        return self.key != self.task

    def to_dict(self) -> dict[str, Any]:
        # Not asdict: its deep copy of ``data`` was half the runner's CPU (a cell's document is
        # written after every probe); this dict is only ever encoded.
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "result") -> Result:
        _require(d, where, {"probe": str, "backend": str, "status": str})
        if d.get("target") is not None and not isinstance(d["target"], str):
            raise SchemaError(f"{where}.target: expected a string or null, got {d['target']!r}")
        if d["backend"] not in BACKENDS:
            raise SchemaError(f"{where}.backend: expected one of {BACKENDS}, got {d['backend']!r}")
        return cls(
            probe=d["probe"],
            backend=d["backend"],
            target=d.get("target"),
            status=d["status"],
            detail=str(d.get("detail", "")),
            seconds=number(d.get("seconds", 0.0)),
            data=dict(d.get("data") or {}),
        )


@dataclass
class Run:
    """One matrix cell: a Triton release (and numpy, for interpreter cells) in its own env."""

    id: str
    env: dict[str, Any] = field(default_factory=dict)
    install: dict[str, Any] = field(
        default_factory=lambda: {"status": "ok", "seconds": 0.0, "detail": ""}
    )
    results: list[Result] = field(default_factory=list)
    # Optional: per-test outcomes of a user's suite (--tests), cell timing, completion flag.
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "env": self.env,
            "install": self.install,
            "results": [r.to_dict() for r in self.results],
        }
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "run") -> Run:
        if not isinstance(d, dict):
            raise SchemaError(f"{where}: expected an object, got {type(d).__name__}")
        _require(d, where, {"id": str, "env": dict, "install": dict, "results": list})
        for key in ("results", *LISTS_BOUNDED):
            n = len(d[key]) if isinstance(d.get(key), list) else 0
            limit = MAX_RESULTS if key == "results" else MAX_LIST_ENTRIES
            if n > limit:
                raise SchemaError(
                    f"{where}.{key}: {n} entries, more than the {limit} one run may hold "
                    "(docs/raw-files.md); not read"
                )
        results = []
        for i, r in enumerate(d["results"]):
            at = f"{where}.results[{i}]"
            if not isinstance(r, dict):
                raise SchemaError(f"{at}: expected an object, got {type(r).__name__}")
            try:
                results.append(Result.from_dict(r, at))
            except SchemaError:
                raise
            except (TypeError, ValueError) as e:  # a field of the wrong type (seconds: "x")
                raise SchemaError(f"{at}: a field has the wrong type ({e})") from None
        if d["env"].get("triton") is not None:
            try:
                Release.parse(d["env"]["triton"], f"{where}.env.triton")
            except ReleaseError as e:
                raise SchemaError(str(e)) from None
        known = {"id", "env", "install", "results"}
        return cls(
            id=d["id"],
            env=dict(d["env"]),
            install=dict(d["install"]),
            results=results,
            extra={k: v for k, v in d.items() if k not in known},
        )

    @property
    def triton(self) -> str | None:
        """The release as recorded (text); ``release`` is the parsed value."""
        return self.env.get("triton")

    @property
    def release(self) -> Release | None:
        """The Triton release of this cell, parsed (checked when the run was read)."""
        text = self.env.get("triton")
        return None if text is None else Release.parse(text, f"run {self.id!r}: env.triton")

    @property
    def complete(self) -> bool:
        """False for a cell the runner has not finished (killed mid-run); reruns redo it."""
        return bool(self.extra.get("complete", True))


def _require(d: dict[str, Any], where: str, fields: dict[str, type]) -> None:
    for name, typ in fields.items():
        if name not in d:
            raise SchemaError(f"{where}.{name}: missing")
        if not isinstance(d[name], typ):
            raise SchemaError(
                f"{where}.{name}: expected {typ.__name__}, got {type(d[name]).__name__}"
            )


# The most of one detail a raw file keeps (a probe may print 100 MB), and the most of any text
# a page shows (the rest stays in the raw file).
DETAIL_CAP = 64 * 1024
PAGE_TEXT_CAP = 4 * 1024
CUT_MARK = "[... cut: "


def cap_text(text: str, limit: int, where: str = "") -> str:
    """``text`` if it is at most ``limit`` characters; else its head and tail around a note of
    the full size (and, given ``where``, where the whole text is). Cutting an already cut text
    keeps the first note's size.

    >>> cap_text("a" * 50 + "b" * 50, 60)
    'aaaaaaaaaaaa[... cut: 100 characters in all ...]bbbbbbbbbbbb'
    """
    if len(text) <= limit:
        return text
    total = str(len(text))
    if CUT_MARK in text:  # already cut once: say the original size, not this one's
        size = text.partition(CUT_MARK)[2].partition(" characters in all")[0]
        total = size if size.isdigit() else total
    note = (
        f"{CUT_MARK}{total} characters in all"
        + (f"; the whole text is in {where}" if where else "")
        + " ...]"
    )
    keep = max(limit - len(note), 2) // 2
    return text[:keep] + note + text[-keep:]


def number(value: Any) -> float:
    """A recorded number as a float: ``"nan"``, ``"inf"``, ``"-inf"`` (how raw files spell
    what JSON cannot) and a bare NaN/Infinity of an older file alike.

    >>> number("inf"), number(1), number(float("nan")) != number("nan")
    (inf, 1.0, True)
    """
    if isinstance(value, str) and value in NONFINITE:
        return NONFINITE[value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number or one of {sorted(NONFINITE)}, got {value!r}")
    return float(value)


def known_seconds(value: Any) -> float | None:
    """A recorded duration as seconds, or None where none is known: ``"nan"``, ``"inf"`` (valid
    in a raw file: docs/raw-files.md), a bare NaN, a negative or non-numeric value. Sums and
    charts of time leave such a value out; pages show it as unknown, never as a time.

    >>> known_seconds(1.5), known_seconds("nan"), known_seconds(float("inf")), known_seconds(None)
    (1.5, None, None, None)
    """
    try:
        seconds = number(value)
    except TypeError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


@functools.cache
def _validator() -> Callable[[Any], str | None]:
    """The schema check: a function giving None for a valid document, else ``path: what``.

    fastjsonschema compiles the schema to code (about 10 ms for a 1 MB raw file); jsonschema,
    the fallback where it is not installed, takes 20 times as long. With neither, nothing can
    be vouched for: ``NoValidator`` (raised again on every call: an exception is not cached)."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    fast = _fast_validator(schema)
    if fast is not None:
        return fast
    try:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import best_match
    except ImportError:
        raise NoValidator(
            f"raw files cannot be checked against matrix/data/{SCHEMA_PATH.name}: this Python "
            f"({sys.executable}) has neither fastjsonschema nor jsonschema; install this "
            "project's dependencies: pip install -e . (README, Gate your own kernels in CI)"
        ) from None
    validator = Draft202012Validator(schema)

    def slow(doc: Any) -> str | None:
        error = best_match(validator.iter_errors(doc))
        if error is None:
            return None
        return f"{_field_path(error.absolute_path)}: {error.message[:300]}"

    return slow


def _fast_validator(schema: dict[str, Any]) -> Callable[[Any], str | None] | None:
    """fastjsonschema's check of ``schema`` as ``_validator`` gives it; None where it is not
    installed."""
    try:
        import fastjsonschema
    except ImportError:
        return None
    check = fastjsonschema.compile(schema)

    def fast(doc: Any) -> str | None:
        try:
            check(doc)
        except fastjsonschema.JsonSchemaValueException as e:
            field = _field_path(e.path[1:])  # path[0] is fastjsonschema's "data"
            what = e.message.removeprefix(e.name or "").strip()
            return f"{field}: {what}, got {_short(e.value)}"
        return None

    return fast


def _field_path(parts: Iterable[Any]) -> str:
    """``runs[0].env.triton`` from a validator's path parts (``["runs", "0", "env", ...]``)."""
    text = ""
    for part in parts:
        if isinstance(part, int) or (isinstance(part, str) and part.isdigit()):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(the document)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + " ..."


def validate(doc: Any, where: str) -> None:
    """Raise SchemaError naming ``where``, the field and the rule, unless ``doc`` matches
    ``matrix/data/raw.schema.json``."""
    problem = _validator()(doc)
    if problem is not None:
        raise SchemaError(f"{where}: {problem} (matrix/data/{SCHEMA_PATH.name})")


def document(runs: Iterable[Run]) -> dict[str, Any]:
    """The JSON document for ``runs``, sorted by id so that the same runs give the same bytes."""
    return {"schema": SCHEMA, "runs": [r.to_dict() for r in sorted(runs, key=lambda r: r.id)]}


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A schema 1 document as schema 2 (a new dict; ``doc`` is left as it was)."""
    out = json.loads(json.dumps(doc))
    for run in out.get("runs") or []:
        for r in (run.get("results") or []) if isinstance(run, dict) else []:
            if not isinstance(r, dict):
                continue
            new = _RENAMED_IN_2.get((r.get("probe"), r.get("status")))
            if new and not str(r.get("detail", "")).startswith(_STILL_BROKEN):
                r["status"] = new
    out["schema"] = SCHEMA
    return out


def parse(doc: Any, where: str = "document") -> list[Run]:
    """Validate a results document and return its runs; a schema 1 one is upgraded, with a
    warning on stderr that names ``where``."""
    if not isinstance(doc, dict):
        raise SchemaError(f"{where}: expected an object, got {type(doc).__name__}")
    if doc.get("schema") == 1:
        print(
            f"matrix: {where}: results schema 1 (old), read as schema {SCHEMA}; rewrite it with "
            f"python -m matrix.measure.migrate {where}",
            file=sys.stderr,
        )
        doc = upgrade(doc)
    if doc.get("schema") != SCHEMA:
        raise SchemaError(f"{where}.schema: expected {SCHEMA} (or 1), got {doc.get('schema')!r}")
    runs = doc.get("runs")
    if not isinstance(runs, list):
        raise SchemaError(f"{where}.runs: expected a list")
    validate(doc, where)
    return [Run.from_dict(r, f"{where}.runs[{i}]") for i, r in enumerate(runs)]


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


def _json_default(value: Any) -> Any:
    """What JSON has no word for: bytes kept exactly (base64), anything else by its repr."""
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes_b64": base64.b64encode(bytes(value)).decode("ascii")}
    return {"$repr": repr(value)}


def to_json(value: Any, **kwargs: Any) -> str:
    """JSON text for ``value`` that loses nothing and always encodes as UTF-8.

    Text stays readable (``ensure_ascii=False``) unless it holds lone surrogates, which UTF-8
    cannot encode; then the whole text is written with ``\\uXXXX`` escapes, which JSON reads
    back to the same string.

    A shape JSON has no form for (a tuple as a key, a container holding itself) is written as
    the closest plain value (``_plain``) rather than lose the whole result.

    >>> json.loads(to_json({"d": "bad \\udc80", "b": b"\\xff"}))
    {'d': 'bad \\udc80', 'b': {'$bytes_b64': '/w=='}}
    >>> to_json({"cells": {(1, 2): "x"}})
    '{"cells": {"(1, 2)": "x"}}'
    >>> to_json({"rel_err": float("nan"), "worst": [float("inf"), -float("inf"), 1.5]})
    '{"rel_err": "nan", "worst": ["inf", "-inf", 1.5]}'
    """
    kwargs = {"default": _json_default, "allow_nan": False, **kwargs}
    try:
        text = json.dumps(value, ensure_ascii=False, **kwargs)
    except (TypeError, ValueError):  # a key JSON cannot hold, a cycle, a NaN or an infinity
        value = _plain(value, ())
        text = json.dumps(value, ensure_ascii=False, **kwargs)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, **kwargs)
    return text


def _plain(value: Any, seen: tuple[int, ...]) -> Any:
    """``value`` with every dict key a string (its repr where it is not one), every cycle cut
    at ``{"$repr": "<cycle>"}`` and every non-finite float spelled ``"nan"``, ``"inf"`` or
    ``"-inf"`` (a bare ``NaN`` is not JSON: ``JSON.parse`` rejects it, ``jq`` reads null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict | list | tuple):
        if id(value) in seen:
            return {"$repr": "<cycle>"}
        inner = (*seen, id(value))
        if isinstance(value, dict):
            return {
                k if isinstance(k, str) else repr(k): _plain(v, inner) for k, v in value.items()
            }
        return [_plain(v, inner) for v in value]
    return value


def dumps(doc: dict[str, Any], *, compact: bool = False) -> str:
    """The document's text: indented (the committed form), or ``compact`` on one line, which
    json encodes in C (an indent makes it fall back to Python: 10x slower on a cell of 5,000
    results) for the partial files a runner rewrites after every probe."""
    if compact:
        return to_json(doc, sort_keys=False) + "\n"
    return to_json(doc, indent=1, sort_keys=False) + "\n"


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


def dumps_merged(doc: dict[str, Any]) -> str:
    """``matrix.json``'s text: one run per line, no indentation inside a run. It stays plain
    JSON for any reader (``json.load``, ``jq``, a browser), and a third smaller than indented
    (17 MB, not 24 MB, for the committed 40 cells)."""
    runs = doc.get("runs") or []
    head = {k: v for k, v in doc.items() if k != "runs"}
    lines = [to_json(r, separators=(",", ":")) for r in runs]
    return to_json(head)[:-1] + ', "runs": [\n' + ",\n".join(lines) + "\n]}\n"
