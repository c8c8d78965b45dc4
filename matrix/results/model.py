"""The records of the results contract: ``Run`` (one matrix cell) and ``Result`` (one
observation), read from a document's dicts with every field checked (``SchemaError``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from matrix.core import BACKENDS, InputError, Release, ReleaseError
from matrix.results.text import number

# Limits on what one run may hold (docs/raw-files.md); ``MAX_DOCUMENT_BYTES`` bounds a file.
# results of one run: the report writes a page per probe (5,000 results: 5,038 pages in 327 s
# on a busy 2-core machine; 100,000 never finished)
MAX_RESULTS = 5_000
MAX_LIST_ENTRIES = 20_000  # each other list a run keeps (``LISTS_BOUNDED``): a team's tests

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
    # ``env.triton`` parsed, with the text it was parsed from: a reader asks for ``release``
    # hundreds of times per gate run; it is parsed once (when read, or on first use) and
    # again only if ``env["triton"]`` was changed since.
    _release: tuple[str, Release] | None = field(
        default=None, init=False, repr=False, compare=False
    )

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
        release = None
        if d["env"].get("triton") is not None:
            try:
                release = Release.parse(d["env"]["triton"], f"{where}.env.triton")
            except ReleaseError as e:
                raise SchemaError(str(e)) from None
        known = {"id", "env", "install", "results"}
        run = cls(
            id=d["id"],
            env=dict(d["env"]),
            install=dict(d["install"]),
            results=results,
            extra={k: v for k, v in d.items() if k not in known},
        )
        if release is not None:
            run._release = (d["env"]["triton"], release)
        return run

    @property
    def triton(self) -> str | None:
        """The release as recorded (text); ``release`` is the parsed value."""
        return self.env.get("triton")

    @property
    def release(self) -> Release | None:
        """The Triton release of this cell, parsed (checked when the run was read)."""
        text = self.env.get("triton")
        if text is None:
            return None
        if self._release is None or self._release[0] != text:
            self._release = (text, Release.parse(text, f"run {self.id!r}: env.triton"))
        return self._release[1]

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
