"""A team's own declaration: the ``[tool.triton-compat]`` table of its ``pyproject.toml``.

What a team knows and the sources cannot say: the element types its kernels' pointer
parameters take, and the targets (columns) its code runs on. Both narrow the gate; neither is
required (with none, every dtype a kernel admits and every column count: fail closed).

.. code-block:: toml

    [tool.triton-compat]
    targets = ["cuda:90"]            # interpret, cuda:80, cuda:90, hip:gfx942, ...

    [tool.triton-compat.dtypes]
    "matmul_kernel" = ["float16", "bfloat16"]   # every pointer parameter of matching kernels
    "*.scale_ptr" = ["float32"]                 # one parameter (glob), any kernel
    "rms_norm_fwd.w_ptr" = ["float32"]          # the most specific key wins
    "dequant.q_ptr" = ["*"]                     # every dtype the code admits (no default)

A kernel glob matches a kernel's name or its qualified name; ``KERNEL.PARAM`` keys beat
``KERNEL`` keys, and among those the longest pattern wins. ``["*"]`` (alone) leaves the
parameter open with every dtype its code admits, fp8 and narrow integers included, instead of
what an undeclared one admits (``matrix.analyze.profile.open_types``): ``"*" = ["*"]`` widens
every kernel.

>>> d = Declaration.parse({"targets": ["cuda:90"], "dtypes": {"mm": ["fp16"],
...                        "mm.scale": ["float32"]}}, "pyproject.toml")
>>> d.targets, d.dtypes_of("mm", "a_ptr"), d.dtypes_of("pkg.mm", "scale")
(('cuda:90',), ('float16',), ('float32',))
>>> d.dtypes_of("other", "a_ptr") is None
True
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from matrix.core import DataFileError

TABLE = "tool.triton-compat"
KEYS = ("targets", "dtypes")
# Triton's element type names; the short spellings teams write are taken as these.
DTYPES = (
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16", "float16",
    "bfloat16", "float32", "float64",
)  # fmt: skip
ALIASES = {
    "fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32",
    "float": "float32", "fp64": "float64", "double": "float64", "bool": "int1",
    "fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "float8_e4m3fn": "float8e4nv",
    "float8_e5m2": "float8e5",
}  # fmt: skip
# A declared ``["*"]``: every dtype the code admits (``dtypes_of`` returns it as is).
WIDE = ("*",)
# A target is the interpreter or a compile target ``cuda:NN`` / ``hip:gfxNNN``.
TARGET = re.compile(r"^(interpret|cuda:\d+|hip:gfx[0-9a-f]+)$")


@dataclass(frozen=True)
class Declaration:
    """What a team declared; ``Declaration()`` is "nothing declared"."""

    targets: tuple[str, ...] | None = None  # None: not declared (every column counts)
    dtypes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = ""  # the file it came from, for messages
    # Without declared targets: what the gate inferred from the team's repository
    # (``matrix.gate.targets``); ``None`` when nothing was inferred (every column counts).
    inferred: InferredTargets | None = None

    @property
    def narrows(self) -> bool:
        """Whether some column is not one the team runs on (declared or inferred)."""
        return self.targets is not None or bool(self.inferred and self.inferred.not_run)

    @classmethod
    def parse(cls, table: Mapping[str, Any], source: str) -> Declaration:
        """Check a ``[tool.triton-compat]`` table; a wrong key or value names it and raises
        ``DataFileError`` (the gate exits 2: a typo must not narrow a verdict)."""
        if not isinstance(table, Mapping):
            raise DataFileError(source, f"[{TABLE}]", "a table", table)
        unknown = sorted(set(table) - set(KEYS))
        if unknown:
            raise DataFileError(source, f"[{TABLE}] {unknown[0]}", f"only the keys {KEYS}", unknown)
        targets = table.get("targets")
        if targets is not None:
            if not isinstance(targets, list) or not targets:
                raise DataFileError(
                    source, f"[{TABLE}] targets", 'a non-empty list such as ["cuda:90"]', targets
                )
            for t in targets:
                if not isinstance(t, str) or not TARGET.match(t):
                    raise DataFileError(
                        source, f"[{TABLE}] targets", "interpret, cuda:NN or hip:gfxNNN", t
                    )
            targets = tuple(dict.fromkeys(targets))
        raw = table.get("dtypes", {})
        if not isinstance(raw, Mapping):
            raise DataFileError(source, f"[{TABLE}.dtypes]", "a table", raw)
        dtypes: dict[str, tuple[str, ...]] = {}
        for key, value in raw.items():
            where = f'[{TABLE}.dtypes] "{key}"'
            if not all(part.strip() for part in key.split(".")):
                raise DataFileError(source, where, "KERNEL or KERNEL.PARAM (globs allowed)")
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not value:
                raise DataFileError(source, where, "a non-empty list of dtypes", value)
            if "*" in value:
                if len(value) > 1:
                    raise DataFileError(source, where, '["*"] alone, or a list of dtypes', value)
                dtypes[key] = WIDE
                continue
            dtypes[key] = tuple(_dtype(v, source, where) for v in value)
        return cls(targets, dtypes, source)

    def dtypes_of(self, kernel: str, param: str) -> tuple[str, ...] | None:
        """The dtypes declared for ``param`` of ``kernel`` (a name or qualified name), or None;
        ``WIDE`` for ``["*"]``."""
        names = {kernel, kernel.rpartition(".")[2]}
        best: tuple[int, int, tuple[str, ...]] | None = None
        for key, types in self.dtypes.items():
            kpat, _, ppat = key.rpartition(".") if "." in key else (key, "", "")
            if ppat and not fnmatchcase(param, ppat):
                continue
            if not any(fnmatchcase(n, kpat) for n in names):
                continue
            rank = (1 if ppat else 0, len(key), types)
            if best is None or rank[:2] > best[:2]:
                best = rank
        return None if best is None else best[2]

    def runs_on(self, column: str) -> bool:
        """Whether a column (``interpret``, ``aot:cuda:90``, ``gpu:cuda:90``) is one the team
        runs on; every column does when no targets were declared."""
        backend, _, target = column.partition(":")
        if self.targets is None:
            return self.inferred is None or (target or backend) not in self.inferred.not_run
        return (target or backend) in self.targets


@dataclass(frozen=True)
class InferredTargets:
    """Targets read off a team's repository when it declares none (``matrix.gate.targets``):
    the columns it shows no sign of running on, why, and the evidence (``file:line``) for the
    columns it keeps."""

    root: str  # the repository folder searched
    not_run: tuple[str, ...] = ()  # columns inferred as not run on (``interpret``)
    why: str = ""  # one line: what was (not) found, for gate.md's first screen
    evidence: tuple[str, ...] = ()  # ``path:line: text`` of each finding that kept a column
    # The folders the interpreter evidence applies to (each top folder of the repository that
    # holds a module setting or reading the variable); empty: the whole repository
    scopes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "not_run": list(self.not_run),
            "why": self.why,
            "evidence": list(self.evidence),
            "scopes": list(self.scopes),
        }


def _dtype(value: object, source: str, where: str) -> str:
    if not isinstance(value, str):
        raise DataFileError(source, where, "dtype names", value)
    name = ALIASES.get(value.strip().lower().removeprefix("tl.").removeprefix("torch."))
    name = name or value.strip().removeprefix("tl.").removeprefix("torch.")
    if name not in DTYPES:
        raise DataFileError(source, where, f"dtypes from {DTYPES}", value)
    return name


def find_pyproject(paths: Sequence[str | Path]) -> Path | None:
    """The first ``pyproject.toml`` holding a ``[tool.triton-compat]`` table, searched from each
    path (a scanned folder or test folder) up to the filesystem root."""
    for start in paths:
        here = Path(start).resolve()
        for folder in (here, *here.parents):
            candidate = folder / "pyproject.toml"
            if candidate.is_file() and _table_of(candidate) is not None:
                return candidate
    return None


def _table_of(path: Path) -> Mapping[str, Any] | None:
    try:
        with path.open("rb") as f:
            doc = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise DataFileError(path, "", f"a readable TOML file ({e})") from None
    table = doc.get("tool", {}).get("triton-compat")
    return table if table is not None else None


def load_declaration(config: str | Path | None, search: Sequence[str | Path] = ()) -> Declaration:
    """The team's declaration: ``config`` (``--config FILE``: a pyproject.toml or a TOML file
    whose top level is the table itself), else the nearest pyproject.toml above ``search``
    with the table, else nothing declared."""
    if config is not None:
        path = Path(config)
        if not path.is_file():
            raise DataFileError(f"--config {config}", "", "a regular file")
        table = _table_of(path)
        if table is None:  # a file that is the table itself
            with path.open("rb") as f:
                table = tomllib.load(f)
        return Declaration.parse(table, str(path))
    found = find_pyproject(search)
    if found is None:
        return Declaration()
    table = _table_of(found)
    return Declaration.parse(table or {}, str(found))
