"""The words every stage of the matrix shares.

Importable by every stage (measure, backends, probes, report, gate, scan); imports none of them.
Each value here is parsed once, where it enters (command line, TOML, raw file), and passed on as
the value, never as text to be parsed again:

- ``Release``: a Triton (or numpy) release, its one sort key and its one spelling;
- ``run_id``: the id of a matrix cell and the stem of its raw file;
- ``Column``: where a probe ran, ``backend`` and ``target``, spelt ``aot:cuda:90``;
- ``pair_numpy``: which interpreter cells of two releases are compared with each other;
- the status tables: result statuses, install statuses, test outcomes, compile statuses, with
  their predicates (``is_observation``, ``install_ok``, ``passed_test``);
- ``load_toml`` and ``DataFileError``: one loader and one error for every data file;
- ``InputError``: what every error about a given file or argument is (one line, exit 2);
- ``AotUnavailable``: the ahead-of-time backend cannot run here (a tool is missing).
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import total_ordering
from pathlib import Path
from typing import Any, TypeVar

from packaging.version import InvalidVersion, Version

MATRIX_DIR = Path(__file__).resolve().parent
# The matrix's own data files: the default matrix, claims, scanner rules, pins.
DATA_DIR = MATRIX_DIR / "data"
# The checkout: children run from here so ``kernels``/``compat``/``matrix`` import.
REPO_ROOT = MATRIX_DIR.parent

# ------------------------------------------------------------------------------------ releases


class InputError(ValueError):
    """A file or argument given to a command cannot be used; the message names it and what was
    expected. Every such error of the matrix derives from this one, so that an entry point
    (``matrix.cli.run``) can say it in one line, exit 2, where a bug still shows its traceback."""


class ReleaseError(InputError):
    """A text is not a release; the message names where it came from, the text, and the form.

    >>> Release.parse("main", "--candidate")
    Traceback (most recent call last):
    ...
    matrix.core.ReleaseError: --candidate: 'main' is not a release; expected X.Y.Z, e.g. 3.9.0
    """


@total_ordering
@dataclass(frozen=True, eq=False)
class Release:
    """A release, parsed once. ``3.8`` means exactly ``3.8.0``: it is spelt, matched and sorted
    as ``3.8.0`` everywhere (gate, scan, orchestrate, accepted changes).

    >>> str(Release.parse("3.8"))
    '3.8.0'
    >>> Release.parse("3.8") == Release.parse("3.8.0")
    True
    >>> sorted(Release.parse(t) for t in ["3.10.0", "3.9.0", "3.9.0rc1"])
    [Release('3.9.0rc1'), Release('3.9.0'), Release('3.10.0')]
    >>> Release.parse("3.8").matches("3.8.*")
    True
    """

    version: Version

    @classmethod
    def parse(cls, text: object, where: str = "release") -> Release:
        """The release ``text`` names; ``where`` (an argument, a file and key) is named if not."""
        if isinstance(text, Release):
            return text
        if not isinstance(text, str):
            raise ReleaseError(f"{where}: expected a release string X.Y.Z, got {text!r}")
        try:
            version = Version(text.strip())
        except InvalidVersion:
            raise ReleaseError(
                f"{where}: {text!r} is not a release; expected X.Y.Z, e.g. 3.9.0"
            ) from None
        return cls(version)

    def __str__(self) -> str:
        v = self.version
        parts = list(v.release) + [0] * (3 - len(v.release))
        text = ".".join(map(str, parts))
        if v.pre:
            text += f"{v.pre[0]}{v.pre[1]}"
        if v.post is not None:
            text += f".post{v.post}"
        if v.dev is not None:
            text += f".dev{v.dev}"
        if v.local:
            text += f"+{v.local}"
        return text

    def __repr__(self) -> str:
        return f"Release({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Release) and self.version == other.version

    def __lt__(self, other: Release) -> bool:
        return self.version < other.version

    def __hash__(self) -> int:
        return hash(self.version)

    @property
    def final(self) -> Release:
        """The release without pre-, post-, dev- or local parts: ``3.9.0rc1`` -> ``3.9.0``."""
        return Release(Version(self.version.base_version))

    def matches(self, pattern: str) -> bool:
        """Glob over the one spelling (``3.8.*`` matches ``3.8``, spelt ``3.8.0``)."""
        return fnmatch.fnmatchcase(str(self), pattern)


def release_key(text: object) -> tuple[int, Any, str]:
    """The one sort key for release-like text that may not parse (recorded env values).

    Valid releases by version, then any other text by itself, then None.

    >>> sorted(["3.10.0", "3.9.0", "main", None], key=release_key)
    ['3.9.0', '3.10.0', 'main', None]
    """
    if text is None:
        return (2, (), "")
    if isinstance(text, Release):
        return (0, text.version, str(text))
    try:
        return (0, Release.parse(text).version, str(text))
    except ReleaseError:
        return (1, (), str(text))


def names_release(text: object, release: Release) -> bool:
    """Whether ``text`` spells ``release`` (``3.9`` names ``3.9.0``); False for a non-release
    such as ``None`` or ``"main"``, where a comparison of text would say too little.

    >>> names_release("3.9", Release.parse("3.9.0")), names_release(None, Release.parse("3.9"))
    (True, False)
    """
    try:
        return Release.parse(text) == release
    except ReleaseError:
        return False


def parse_releases(value: str, where: str) -> list[Release]:
    """``"3.8, 3.9.0"`` -> ``[Release('3.8.0'), Release('3.9.0')]``; an empty list is refused."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise ReleaseError(f"{where}: expected a comma-separated list of releases, got {value!r}")
    return [Release.parse(v, where) for v in items]


def run_id(triton: Release | str, numpy: Release | str, suffix: str = "") -> str:
    """The id of a matrix cell and the stem of its raw file.

    >>> run_id(Release.parse("3.9"), "2.4.6")
    'triton-3.9.0-numpy-2.4.6'
    >>> run_id("3.6.0", "2.5.2", "gpu-h200")
    'triton-3.6.0-numpy-2.5.2-gpu-h200'
    """
    text = f"triton-{Release.parse(triton)}-numpy-{Release.parse(numpy)}"
    return f"{text}-{suffix}" if suffix else text


# -------------------------------------------------------------------------------------- columns

BACKENDS = ("interpret", "aot", "gpu")


@dataclass(frozen=True, order=True)
class Column:
    """Where a probe ran: a backend and, for ``aot``/``gpu``, a target. One spelling.

    >>> str(Column("aot", "cuda:90")), str(Column("interpret", None))
    ('aot:cuda:90', 'interpret')
    >>> Column.parse("gpu:cuda:90")
    Column(backend='gpu', target='cuda:90')
    """

    backend: str
    target: str | None = None

    def __str__(self) -> str:
        return self.backend if self.target is None else f"{self.backend}:{self.target}"

    @property
    def label(self) -> str:
        return str(self)

    @classmethod
    def parse(cls, text: str) -> Column:
        backend, _, target = text.partition(":")
        if backend not in BACKENDS:
            raise ValueError(f"column {text!r}: expected one of {BACKENDS}, optionally :target")
        return cls(backend, target or None)


# A numpy as a column holds it: text, or None where the column has no interpreter numpy.
_Numpy = TypeVar("_Numpy", bound=str | None)


def pair_numpy(base: Iterable[_Numpy], cand: Iterable[_Numpy]) -> list[tuple[_Numpy, _Numpy]]:
    """Which numpy of one release's interpreter cells is compared with which of another's.

    The interpreter's numerics come from numpy, so the same numpy on both sides where there is
    one; otherwise the newest of each.

    >>> pair_numpy(["1.26.4", "2.4.6"], ["2.4.6", "2.5.2"])
    [('2.4.6', '2.4.6')]
    >>> pair_numpy(["1.26.4"], ["2.5.2"])
    [('1.26.4', '2.5.2')]
    """
    b, c = set(base), set(cand)
    shared = sorted(b & c, key=release_key)
    if shared:
        return [(n, n) for n in shared]
    if b and c:
        return [(max(b, key=release_key), max(c, key=release_key))]
    return []


# ------------------------------------------------------------------------------------- statuses

# Three tables, one per kind of status a raw file holds, each word with what it means. Code
# compares against these names and asks the predicates below, never spells a word itself
# (tests/test_layout.py looks for stray literals).

# A probe result's statuses that every probe shares (its own: matrix/probes/<name>/probe.toml).
# ``error`` means only that the probe itself broke; a release refusing code is ``rejected``
# (or a probe's own refusal word).
RESULT_STATUSES = {
    "pass": "the check held (right numbers)",
    "fail": "the check did not hold (wrong numbers; the detail gives the worst case)",
    "skipped": "not observed: a tool outside Triton is missing, or the probe does not apply",
    "error": "not observed: the probe itself broke (an unexpected exception in our code)",
    "crashed": "the child process died (a signal or an exit code) while the probe ran",
    "timeout": "the probe ran past its time limit and was killed",
}
PASS, FAIL, SKIPPED, ERROR, CRASHED, TIMEOUT = RESULT_STATUSES
# Statuses any probe may end with besides its own (the results contract: matrix/results/).
COMMON_STATUSES = (SKIPPED, ERROR, CRASHED, TIMEOUT)
# Statuses that mean "this check did not work" wherever they appear.
FAILURE_STATUSES = frozenset({FAIL, ERROR, CRASHED, TIMEOUT})
# Statuses that mean "nothing was observed": the probe did not get to look.
NO_OBSERVATION_STATUSES = frozenset({SKIPPED, ERROR, CRASHED, TIMEOUT})


def is_observation(status: str) -> bool:
    """Whether a result with ``status`` saw something of Triton (a crash or a hang is what a
    kernel would see too; it is not counted here: the probe did not get to look).

    >>> is_observation("removed"), is_observation("skipped")
    (True, False)
    """
    return status not in NO_OBSERVATION_STATUSES


# A cell's install statuses (``install.status`` of a raw file; matrix.measure.envs sets them).
INSTALL_STATUSES = {
    "ok": "the cell's environment was built",
    "no-such-release": "the package index has no such Triton release",
    "no-wheel": "the release has no wheel for this Python or platform",
    "failed": "the environment could not be built (the detail says why)",
    # A GPU run's (matrix.measure.gpu_run): not run on that machine, or its preflight failed.
    "skipped": "not run on this machine (the detail says why)",
    "error": "the slim package or its preflight failed on the GPU machine",
}
INSTALL_OK, NO_SUCH_RELEASE, NO_WHEEL, INSTALL_FAILED, INSTALL_SKIPPED, INSTALL_ERROR = (
    INSTALL_STATUSES
)


def install_ok(install: Any) -> bool:
    """Whether a run's ``install`` record (a dict, or anything with ``.status``) says ok.

    >>> install_ok({"status": "ok"}), install_ok({"status": "no-wheel"}), install_ok(None)
    (True, False, False)
    """
    status = (
        install.get("status") if isinstance(install, dict) else getattr(install, "status", None)
    )
    return status == INSTALL_OK


# A team's test outcomes (``tests[].outcome``; matrix.measure.capture records them). The two
# last are the runner's: the process died or hung in that test.
TEST_OUTCOMES = {
    "passed": "the test passed",
    "failed": "the test failed",
    "error": "setup, teardown or collection failed",
    "skipped": "the test skipped itself",
    "xfailed": "failed, as it was marked to",
    "xpassed": "passed though marked to fail (not strict)",
    "crashed": "the suite's process died in this test",
    "timeout": "the test ran past its time limit",
}
(TEST_PASSED, TEST_FAILED, TEST_ERROR, TEST_SKIPPED, TEST_XFAILED, TEST_XPASSED, TEST_CRASHED,
 TEST_TIMEOUT) = TEST_OUTCOMES  # fmt: skip
# Outcomes the gate counts as a test not working ("xpassed-strict": pytest's strict xpass).
FAILED_TEST_OUTCOMES = frozenset({TEST_FAILED, TEST_ERROR, TEST_CRASHED, TEST_TIMEOUT,
                                  "xpassed-strict"})  # fmt: skip


def passed_test(outcome: object) -> bool:
    """Whether a test record (or its outcome word) passed."""
    if isinstance(outcome, dict):
        outcome = outcome.get("outcome")
    return outcome == TEST_PASSED


# A captured kernel's compile statuses (``kernel_compiles[].status``; matrix.backends.kernels).
# Only ``compiled`` and ``rejected`` are Triton behaviour; the common result statuses above
# (skipped, error, crashed, timeout) mean the compile was not observed.
COMPILE_STATUSES = {
    "compiled": "the release compiled the kernel for the target",
    "rejected": "the release refused the kernel (its compiler's error is the evidence)",
}
COMPILED, REJECTED = COMPILE_STATUSES

# ----------------------------------------------------------------------------------- data files


class DataFileError(InputError):
    """A data file is missing, unreadable or malformed: names the file, the key, the expectation.

    >>> str(DataFileError("matrix/data/pinned.toml", "triton.release", "a release X.Y.Z", 3))
    'matrix/data/pinned.toml: triton.release: expected a release X.Y.Z, got 3'
    """

    def __init__(self, path: object, key: str, expected: str, got: object = ...) -> None:
        self.path, self.key, self.expected = str(path), key, expected
        text = f"{path}: {key}: expected {expected}" if key else f"{path}: expected {expected}"
        if got is not ...:
            text += f", got {got!r}"
        super().__init__(text)


def load_toml(path: str | Path) -> dict[str, Any]:
    """A TOML data file as a dict; a missing, unreadable or invalid file is a DataFileError."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise DataFileError(path, "", f"a readable file ({e.strerror or e})") from e
    except tomllib.TOMLDecodeError as e:
        raise DataFileError(path, "", f"valid TOML ({e})") from e


def table_keys(path: str | Path, where: str, table: Any, keys: Collection[str]) -> dict[str, Any]:
    """``table`` if it is a table whose keys are all among ``keys``; else a DataFileError.

    >>> table_keys("f.toml", "row[0]", {"a": 1}, {"a", "b"})
    {'a': 1}
    >>> table_keys("f.toml", "row[0]", {"c": 1}, {"a", "b"})
    Traceback (most recent call last):
    matrix.core.DataFileError: f.toml: row[0]: expected only the keys ['a', 'b'], got ['c']
    """
    if not isinstance(table, dict):
        raise DataFileError(path, where, "a table", table)
    unknown = set(table) - set(keys)
    if unknown:
        raise DataFileError(path, where, f"only the keys {sorted(keys)}", sorted(unknown))
    return table


def tables_at(path: str | Path, key: str) -> list[Any]:
    """The ``[[key]]`` tables of data file ``path`` (none: an empty list); anything else under
    ``key`` is a DataFileError."""
    rows = load_toml(path).get(key, [])
    if not isinstance(rows, list):
        raise DataFileError(path, key, f"[[{key}]] tables", rows)
    return rows


def text_at(
    path: str | Path, where: str, table: dict[str, Any], key: str, what: str = "a non-empty string"
) -> str:
    """The string at ``table[key]``, which must hold more than white space (else DataFileError)."""
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataFileError(path, f"{where}.{key}", what, value)
    return value


def release_at(doc: dict[str, Any], key: str, path: str | Path) -> Release:
    """The release at dotted ``key`` of a loaded data file, parsed (a DataFileError if not)."""
    value: Any = doc
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    try:
        return Release.parse(value, f"{path}: {key}")
    except ReleaseError:
        raise DataFileError(path, key, "a release X.Y.Z", value) from None


# ------------------------------------------------------------------------------------- backends


class AotUnavailable(Exception):
    """The ahead-of-time backend cannot run here (a compiler tool is missing): no observation.

    Recognised by ``isinstance`` wherever a probe must tell "cannot look" from "the release
    refused": it lives here so that probes need not import the backend to recognise it.
    """


# torch dtype name -> Triton type string (what a JIT launch on such a tensor specializes to).
TORCH_TO_TRITON = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8",
    "float8_e5m2fnuz": "fp8e5b16",
}  # fmt: skip
# Launch options that change the compiled code: part of a captured launch's key, and passed
# to the compile when a captured launch is compiled again.
COMPILE_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")

# A captured launch types a (named) tuple argument as this prefix + JSON of its element types
# (matrix.measure.capture writes it, matrix.backends.kernels reads it back for a compile).
TUPLE_PREFIX = "tuple:"

# The Triton types of a Python int argument (by its value); one equal to 1 the JIT specializes.
INT_TYPES = ("i32", "i64", "u64")
