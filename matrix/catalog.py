"""What the matrix measures, as data: every probe, the statuses it can end with, its backends.

The registry's rows are data, in ``matrix/data/probes.toml``, checked here when it is read: the
runner runs ``matrix/probes/<name>.py`` for each entry on each of its backends, and the report,
the gate and the claims read ``PROBES`` without importing Triton.
A status not listed here for a probe is still rendered (as "unknown"), never dropped.

It is also the one table of what a status *means* for a team upgrading (``MEANINGS``): every
status of every probe is good, breaking, silently wrong, changed (needs a look), neutral or not
measured. Pages, the Markdown report and the gate read ``meaning_of``; nothing else decides it.

>>> meaning_of("block_ptr", "removed")
'breaking'
>>> meaning_of("block_ptr", "supported", {"correct": False})
'wrong'
>>> meaning_of("no_such_probe", "fail")
'breaking'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.backends.targets import KNOWN_TARGETS
from matrix.core import (
    BACKENDS,
    COMMON_STATUSES,
    DATA_DIR,
    DataFileError,
    load_toml,
    table_keys,
    text_at,
)


@dataclass(frozen=True)
class Meaning:
    """What a status means for a team deciding an upgrade; shown as icon, label and colour."""

    name: str
    label: str
    icon: str
    text: str
    # True when a cell with this meaning is a problem ("only problems" filter, upgrade page).
    problem: bool = False


MEANINGS: tuple[Meaning, ...] = (
    Meaning("breaking", "breaking", "✖", "code that worked stops compiling or running, or a "
            "check fails", problem=True),
    Meaning("wrong", "silently wrong", "⚠", "runs without complaint and gives a wrong result",
            problem=True),
    Meaning("changed", "changed", "△", "still works, differently: a warning, another default; "
            "needs a look"),
    Meaning("good", "good", "✔", "works as a team expects"),
    Meaning("neutral", "neutral", "●", "a fact about the release, neither good nor bad"),
    Meaning("unmeasured", "not measured", "∅", "nothing observed: skipped, the probe broke, "
            "no run, or the release did not install"),
)  # fmt: skip
MEANINGS_BY_NAME = {m.name: m for m in MEANINGS}

# What the statuses every probe may end with mean (matrix.core.RESULT_STATUSES): ``error`` is
# our probe breaking, so nothing about Triton was seen; a crash or a hang of the child is what
# a kernel would see too.
COMMON_MEANINGS = {"skipped": "unmeasured", "error": "unmeasured", "crashed": "breaking",
                   "timeout": "breaking", "fail": "breaking"}  # fmt: skip
# A status the catalog does not list for the probe: someone has to look at it.
UNLISTED_MEANING = "changed"

# Targets the aot backend compiles for (matrix.backends.targets owns the list).
AOT_TARGETS = KNOWN_TARGETS
# What a probe compiles for unless probes.toml names its targets: each target is one more
# compile per probe and release, so the newer ones are named where they answer something.
DEFAULT_AOT_TARGETS = ("cuda:80", "cuda:90", "hip:gfx942")


@dataclass(frozen=True)
class ProbeSpec:
    """One row family of the matrix: a probe and what its statuses mean."""

    name: str
    summary: str
    statuses: tuple[str, ...]
    backends: tuple[str, ...]
    # What each status means for a team (MEANINGS): statuses listed in none of these four are
    # neutral. Good news for a team upgrading:
    good: tuple[str, ...] = ()
    # Code that worked stops working (removed, refused, failing):
    breaking: tuple[str, ...] = ()
    # Runs and gives a wrong result (a misaligned descriptor accepted, a wrong value):
    wrong: tuple[str, ...] = ()
    # Works, differently (a deprecation warning, an experimental spelling): needs a look.
    changed: tuple[str, ...] = ()
    # True when a change of status between releases is a behaviour change worth listing.
    behavioural: bool = True
    # Extra environment for the probe's child process (e.g. TRITON_F32_DEFAULT).
    env: tuple[tuple[str, str], ...] = ()
    # The aot targets it compiles for; frontend-only questions need one target, not three;
    # (None,) for a probe that compiles nothing but must run once per release (api_surface).
    aot_targets: tuple[str | None, ...] = DEFAULT_AOT_TARGETS
    # On a GPU, run alone in its own child process: what it provokes (a misaligned access) can
    # poison the CUDA context for every later probe in the same process.
    isolated: bool = False
    # aot only: its compiles of our own kernels may be answered by Triton's own on-disk cache,
    # kept in the cell's environment across runs (``matrix.backends.compile_cache``). Only for a
    # probe whose answer is the compiled artifact alone, never one that observes an environment
    # variable or an option's effect on compiling (the catalog refuses it with ``env``).
    compile_cache: bool = False

    @property
    def all_statuses(self) -> tuple[str, ...]:
        return self.statuses + COMMON_STATUSES

    def meaning(self, status: str) -> str:
        """The MEANINGS name of ``status`` for this probe."""
        for name in ("good", "breaking", "wrong", "changed"):
            if status in getattr(self, name):
                return name
        if status in COMMON_MEANINGS:
            return COMMON_MEANINGS[status]
        return "neutral" if status in self.statuses else UNLISTED_MEANING

    def __str__(self) -> str:
        return self.name


# The registry's rows: matrix/data/probes.toml (its header says what each key means).
PROBES_PATH = DATA_DIR / "probes.toml"

_MEANING_KEYS = ("good", "breaking", "wrong", "changed")
_ROW_KEYS = {"name", "summary", "statuses", "backends", "behavioural", "env", "aot_targets",
             "isolated", "compile_cache", *_MEANING_KEYS}  # fmt: skip


def load_catalog(path: str | Path = PROBES_PATH) -> tuple[ProbeSpec, ...]:
    """The probes of a registry file, in its order; a DataFileError names the row and the key.

    >>> [p.name for p in load_catalog()][:2]
    ['splitk', 'tiled']
    """
    rows = load_toml(path).get("probe")
    if not isinstance(rows, list) or not rows:
        raise DataFileError(path, "probe", "one or more [[probe]] tables", rows)
    specs: list[ProbeSpec] = []
    for i, row in enumerate(rows):
        where = f"probe[{i}]" + (f" ({row.get('name', '?')})" if isinstance(row, dict) else "")
        spec = _spec(path, where, table_keys(path, where, row, _ROW_KEYS))
        if spec.name in (s.name for s in specs):
            raise DataFileError(path, f"probe[{i}].name", "a name no other probe has", spec.name)
        specs.append(spec)
    return tuple(specs)


def _spec(path: str | Path, where: str, row: dict[str, Any]) -> ProbeSpec:
    def names(key: str, allowed: tuple[str, ...] | None, default: list[str] | None) -> Any:
        """The list at ``key`` as a tuple: distinct strings, each one of ``allowed``."""
        value = row.get(key, default)
        if (
            not isinstance(value, list)
            or not all(isinstance(v, str) for v in value)
            or len(set(value)) != len(value)
            or (allowed and set(value) - set(allowed))
        ):
            what = "a list of distinct names" + (f" from {list(allowed)}" if allowed else "")
            raise DataFileError(path, f"{where}.{key}", what, value)
        if default is None and not value:
            raise DataFileError(path, f"{where}.{key}", "at least one name", value)
        return tuple(value)

    statuses = names("statuses", None, None)
    meanings = {key: names(key, statuses, []) for key in _MEANING_KEYS}
    twice = sorted({s for s in statuses if sum(s in v for v in meanings.values()) > 1})
    if twice:
        raise DataFileError(path, where, "each status in at most one of good/breaking/wrong/"
                            "changed", twice)  # fmt: skip
    env = row.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise DataFileError(path, f"{where}.env", "a table of strings", env)
    for key in ("behavioural", "isolated", "compile_cache"):
        if not isinstance(row.get(key, False), bool):
            raise DataFileError(path, f"{where}.{key}", "true or false", row[key])
    if row.get("compile_cache") and env:
        # A cached compile would answer what the variable changes (3.0-3.2 leave
        # TRITON_F32_DEFAULT out of their cache key).
        raise DataFileError(path, f"{where}.compile_cache", "false for a probe with env", True)
    # An empty list: the probe compiles nothing and runs once per release with no target.
    targets = names("aot_targets", AOT_TARGETS, list(DEFAULT_AOT_TARGETS)) or (None,)
    return ProbeSpec(
        name=text_at(path, where, row, "name"),
        summary=text_at(path, where, row, "summary"),
        statuses=statuses,
        backends=names("backends", BACKENDS, None),
        behavioural=row.get("behavioural", True),
        env=tuple(env.items()),
        aot_targets=targets,
        isolated=row.get("isolated", False),
        compile_cache=row.get("compile_cache", False),
        **meanings,
    )


PROBES: tuple[ProbeSpec, ...] = load_catalog()
PROBES_BY_NAME = {p.name: p for p in PROBES}


def unmapped_probes(rows: Mapping[str, Any]) -> list[str]:
    """The probes of the catalog that ``rows`` (``matrix/data/usage_map.toml``'s ``probes``
    table) gives no row: each needs one, what in a team's code it measures (``names``,
    ``keywords``, ``ops``) or why it never concerns a team's code (``project = true``, or
    ``never = "why"``). A probe nobody mapped would otherwise block every team's verdict."""
    return [p.name for p in PROBES if p.name not in rows]


def meaning_of(probe: str, status: str, data: dict | None = None) -> str:
    """What ``status`` of ``probe`` means for a team, given the result's evidence ``data``.

    Evidence overrides the status: a result whose data says ``correct: false`` is silently wrong
    whatever the status word (``block_ptr`` "supported" with wrong numbers is not good news).
    A probe the catalog does not know gets the common meanings, else "changed".
    """
    if data and data.get("correct") is False:
        return "wrong"
    spec = PROBES_BY_NAME.get(probe)
    if spec is not None:
        return spec.meaning(status)
    return COMMON_MEANINGS.get(status, UNLISTED_MEANING)
