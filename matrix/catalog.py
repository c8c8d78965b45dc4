"""What the matrix measures, as data: every probe, the statuses it can end with, its backends.

The registry is data, one folder per probe: ``matrix/probes/<name>/probe.toml`` (its row, its
usage entry, its version) beside ``probe.py`` (its ``observe``), checked here when read. The
runner runs each probe's module on each of its backends; the report, the gate and the claims
read ``PROBES`` without importing Triton.
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

import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.backends.targets import KNOWN_TARGETS
from matrix.core import (
    BACKENDS,
    COMMON_STATUSES,
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
# What a probe compiles for unless its probe.toml names its targets: each target is one more
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
    # When set, what the raw files record for the probe instead of its code hash (asv's rule):
    # moving a module or a type-only edit then re-measures nothing. ``code_hash`` is the code
    # hash it stood for when it was set; ``matrix.measure.probe_hashes`` says "code changed,
    # version did not" where they differ, for review. Neither is part of the hashed row.
    version: str | None = None
    code_hash: str | None = None
    # What in a team's code it measures (``[usage]`` of its probe.toml; read by
    # ``matrix.analyze.profile``): names/keywords/ops, ``project = true`` or ``never = "why"``.
    usage: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

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


# One folder per probe: matrix/probes/<name>/probe.py (its ``observe``) beside probe.toml (its
# row, its usage entry, its version); docs/probes.md says what each key means.
PROBES_DIR = Path(__file__).resolve().parent / "probes"
PROBE_MODULE = "probe.py"
PROBE_FILE = "probe.toml"
# Folders of matrix/probes that are not probes: code two or more probes share.
NOT_PROBES = frozenset({"support", "__pycache__"})

_MEANING_KEYS = ("good", "breaking", "wrong", "changed")
_ROW_KEYS = {"summary", "statuses", "backends", "behavioural", "env", "aot_targets",
             "isolated", "compile_cache", *_MEANING_KEYS}  # fmt: skip
_FILE_KEYS = {"order", "version", "code_hash", "usage", *_ROW_KEYS}
# [usage]: what in a team's code the probe measures, or why it never concerns a team's code.
_USAGE_LISTS = ("names", "keywords", "ops")
_HASH = re.compile(r"^[0-9a-f]{16}$")


def probe_folders(probes_dir: Path = PROBES_DIR) -> list[Path]:
    """The probe folders under ``probes_dir`` (any folder but ``NOT_PROBES``), by name; one
    that holds only half of a probe (its module or its probe.toml) is a DataFileError."""
    folders = []
    for folder in sorted(p for p in probes_dir.iterdir() if p.is_dir()):
        if folder.name in NOT_PROBES:
            continue
        for have, lacks in ((PROBE_MODULE, PROBE_FILE), (PROBE_FILE, PROBE_MODULE)):
            if (folder / have).is_file() and not (folder / lacks).is_file():
                raise DataFileError(folder / lacks, "", f"a file beside {have} (one probe per "
                                    "folder: probe.py and probe.toml)")  # fmt: skip
        if (folder / PROBE_FILE).is_file():
            folders.append(folder)
    return folders


def load_catalog(probes_dir: str | Path = PROBES_DIR) -> tuple[ProbeSpec, ...]:
    """The probes of the folders under ``probes_dir``, by their ``order``; a DataFileError
    names the probe.toml and the key. Reads TOML only: nothing here imports Triton.

    >>> [p.name for p in load_catalog()][:2]
    ['splitk', 'tiled']
    """
    found: list[tuple[int, Path, ProbeSpec]] = []
    for folder in probe_folders(Path(probes_dir)):
        path = folder / PROBE_FILE
        if not folder.name.isidentifier():
            raise DataFileError(path, "", "a folder named like a Python module", folder.name)
        doc = table_keys(path, "", load_toml(path), _FILE_KEYS)
        order = doc.get("order")
        if not isinstance(order, int) or isinstance(order, bool):
            raise DataFileError(path, "order", "an integer: the probe's place on every page", order)
        same = [p for o, p, _ in found if o == order]
        if same:
            raise DataFileError(path, "order", f"an order no other probe has ({same[0]} has it)",
                                order)  # fmt: skip
        row = {k: v for k, v in doc.items() if k in _ROW_KEYS}
        found.append((order, path, _spec(path, folder.name, row, doc)))
    if not found:
        raise DataFileError(probes_dir, "", f"one or more probe folders (<name>/{PROBE_FILE})")
    return tuple(spec for _, _, spec in sorted(found, key=lambda f: f[0]))


def _key(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _spec(path: Path, name: str, row: dict[str, Any], doc: dict[str, Any]) -> ProbeSpec:
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
            raise DataFileError(path, key, what, value)
        if default is None and not value:
            raise DataFileError(path, key, "at least one name", value)
        return tuple(value)

    statuses = names("statuses", None, None)
    meanings = {key: names(key, statuses, []) for key in _MEANING_KEYS}
    twice = sorted({s for s in statuses if sum(s in v for v in meanings.values()) > 1})
    if twice:
        raise DataFileError(path, "statuses", "each status in at most one of good/breaking/"
                            "wrong/changed", twice)  # fmt: skip
    env = row.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise DataFileError(path, "env", "a table of strings", env)
    for key in ("behavioural", "isolated", "compile_cache"):
        if not isinstance(row.get(key, False), bool):
            raise DataFileError(path, key, "true or false", row[key])
    if row.get("compile_cache") and env:
        # A cached compile would answer what the variable changes (3.0-3.2 leave
        # TRITON_F32_DEFAULT out of their cache key).
        raise DataFileError(path, "compile_cache", "false for a probe with env", True)
    # An empty list: the probe compiles nothing and runs once per release with no target.
    targets = names("aot_targets", AOT_TARGETS, list(DEFAULT_AOT_TARGETS)) or (None,)
    version, code_hash = _version(path, doc)
    return ProbeSpec(
        name=name,
        summary=text_at(path, "", row, "summary"),
        statuses=statuses,
        backends=names("backends", BACKENDS, None),
        behavioural=row.get("behavioural", True),
        env=tuple(env.items()),
        aot_targets=targets,
        isolated=row.get("isolated", False),
        compile_cache=row.get("compile_cache", False),
        version=version,
        code_hash=code_hash,
        usage=_usage(path, doc.get("usage")),
        **meanings,
    )


def _version(path: Path, doc: dict[str, Any]) -> tuple[str | None, str | None]:
    """``version`` and the ``code_hash`` recorded beside it: both or neither."""
    version, code_hash = doc.get("version"), doc.get("code_hash")
    if version is None and code_hash is None:
        return None, None
    if not isinstance(version, str) or not version.strip():
        raise DataFileError(path, "version", "a non-empty string beside code_hash", version)
    if not isinstance(code_hash, str) or not _HASH.match(code_hash):
        what = "the 16 hex digits of the code hash the version stands for"
        raise DataFileError(path, "code_hash", what, code_hash)
    return version, code_hash


def _usage(path: Path, usage: Any) -> dict[str, Any]:
    """``[usage]``: what in a team's code the probe measures (``names``, ``keywords``, ``ops``;
    ``project = true``: this project's own kernels) or ``never = "why"``. Required: a probe
    nobody mapped would block every team's verdict on any change of its row."""
    expected = ("a [usage] table: names/keywords/ops lists, project = true, or never = \"why\" "
                "alone")  # fmt: skip
    if not isinstance(usage, dict) or not usage:
        raise DataFileError(path, "usage", expected, usage)
    table_keys(path, "usage", usage, {"project", "never", *_USAGE_LISTS})
    if "never" in usage:
        if len(usage) > 1:
            raise DataFileError(path, "usage", expected, usage)
        text_at(path, "usage", usage, "never", "a non-empty string: why it never concerns a team")
    if usage.get("project", True) is not True:
        raise DataFileError(path, "usage.project", "true (or no key)", usage["project"])
    for key in _USAGE_LISTS:
        value = usage.get(key, [])
        if (
            not isinstance(value, list)
            or (not value and key in usage)
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise DataFileError(path, f"usage.{key}", "a list of non-empty strings", value)
    return usage


def probe_module(package: str, name: str) -> str:
    """The module of probe ``name`` in ``package``: ``<package>.<name>.probe`` for a probe
    folder, ``<package>.<name>`` for a flat module (the tests' fixture packages). Found
    without importing the probe (``package`` alone is imported, to find its folder)."""
    spec = importlib.util.find_spec(package)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / name / PROBE_MODULE).is_file():
            return f"{package}.{name}.{PROBE_MODULE.removesuffix('.py')}"
    return f"{package}.{name}"


def probe_path(name: str, probes_dir: Path = PROBES_DIR) -> Path:
    """The source file of probe ``name`` (folder or flat module), whether or not it exists."""
    folder = probes_dir / name / PROBE_MODULE
    return (
        folder
        if folder.is_file() or not (probes_dir / f"{name}.py").is_file()
        else (probes_dir / f"{name}.py")
    )


PROBES: tuple[ProbeSpec, ...] = load_catalog()
PROBES_BY_NAME = {p.name: p for p in PROBES}


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
