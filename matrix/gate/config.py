"""The gate's data files: the pinned release (default baseline) and the accepted changes.

Both are TOML under ``matrix/data/``. A malformed file is a ``DataFileError``, which the gate
turns into exit 2 (undecidable): a typo in an acknowledgement must never silently accept a change.
Release fields are ranges of releases (``matrix.release_range``: ``3.8.*`` never takes ``3.80``).

>>> from matrix.core import Release
>>> AcceptedChange("block_ptr", "*", "deprecated", "removed", "unused here", "3.8.*").matches(
...     "block_ptr", "aot:cuda:90", "deprecated", "removed", Release.parse("3.8"),
...     Release.parse("3.9"))
True
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from matrix.core import (
    DATA_DIR,
    NO_OBSERVATION_STATUSES,
    DataFileError,
    Release,
    release_at,
    table_keys,
    text_at,
)
from matrix.release_range import EXPECTED, ReleaseRangeError, in_range, parse_range

DATA = DATA_DIR
PINNED_PATH = DATA / "pinned.toml"
ACCEPTED_PATH = DATA / "accepted_changes.toml"


# Limits on an acknowledgements file (docs/gate.md): this project's holds 23 entries in
# 10 kB. Past them the file is refused, named, before it is parsed whole (every entry is
# matched against every finding).
MAX_ACCEPTED_BYTES = 1024 * 1024
MAX_ACCEPTED_ENTRIES = 2_000


def read_bounded_toml(path: str | Path) -> dict[str, Any]:
    """A data file the gate is given (acknowledgements, ``--pinned``) as a dict; a
    DataFileError naming it when it is not a regular file (a FIFO nobody writes would block
    the gate, ``/dev/zero`` never ends), is larger than ``MAX_ACCEPTED_BYTES``, or is no valid
    TOML."""
    try:
        mode = os.stat(path).st_mode  # before opening: opening a FIFO blocks
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
            raise DataFileError(path, "", "a regular file", kind)
        with open(path, "rb") as f:
            data = f.read(MAX_ACCEPTED_BYTES + 1)
    except OSError as e:
        raise DataFileError(path, "", f"a readable file ({e.strerror or e})") from e
    if len(data) > MAX_ACCEPTED_BYTES:
        raise DataFileError(
            path, "", f"at most {MAX_ACCEPTED_BYTES // 1024} KiB (the limit on a data file "
            "of the gate)", f"more than {MAX_ACCEPTED_BYTES // 1024} KiB"
        )  # fmt: skip
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DataFileError(path, "", "UTF-8 text", f"undecodable byte at {e.start}") from e
    except tomllib.TOMLDecodeError as e:
        raise DataFileError(path, "", f"valid TOML ({e})") from e


def entries_at(path: str | Path, doc: dict[str, Any], key: str) -> list[Any]:
    """The ``[[key]]`` array of an acknowledgements file, at most ``MAX_ACCEPTED_ENTRIES``."""
    entries = doc.get(key, [])
    if not isinstance(entries, list):
        raise DataFileError(path, key, f"an array of tables ([[{key}]])", entries)
    if len(entries) > MAX_ACCEPTED_ENTRIES:
        raise DataFileError(
            path, key, f"at most {MAX_ACCEPTED_ENTRIES} entries", f"{len(entries)} entries"
        )
    return entries


def reason_at(
    path: str | Path, where: str, table: dict[str, Any], what: str = "a reason (why this is fine)"
) -> str:
    """``table["reason"]``, with words in it: white space and invisible characters (a
    zero-width space) are no reason."""
    key = "reason"
    value = text_at(path, where, table, key, what)
    if not any(ch.isalnum() for ch in value):
        raise DataFileError(path, f"{where}.{key}", "a reason with words (why this is fine)", value)
    return value.strip()


def release_spec(path: str | Path, where: str, value: Any) -> str:
    """A release field of an acknowledgement, checked to be a range of releases
    (``matrix.release_range``: ``3.9.0``, ``3.8.*``, ``>=3.4,<3.8``, ``*``); anything else
    (``banana``, ``3.1*``) would match nothing a reader meant, silently: a DataFileError."""
    if not isinstance(value, str):
        raise DataFileError(path, where, EXPECTED, value)
    try:
        return parse_range(value).text
    except ReleaseRangeError:
        raise DataFileError(path, where, EXPECTED, value) from None


def pinned_release(path: str | Path = PINNED_PATH) -> Release:
    """The release the project pins (``[triton] release = "..."``): the default baseline."""
    return release_at(read_bounded_toml(path), "triton.release", path)


@dataclass(frozen=True)
class AcceptedChange:
    """An acknowledged behaviour change: probe, column glob, from/to statuses, and why."""

    probe: str
    where: str
    from_status: str
    to_status: str
    reason: str
    baseline: str = "*"
    candidate: str = "*"
    # The code it was justified for (globs over the profile's file paths and kernel names):
    # with a team's code an entry applies only where every use of the change lies in these.
    paths: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()

    def matches(
        self, probe: str, where: str, old: str, new: str, baseline: Release, candidate: Release
    ) -> bool:
        """Whether this entry acknowledges the change; never one that is not an observation
        (``skipped``, ``error``, ``crashed``, ``timeout`` on either side), whatever the globs:
        a ``*`` must not turn a crash into an accepted behaviour change."""
        if old in NO_OBSERVATION_STATUSES or new in NO_OBSERVATION_STATUSES:
            return False
        return self.for_upgrade(baseline, candidate) and (
            # "fp.cast.*" acknowledges a whole fingerprint group; a cell's own name matches
            # itself (its "[...]" would read as a glob's character class)
            (probe == self.probe or fnmatchcase(probe, self.probe))
            and fnmatchcase(where, self.where)
            and fnmatchcase(old, self.from_status)
            and fnmatchcase(new, self.to_status)
        )

    def path_globs(self) -> tuple[str, ...]:
        """``paths`` as the gate names files (``usage.shown_path``: relative to the current
        folder, ``/``-separated): an entry written with an absolute path or ``./`` matches as
        well as one written relative."""
        return tuple(dict.fromkeys(g for p in self.paths for g in (p, relative_glob(p))))

    def for_upgrade(self, baseline: Release, candidate: Release) -> bool:
        """Whether the entry's release ranges take this upgrade."""
        return in_range(baseline, self.baseline) and in_range(candidate, self.candidate)

    def describe(self) -> str:
        """The entry in a few words, for a report that names it."""
        scope = "".join(f" {k}={list(v)}" for k, v in (("paths", self.paths),
                        ("kernels", self.kernels)) if v)  # fmt: skip
        return (f"probe={self.probe!r} where={self.where!r} {self.from_status} -> "
                f"{self.to_status} ({self.baseline} -> {self.candidate}){scope}")  # fmt: skip


def relative_glob(glob: str) -> str:
    """A path glob relative to the current folder: ``./a/*.py`` -> ``a/*.py``; an absolute
    one under the current folder loses that prefix; any other is kept."""
    text = glob.replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    if text.startswith("/"):
        cwd = Path.cwd().resolve().as_posix().rstrip("/") + "/"
        if text.startswith(cwd):
            text = text[len(cwd) :]
    return text


def matches_path(path: str, globs: tuple[str, ...] | list[str]) -> bool:
    """Whether a file as the gate names it matches one of ``globs``."""
    return any(fnmatchcase(path, g) for g in globs)


_CHANGE_KEYS = {
    "probe", "where", "from", "to", "reason", "baseline", "candidate", "paths", "kernels"
}  # fmt: skip


def load_accepted(path: str | Path = ACCEPTED_PATH, scoped: bool = False) -> list[AcceptedChange]:
    """Read the accepted changes; every entry needs probe, from, to and a non-empty reason.
    ``scoped`` (a team's file, for its own code): every entry also names the code it was
    justified for, ``paths`` or ``kernels`` (lists of globs)."""
    doc = read_bounded_toml(path)
    # [[slowdown]] entries acknowledge GPU timing changes (matrix/gate/timing.py reads them).
    unknown_top = set(doc) - {"change", "slowdown"}
    if unknown_top:
        raise DataFileError(
            path, "", "only [[change]] and [[slowdown]] tables", sorted(unknown_top)
        )
    entries = entries_at(path, doc, "change")
    out: list[AcceptedChange] = []
    for i, e in enumerate(entries):
        where = f"change[{i}]"
        table_keys(path, where, e, _CHANGE_KEYS)
        for key in ("probe", "from", "to"):
            text_at(path, f"{where} ({e.get('probe', '?')})", e, key, "a string")
        reason = reason_at(path, f"{where} ({e['probe']})", e, "a reason (why this change is fine)")
        if "where" in e and (not isinstance(e["where"], str) or not e["where"]):
            raise DataFileError(path, f"{where}.where", "a non-empty glob", e["where"])
        releases = {k: release_spec(path, f"{where}.{k}", e[k]) for k in ("baseline", "candidate")
                    if k in e}  # fmt: skip
        scope: dict[str, tuple[str, ...]] = {}
        for key in ("paths", "kernels"):
            value = e.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise DataFileError(path, f"{where}.{key}", "a list of non-empty globs", value)
            scope[key] = tuple(value)
        if scoped and not (scope["paths"] or scope["kernels"]):
            raise DataFileError(
                path,
                f"{where} ({e['probe']})",
                "paths = [...] or kernels = [...]: the code this acknowledgement was justified "
                "for (a team's acknowledgements apply only there)",
                "neither",
            )
        out.append(
            AcceptedChange(
                probe=e["probe"],
                where=e.get("where", "*"),
                from_status=e["from"],
                to_status=e["to"],
                reason=reason,
                baseline=releases.get("baseline", "*"),
                candidate=releases.get("candidate", "*"),
                **scope,
            )
        )
    return out
