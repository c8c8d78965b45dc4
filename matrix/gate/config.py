"""The gate's data files: the pinned release (default baseline) and the accepted changes.

Both are TOML under ``matrix/data/``. A malformed file is a ``ConfigError``, which the gate turns
into exit 2 (undecidable): a typo in an acknowledgement must never silently accept a change.

>>> AcceptedChange("block_ptr", "*", "deprecated", "removed", "unused here").matches(
...     "block_ptr", "aot:cuda:90", "deprecated", "removed", "3.8.0", "3.9.0")
True
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from matrix.core import DATA_DIR

DATA = DATA_DIR
PINNED_PATH = DATA / "pinned.toml"
ACCEPTED_PATH = DATA / "accepted_changes.toml"


class ConfigError(ValueError):
    """A gate data file is missing, unreadable or malformed; the message names file and field."""


def _load_toml(path: str | Path) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror or e})") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e})") from e


def pinned_release(path: str | Path = PINNED_PATH) -> str:
    """The release the project pins (``[triton] release = "..."``): the default baseline."""
    doc = _load_toml(path)
    release = doc.get("triton", {}).get("release") if isinstance(doc.get("triton"), dict) else None
    if not isinstance(release, str) or not release.strip():
        raise ConfigError(f'{path}: expected [triton] release = "X.Y.Z", got {release!r}')
    return release.strip()


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

    def matches(
        self, probe: str, where: str, old: str, new: str, baseline: str, candidate: str
    ) -> bool:
        return (
            self.probe == probe
            and fnmatchcase(where, self.where)
            and fnmatchcase(old, self.from_status)
            and fnmatchcase(new, self.to_status)
            and fnmatchcase(baseline, self.baseline)
            and fnmatchcase(candidate, self.candidate)
        )


_CHANGE_KEYS = {"probe", "where", "from", "to", "reason", "baseline", "candidate"}


def load_accepted(path: str | Path = ACCEPTED_PATH) -> list[AcceptedChange]:
    """Read the accepted changes; every entry needs probe, from, to and a non-empty reason."""
    doc = _load_toml(path)
    unknown_top = set(doc) - {"change"}
    if unknown_top:
        raise ConfigError(f"{path}: unknown top-level keys {sorted(unknown_top)}; use [[change]]")
    entries = doc.get("change", [])
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: 'change' must be an array of tables ([[change]])")
    out: list[AcceptedChange] = []
    for i, e in enumerate(entries):
        where = f"{path}: change[{i}]"
        unknown = set(e) - _CHANGE_KEYS
        if unknown:
            raise ConfigError(
                f"{where}: unknown keys {sorted(unknown)}; expected {sorted(_CHANGE_KEYS)}"
            )
        for key in ("probe", "from", "to", "reason"):
            value = e.get(key)
            if not isinstance(value, str) or not value.strip():
                what = "a reason (why this change is fine)" if key == "reason" else "a string"
                raise ConfigError(
                    f"{where} ({e.get('probe', '?')}).{key}: missing; expected {what}"
                )
        for key in ("where", "baseline", "candidate"):
            if key in e and (not isinstance(e[key], str) or not e[key]):
                raise ConfigError(f"{where}.{key}: expected a non-empty glob, got {e[key]!r}")
        out.append(
            AcceptedChange(
                probe=e["probe"],
                where=e.get("where", "*"),
                from_status=e["from"],
                to_status=e["to"],
                reason=e["reason"].strip(),
                baseline=e.get("baseline", "*"),
                candidate=e.get("candidate", "*"),
            )
        )
    return out
