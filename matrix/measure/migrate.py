"""Rewrite results files in the current schema: ``python -m matrix.measure.migrate FILE...``.

Reading an old file already works (``results.parse`` upgrades it in memory and says which file
is old); this makes the upgrade permanent, so the warning stops. Each file is read, validated
and rewritten atomically; a file already current is left byte for byte as it was.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from matrix import cli
from matrix.measure import results


def migrate(path: Path) -> bool:
    """Rewrite ``path`` in the current schema; True when it was old and has been rewritten."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(doc, dict) and doc.get("schema") == results.SCHEMA:
        return False
    runs = results.parse(doc, str(path))
    results.atomic_write_text(path, results.dumps(results.document(runs)))
    return True


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m matrix.measure.migrate", description=__doc__)
    p.add_argument("files", nargs="+", type=Path, help="raw files or a merged matrix.json")
    args = p.parse_args(argv)
    try:
        changed = [f for f in args.files if migrate(f)]
    except (OSError, json.JSONDecodeError, results.SchemaError) as e:
        print(f"matrix.measure.migrate: {e}", file=sys.stderr)
        return 2
    print(f"{len(changed)} of {len(args.files)} files rewritten in schema {results.SCHEMA}")
    return 0


if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.measure.migrate"))
