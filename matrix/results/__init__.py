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
stderr, naming the file (``python -m matrix migrate FILE...`` rewrites it on disk).

>>> r = Result(probe="splitk", backend="interpret", target=None, status="pass")
>>> run = Run(id="triton-3.9.0-numpy-2.4.6", env={"triton": "3.9.0"}, results=[r])
>>> Run.from_dict(run.to_dict()) == run
True

This package is the contract's one owner, below every stage that writes or reads it (measure,
analyze, scan, gate, report): ``text`` (JSON that loses nothing, capped text), ``model``
(``Run``, ``Result``), ``schema`` (the version, the JSON Schema check, the schema 1 upgrade)
and ``files`` (raw files on disk). Import from ``matrix.results``; the submodules are its parts.
"""

from __future__ import annotations

from matrix.results.files import (
    CELL_NAME_PREFIX,
    GZIP_MAGIC,
    LEGACY_SUFFIX,
    MAX_DOCUMENT_BYTES,
    NOT_CELLS,
    RAW_SUFFIX,
    atomic_write_bytes,
    atomic_write_text,
    compress,
    is_gzip_name,
    merge,
    move_aside,
    partial_files,
    partial_path,
    raw_files,
    raw_name,
    read_folder,
    read_json,
    read_raw,
    read_runs,
    release_named,
    run_id_of,
    write_raw,
)
from matrix.results.model import (
    LISTS_BOUNDED,
    MAX_LIST_ENTRIES,
    MAX_RESULTS,
    NoValidator,
    Result,
    Run,
    SchemaError,
)
from matrix.results.schema import SCHEMA, SCHEMA_PATH, document, parse, upgrade, validate
from matrix.results.text import (
    CUT_MARK,
    DETAIL_CAP,
    NONFINITE,
    PAGE_TEXT_CAP,
    cap_text,
    dumps,
    dumps_merged,
    known_seconds,
    number,
    to_json,
)

__all__ = [
    "CELL_NAME_PREFIX", "CUT_MARK", "DETAIL_CAP", "GZIP_MAGIC", "LEGACY_SUFFIX", "LISTS_BOUNDED",
    "MAX_DOCUMENT_BYTES", "MAX_LIST_ENTRIES", "MAX_RESULTS", "NONFINITE", "NOT_CELLS",
    "PAGE_TEXT_CAP", "RAW_SUFFIX", "SCHEMA", "SCHEMA_PATH", "NoValidator", "Result", "Run",
    "SchemaError", "atomic_write_bytes", "atomic_write_text", "cap_text", "compress", "document",
    "dumps", "dumps_merged", "is_gzip_name", "known_seconds", "merge", "move_aside", "number",
    "parse", "partial_files", "partial_path", "raw_files", "raw_name", "read_folder",
    "read_json", "read_raw", "read_runs", "release_named", "run_id_of", "to_json", "upgrade",
    "validate", "write_raw",
]  # fmt: skip
