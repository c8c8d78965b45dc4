"""Rewrite results files in the current form: ``python -m matrix migrate FILE...``,
and ``python -m matrix migrate --gzip DIR...`` to compress a folder of raw files.

Reading an old file already works (``results.parse`` upgrades it in memory and says which file
is old); this makes the upgrade permanent, so the warning stops. Each file is read, validated
and rewritten atomically; a file already current is left byte for byte as it was.

``--gzip``: every plain ``<run-id>.json`` raw file (and ``.json.partial``) in each folder
becomes ``<run-id>.json.gz`` (``results.RAW_SUFFIX``), validated first and written in the
current schema; the plain file is removed only once the compressed one is written. The matrix
does the same for a cell's own file when it comes to it (``adopt_legacy``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from matrix import cli, results
from matrix.exitcodes import ExitCode


def migrate(path: Path) -> bool:
    """Rewrite ``path`` in the current schema; True when it was old and has been rewritten."""
    doc = results.read_json(path)
    if isinstance(doc, dict) and doc.get("schema") == results.SCHEMA:
        return False
    runs = results.parse(doc, str(path))
    text = results.dumps(results.document(runs))
    if results.is_gzip_name(path):
        results.atomic_write_bytes(path, results.compress(text))
    else:
        results.atomic_write_text(path, text)
    return True


def to_gzip(path: Path) -> Path:
    """Convert one plain raw file (``X.json`` or ``X.json.partial``) to ``X.json.gz`` (or
    ``X.json.gz.partial``) and remove the plain one; the new path. A file that cannot be read
    is a SchemaError, and stays as it was."""
    run = results.read_raw(path)
    partial = path.name.endswith(".partial")
    stem = path.name.removesuffix(".partial").removesuffix(results.LEGACY_SUFFIX)
    target = path.with_name(stem + results.RAW_SUFFIX + (".partial" if partial else ""))
    results.write_raw(run, target)
    path.unlink()
    return target


def legacy_files(folder: Path) -> list[Path]:
    """The plain raw files in ``folder`` that ``to_gzip`` converts."""
    return [
        p
        for p in (*results.raw_files(folder), *results.partial_files(folder))
        if not results.is_gzip_name(p)
    ]


def adopt_legacy(raw_path: Path) -> str:
    """Before the matrix reads cell file ``raw_path`` (``X.json.gz``): a plain ``X.json`` (and
    ``X.json.partial``) of the same cell from before is converted to it, or, where the
    compressed one already exists, moved aside (kept) so that no cell is read twice. What was
    done, for the cell's line ("" if nothing)."""
    said = []
    for suffix in ("", ".partial"):
        target = Path(str(raw_path) + suffix)
        stem = raw_path.name.removesuffix(results.RAW_SUFFIX)
        legacy = raw_path.with_name(stem + results.LEGACY_SUFFIX + suffix)
        if not legacy.exists():
            continue
        if target.exists():
            aside = results.move_aside(legacy, "superseded")
            said.append(f"a plain {legacy.name} beside it is kept as {aside.name}")
            continue
        try:
            to_gzip(legacy)
        except results.SchemaError as e:  # as the matrix does with its own unreadable file
            aside = results.move_aside(legacy)
            said.append(f"{e}; moved it aside to {aside.name}")
            continue
        except OSError as e:  # the disk full: the plain file stays, and the line says so
            said.append(f"{legacy.name} could not be converted ({e.strerror or e})")
            continue
        said.append(f"{legacy.name} converted to {target.name}")
    return f" [{'; '.join(said)}]" if said else ""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix migrate",
        description=__doc__,
    )
    p.add_argument(
        "files",
        nargs="+",
        type=Path,
        help="raw files or a merged matrix.json (with --gzip: folders)",
    )
    p.add_argument(
        "--gzip",
        action="store_true",
        help="convert every plain raw file in these folders to <run-id>.json.gz",
    )
    args = p.parse_args(argv)
    try:
        if args.gzip:
            not_dirs = [str(f) for f in args.files if not f.is_dir()]
            if not_dirs:
                print(f"matrix.measure.migrate: --gzip takes folders, got {not_dirs}",
                      file=sys.stderr)  # fmt: skip
                return ExitCode.UNDECIDABLE
            todo = [f for d in args.files for f in legacy_files(d)]
            before = sum(f.stat().st_size for f in todo)
            done = [to_gzip(f) for f in todo]
            after = sum(f.stat().st_size for f in done)
            print(f"{len(done)} raw files compressed: {before} bytes -> {after} bytes")
            return ExitCode.OK
        changed = [f for f in args.files if migrate(f)]
    except (OSError, json.JSONDecodeError, results.SchemaError) as e:
        print(f"matrix.measure.migrate: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    print(f"{len(changed)} of {len(args.files)} files rewritten in schema {results.SCHEMA}")
    return ExitCode.OK


if __name__ == "__main__":
    cli.deprecated("python -m matrix.measure.migrate", "migrate")
    sys.exit(cli.run(main, "matrix.measure.migrate"))
