"""The document's shape: its schema version, the JSON Schema every read checks, and the
upgrade of a schema 1 document."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

from matrix.core import DATA_DIR
from matrix.results.model import NoValidator, Run, SchemaError

SCHEMA = 2
# The shape every reader checks (JSON Schema): field types, required keys, the "nan" strings.
SCHEMA_PATH = DATA_DIR / "raw.schema.json"

# Schema 1 -> 2: statuses that meant "the release refuses the code", by probe. A schema 1
# ``error`` whose detail says the probe itself failed (it could not read the IR, or an
# unexpected exception escaped with its traceback) stays ``error``.
_RENAMED_IN_2: dict[tuple[object, object], str] = {("dot_acc_out_dtype", "error"): "rejected"}
_STILL_BROKEN = ("could not read", "Traceback")


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
            f"python -m matrix migrate {where}",
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
