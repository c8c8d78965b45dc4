"""The gate's data files: the pinned release (default baseline) and the accepted changes.

Both are TOML under ``matrix/data/``. A malformed file is a ``DataFileError``, which the gate
turns into exit 2 (undecidable): a typo in an acknowledgement must never silently accept a change.
Release globs match the one spelling of a release (``Release``: ``3.8`` is ``3.8.0``).

>>> from matrix.core import Release
>>> AcceptedChange("block_ptr", "*", "deprecated", "removed", "unused here", "3.8.*").matches(
...     "block_ptr", "aot:cuda:90", "deprecated", "removed", Release.parse("3.8"),
...     Release.parse("3.9"))
True
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from matrix.core import (
    DATA_DIR,
    NO_OBSERVATION_STATUSES,
    DataFileError,
    Release,
    load_toml,
    release_at,
    table_keys,
    text_at,
)

DATA = DATA_DIR
PINNED_PATH = DATA / "pinned.toml"
ACCEPTED_PATH = DATA / "accepted_changes.toml"


def pinned_release(path: str | Path = PINNED_PATH) -> Release:
    """The release the project pins (``[triton] release = "..."``): the default baseline."""
    return release_at(load_toml(path), "triton.release", path)


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
        return (
            # "fp.cast.*" acknowledges a whole fingerprint group; a cell's own name matches
            # itself (its "[...]" would read as a glob's character class)
            (probe == self.probe or fnmatchcase(probe, self.probe))
            and fnmatchcase(where, self.where)
            and fnmatchcase(old, self.from_status)
            and fnmatchcase(new, self.to_status)
            and baseline.matches(self.baseline)
            and candidate.matches(self.candidate)
        )


_CHANGE_KEYS = {
    "probe", "where", "from", "to", "reason", "baseline", "candidate", "paths", "kernels"
}  # fmt: skip


def load_accepted(path: str | Path = ACCEPTED_PATH, scoped: bool = False) -> list[AcceptedChange]:
    """Read the accepted changes; every entry needs probe, from, to and a non-empty reason.
    ``scoped`` (a team's file, for its own code): every entry also names the code it was
    justified for, ``paths`` or ``kernels`` (lists of globs)."""
    doc = load_toml(path)
    # [[slowdown]] entries acknowledge GPU timing changes (matrix/gate/timing.py reads them).
    unknown_top = set(doc) - {"change", "slowdown"}
    if unknown_top:
        raise DataFileError(
            path, "", "only [[change]] and [[slowdown]] tables", sorted(unknown_top)
        )
    entries = doc.get("change", [])
    if not isinstance(entries, list):
        raise DataFileError(path, "change", "an array of tables ([[change]])", entries)
    out: list[AcceptedChange] = []
    for i, e in enumerate(entries):
        where = f"change[{i}]"
        table_keys(path, where, e, _CHANGE_KEYS)
        for key in ("probe", "from", "to", "reason"):
            what = "a reason (why this change is fine)" if key == "reason" else "a string"
            text_at(path, f"{where} ({e.get('probe', '?')})", e, key, what)
        for key in ("where", "baseline", "candidate"):
            if key in e and (not isinstance(e[key], str) or not e[key]):
                raise DataFileError(path, f"{where}.{key}", "a non-empty glob", e[key])
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
                reason=e["reason"].strip(),
                baseline=e.get("baseline", "*"),
                candidate=e.get("candidate", "*"),
                **scope,
            )
        )
    return out
