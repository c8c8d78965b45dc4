"""The API census, read: what each release exposes, what changed between two, what works where.

The ``api_surface`` probe (``matrix/probes/api_surface.py``, which documents the document's
shape) records one census per release in ``data["census"]``. This module is its only reader;
it imports only ``matrix.core``, ``matrix.results`` and the probe's ``normal_repr``
(one spelling of a repr, applied again on reading: see ``parse_params``), never Triton.

Load::

    censuses = load_censuses("reports/matrix.json")   # {release: Census}, oldest first
    c = censuses["3.9.0"]                              # also: census_from_runs(runs), Census(doc)
    c.lookup("triton.language.dot")                    # Api (kind, params, file, line) or None
    c.lookup("triton.Config.all_kwargs")               # class members resolve too
    c.status("triton.ops.matmul")                      # "present" | "absent" | "unknown"

Diff two releases (``matrix.analyze.census_diff``; each entry once, with evidence: release,
source file, line)::

    for change in diff(censuses["3.8.0"], censuses["3.9.0"]):
        change.kind        # one of CHANGE_KINDS: removed, moved, signature, default, added, ...
        change.name        # the public name (or environment variable), change.aliases the rest
        change.text        # one line a reader scans
        change.breaking    # code using the old API can stop working (removed, moved, a
                           # parameter removed or made keyword-only, a new required parameter)
        change.evidence    # (Evidence(release, file, line), ...)
    # A class's members are diffed too (member_changes): members gone, a method whose
    # signature changed (CUDABackend.make_ttir +capability), a knob whose descriptor changed;
    # private members and self attributes only where both censuses record them (DEEP_FILES).
    pairs = changes_by_pair(censuses)       # [PairChanges(base, candidate, groups)] per adjacent
                                            # pair; groups are [(heading, [Change])]

Works-on, for the scanner (a call's qualified name, the keywords and the number of positional
arguments it passes)::

    w = works_on(censuses, "triton.testing.do_bench", keywords=("quantiles",), positional=1)
    w.ok            # releases on which the name exists and accepts those arguments
    w.oldest, w.newest, w.per_release[release]    # Support(status, reason, evidence)
    common_range([w, ...])  # (oldest, newest, releases) where every use of a file works
    omitted_defaults(censuses, "triton.Config", passed=("num_warps",))
                    # {param: {release: default repr}} for parameters the call leaves to a
                    # default that differs between releases

Statuses of ``Support``: ``ok``; ``absent`` (the name does not exist there); ``rejects`` (it
exists but refuses a keyword or that many positional arguments); ``unknown`` (that release has
no census, or the module would not import there: not observed, never counted as absent).
Parameters whose names start with ``_`` (``_builder``, ``_semantic``, ``_generator``) are the
compiler's own plumbing: they are kept in the raw data but never diffed or matched.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.core import DATA_DIR, DataFileError, Release, ReleaseError, load_toml, release_key
from matrix.probes.api_surface.probe import normal_repr as _probe_repr
from matrix.results import Run, parse, raw_files, read_json

# A recorded value that names a file of the installed package (a backend's __path__, a lib
# folder) holds the cell's own environment folder, which differs per cell: read from the
# package root on, so that it compares across releases and no page carries this machine's paths.
_SITE = re.compile(r"[^'\"\s\[(]*?/(?:site|dist)-packages/")


def normal_repr(text: str) -> str:
    """The probe's ``normal_repr`` (one definition of a comparable repr), with environment
    folders cut back to the package root (``<site-packages>/triton/backends/amd``)."""
    return _SITE.sub("<site-packages>/", _probe_repr(text))


# An instance's recorded repr names its class: ``<triton.knobs.runtime_knobs object>``.
_INSTANCE = re.compile(r"<([A-Za-z_][\w.]*) object>")
HOMES_PATH = DATA_DIR / "runtime_homes.toml"


@functools.cache
def attribute_types(path: str | Path = HOMES_PATH) -> dict[str, str]:
    """``{"<class key>.<attribute>": "<class key>"}``: what an instance attribute holds, where
    the census cannot see it (``DriverConfig.active`` holds the CUDA driver); from
    ``matrix/data/runtime_homes.toml``'s ``[attribute_types]``."""
    table = load_toml(path).get("attribute_types", {})
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in table.items()
    ):
        raise DataFileError(path, "attribute_types", "a table of class-key strings", table)
    return dict(table)


PROBE = "api_surface"
FORMAT = 1


class CensusError(ValueError):
    """A census document lacks the shape the api_surface probe writes; says which field."""


# -- parameters -------------------------------------------------------------------------------
POSITIONAL_ONLY = "positional-only"
POSITIONAL_OR_KEYWORD = "positional-or-keyword"
VAR_POSITIONAL = "var-positional"
KEYWORD_ONLY = "keyword-only"
VAR_KEYWORD = "var-keyword"


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    default: str | None = None  # the default's repr; None when the parameter has none

    @property
    def required(self) -> bool:
        return self.default is None and self.kind in (
            POSITIONAL_ONLY,
            POSITIONAL_OR_KEYWORD,
            KEYWORD_ONLY,
        )

    @property
    def internal(self) -> bool:
        return self.name.startswith("_")

    def __str__(self) -> str:
        prefix = {VAR_POSITIONAL: "*", VAR_KEYWORD: "**"}.get(self.kind, "")
        return prefix + self.name + ("" if self.default is None else "=" + self.default)


def signature_text(params: Sequence[Param]) -> str:
    """``(x, /, y=1, *, z)``: Python's spelling, markers included."""
    out: list[str] = []
    for i, p in enumerate(params):
        before = params[i - 1].kind if i else None
        if before == POSITIONAL_ONLY and p.kind != POSITIONAL_ONLY:
            out.append("/")
        if p.kind == KEYWORD_ONLY and before not in (KEYWORD_ONLY, VAR_POSITIONAL):
            out.append("*")
        out.append(str(p))
    if params and params[-1].kind == POSITIONAL_ONLY:
        out.append("/")
    return f"({', '.join(out)})"


def parse_params(texts: Sequence[str]) -> tuple[Param, ...]:
    """Read back the probe's spelling: ``["a", "/", "b=1", "*", "c", "**kw"]``. Defaults go
    through the probe's ``normal_repr`` again, so that a census recorded before a rule was
    added there (``constexpr[10]`` is ``10``) compares like one recorded after it."""
    kind = POSITIONAL_ONLY if "/" in texts else POSITIONAL_OR_KEYWORD
    out = []
    for text in texts:
        if text == "/":
            kind = POSITIONAL_OR_KEYWORD
        elif text == "*":
            kind = KEYWORD_ONLY
        elif text.startswith("**"):
            out.append(Param(text[2:], VAR_KEYWORD))
        elif text.startswith("*"):
            out.append(Param(text[1:], VAR_POSITIONAL))
            kind = KEYWORD_ONLY
        else:
            name, eq, default = text.partition("=")
            out.append(Param(name, kind, normal_repr(default) if eq else None))
    return tuple(out)


# -- one release ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Api:
    """One public name of one release, resolved to its definition."""

    qualname: str
    kind: str
    key: str | None = None  # the definition's key (defining module + qualname); None for values
    file: str | None = None
    line: int | None = None
    params: tuple[Param, ...] | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    members: Mapping[str, Any] = field(default_factory=dict)
    value: str | None = None  # a value's repr (a constant, a dtype)
    # What a deep-recorded class's methods set on ``self`` (api_surface.DEEP_FILES).
    attrs: tuple[str, ...] = ()

    @property
    def public_params(self) -> tuple[Param, ...]:
        return tuple(p for p in (self.params or ()) if not p.internal)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "(no source file)"


@dataclass(frozen=True)
class Evidence:
    release: str
    file: str | None
    line: int | None

    def __str__(self) -> str:
        where = self.file or "(no source file)"
        return f"{self.release} {where}" + (f":{self.line}" if self.line else "")


class Census:
    """The census of one release (the probe's ``data["census"]``)."""

    def __init__(self, doc: Mapping[str, Any], where: str = "census") -> None:
        for key, typ in (("version", str), ("modules", dict), ("defs", dict), ("env", dict)):
            if not isinstance(doc.get(key), typ):
                raise CensusError(
                    f"{where}.{key}: expected {typ.__name__}, got {type(doc.get(key)).__name__}"
                )
        if doc.get("format") != FORMAT:
            raise CensusError(f"{where}.format: expected {FORMAT}, got {doc.get('format')!r}")
        self.doc = doc
        # One spelling of the release (3.9 and 3.9.0 are one): matrix.core.Release's.
        self.release: str = spelling(doc["version"])
        self.modules: Mapping[str, Any] = doc["modules"]
        self.defs: Mapping[str, Any] = doc["defs"]
        self.env: Mapping[str, Any] = doc["env"]

    def __repr__(self) -> str:
        return f"Census({self.release!r})"

    def module_ok(self, modname: str) -> bool:
        return self.modules.get(modname, {}).get("status") == "ok"

    def _api(self, qualname: str, ref: Any) -> Api:
        if isinstance(ref, str):
            d = self.defs.get(ref, {"kind": "uninspectable"})
            params = d.get("params")
            return Api(
                qualname,
                d.get("kind", "uninspectable"),
                ref,
                d.get("file"),
                d.get("line"),
                None if params is None else parse_params(params),
                {k: normal_repr(v) for k, v in (d.get("fields") or {}).items()},
                d.get("members") or {},
                attrs=tuple(d.get("attrs") or ()),
            )
        if ref.get("kind") == "module":
            entry = self.modules.get(ref.get("module", ""), {})
            # value: the module it names (tl.math -> triton.language.math)
            return Api(qualname, "module", None, entry.get("file"), None, value=ref.get("module"))
        text = ref.get("repr")
        return Api(
            qualname, ref.get("kind", "value"), value=None if text is None else normal_repr(text)
        )

    def names(self) -> dict[str, Api]:
        """Every public name, qualified (``triton.language.dot``), resolved."""
        out = {}
        for modname, entry in self.modules.items():
            for name, ref in (entry.get("names") or {}).items():
                if isinstance(ref, dict) and ref.get("kind") == "missing":
                    continue  # listed in __all__ but not defined: nobody can use it
                out[f"{modname}.{name}"] = self._api(f"{modname}.{name}", ref)
        return out

    def _split(self, qualname: str) -> tuple[str | None, list[str]]:
        """The longest recorded module prefix of ``qualname`` and the attribute path after it."""
        parts = qualname.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in self.modules:
                return ".".join(parts[:i]), parts[i:]
        return None, parts

    def resolve(self, qualname: str, _depth: int = 0) -> tuple[Api | None, str, str]:
        """``(api, status, reason)``: status ``present`` (with the Api), ``absent`` (the census
        saw where it would be and it is not there) or ``unknown`` (the census cannot tell: the
        module would not import, is not one the census walks, or the name is an attribute of
        a value or of a C++ binding, whose members are not recorded)."""
        modname, rest = self._split(qualname)
        if modname is None:
            return None, "unknown", f"{qualname}: outside the modules the census records"
        entry = self.modules[modname]
        if entry.get("status") == "missing":
            return None, "absent", f"{modname} does not exist on {self.release}"
        if entry.get("status") != "ok":
            error = entry.get("error", "")[:160]
            return None, "unknown", f"{modname} does not import on {self.release}: {error}"
        if not rest:
            return Api(qualname, "module", None, entry.get("file"), None), "present", ""
        ref = (entry.get("names") or {}).get(rest[0])
        if ref is None or (isinstance(ref, dict) and ref.get("kind") == "missing"):
            shadowed = self._shadowing_instance(modname, rest, _depth)
            if shadowed is not None:
                return shadowed
            return None, "absent", f"{modname}.{rest[0]} does not exist on {self.release}"
        api = self._api(f"{modname}.{rest[0]}", ref)
        if api.kind == "module" and rest[1:]:
            # A submodule reached as an attribute (tl.math, triton.runtime.jit).
            target = ref["module"]
            if target not in self.modules or _depth > 3:
                return None, "unknown", f"{target}: a module whose names the census does not record"
            return self.resolve(".".join([target, *rest[1:]]), _depth + 1)
        if api.kind == "value" and len(rest) > 1:
            # An instance bound in a module (triton.knobs.runtime, triton.runtime.driver): its
            # members are its class's, when the census records that class.
            api = self._instance_class(api) or api
        return self.resolve_members(api, rest[1:])

    def resolve_members(self, api: Api, members: Sequence[str]) -> tuple[Api | None, str, str]:
        """Resolve attribute ``members`` from ``api`` (a class, or an attribute whose class
        runtime_homes.toml names): what ``resolve`` does after a module's name."""
        for member in members:
            if api.kind in ("attribute", "property", "value") and api.key is not None:
                # what an attribute holds, where runtime_homes.toml says (driver.active)
                held = attribute_types().get(f"{api.key}.{api.qualname.rsplit('.', 1)[-1]}")
                if held is not None and isinstance(self.defs.get(held), dict):
                    api = self._api(api.qualname, held)
            if api.kind != "class" or not (api.file or "").endswith(".py"):
                return None, "unknown", f"{api.qualname}.{member}: attributes of a {api.kind} " \
                    "defined outside Python source are not recorded"  # fmt: skip
            if member not in api.members and member in api.attrs:
                # Set on self by the class's methods: present, nothing more is known.
                api = Api(f"{api.qualname}.{member}", "attribute", api.key, api.file, api.line)
                continue
            if member not in api.members:
                return None, "absent", f"{api.qualname} has no {member} on {self.release}"
            raw = api.members[member]
            if isinstance(raw, list):
                params = parse_params(raw)
                if params and params[0].name in ("self", "cls"):
                    params = params[1:]  # called bound: x.to(...), Config.all_kwargs()
                api = Api(f"{api.qualname}.{member}", "method", api.key, api.file, api.line, params)
            else:
                api = Api(
                    f"{api.qualname}.{member}",
                    "property" if raw == "property" else "value",
                    api.key,
                    api.file,
                    api.line,
                    value=normal_repr(raw["value"])
                    if isinstance(raw, dict) and "value" in raw
                    else None,
                )
        return api, "present", ""

    def _instance_class(self, api: Api) -> Api | None:
        """The class Api of an instance value (``<triton.knobs.runtime_knobs object>``), when
        the census records that class; None otherwise."""
        match = _INSTANCE.fullmatch(api.value or "")
        key = match.group(1) if match else None
        if key is None or not isinstance(self.defs.get(key), dict):
            return None
        found = self._api(api.qualname, key)
        return found if found.kind == "class" else None

    def _shadowing_instance(
        self, modname: str, rest: list[str], depth: int
    ) -> tuple[Api | None, str, str] | None:
        """``triton.runtime.driver.active``: the package binds ``driver`` to an instance, which
        hides the submodule of that name for attribute access (``from triton.runtime import
        driver``); resolve through the instance when the module itself has no such name."""
        parent, _, last = modname.rpartition(".")
        ref = (self.modules.get(parent, {}).get("names") or {}).get(last)
        if not isinstance(ref, dict) or ref.get("kind") != "value" or depth > 3:
            return None
        api = self._instance_class(self._api(modname, ref))
        if api is None:
            return None
        found = self.resolve_members(api, rest)
        return found if found[1] == "present" else None

    def lookup(self, qualname: str) -> Api | None:
        """The public name (a module, a module's name, or a class member), or None."""
        return self.resolve(qualname)[0]

    def status(self, qualname: str) -> str:
        """``present``, ``absent`` or ``unknown`` (see ``resolve``)."""
        return self.resolve(qualname)[1]


def spelling(release: str) -> str:
    """``3.9`` -> ``3.9.0`` (matrix.core.Release's spelling); text that is no release as is."""
    try:
        return str(Release.parse(release))
    except ReleaseError:
        return release


def census_from_runs(runs: Iterable[Run], release: str) -> Census | None:
    """The census recorded for ``release`` (``3.9`` or ``3.9.0``) in any of ``runs``."""
    for run in runs:
        if run.triton is None or spelling(run.triton) != spelling(release):
            continue
        for r in run.results:
            if r.probe == PROBE and r.status == "recorded" and "census" in r.data:
                return Census(r.data["census"], f"{run.id}: {PROBE}.data.census")
    return None


def censuses_from_runs(runs: Iterable[Run]) -> dict[str, Census]:
    """Every release's census, oldest release first."""
    runs = list(runs)
    releases = {spelling(r.triton) for r in runs if r.triton}
    found = {v: census_from_runs(runs, v) for v in releases}
    return {v: c for v, c in sorted(found.items(), key=lambda kv: release_key(kv[0])) if c}


def absent_on(censuses: Mapping[str, Any] | None, release: object, qualname: str) -> bool:
    """Whether ``release``'s census (of ``censuses``, by release) says ``qualname`` does not
    exist there (False where no census is recorded or the name is empty)."""
    census = (censuses or {}).get(str(release))
    return bool(qualname) and census is not None and census.status(qualname) == "absent"


def load_censuses(path: str | Path) -> dict[str, Census]:
    """From a results file (``reports/matrix.json`` or one raw file) or a folder of raw files;
    a bare census document (a fixture) is accepted too."""
    path = Path(path)
    files = raw_files(path) if path.is_dir() else [path]
    out: dict[str, Census] = {}
    for f in files:
        doc = read_json(f)
        if isinstance(doc, dict) and "runs" in doc:
            out.update(censuses_from_runs(parse(doc, str(f))))
        else:
            c = Census(doc, str(f))
            out[c.release] = c
    return dict(sorted(out.items(), key=lambda kv: release_key(kv[0])))


# -- where runtime hooks and knobs live (runtime_homes.toml) ------------------------------
@dataclass(frozen=True)
class Home:
    """One thing host code reaches (a hook, a knob) and every path it has had, oldest first."""

    name: str
    what: str
    at: tuple[str, ...]


@functools.cache
def load_homes(path: str | Path = HOMES_PATH) -> tuple[Home, ...]:
    """The ``[[home]]`` tables of ``matrix/data/runtime_homes.toml`` (each thing host code
    reaches and every path it has had); a DataFileError names the row and key at fault.
    ``matrix.analyze.homes`` answers questions about them."""
    rows = load_toml(path).get("home")
    if not isinstance(rows, list) or not rows:
        raise DataFileError(path, "home", "one or more [[home]] tables", rows)
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) != {"name", "what", "at"}:
            raise DataFileError(path, f"home[{i}]", "a table with name, what and at", row)
        at = row["at"]
        if (
            not isinstance(at, list)
            or not at
            or not all(isinstance(a, str) and a.startswith("triton.") for a in at)
        ):
            raise DataFileError(path, f"home[{i}].at", "a list of triton.* paths", at)
        out.append(Home(str(row["name"]), str(row["what"]), tuple(at)))
    return tuple(out)


# -- works on ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Support:
    status: str  # ok | absent | rejects | unknown
    reason: str = ""
    evidence: Evidence | None = None


def accepts(api: Api, keywords: Iterable[str] = (), positional: int = 0) -> str:
    """Why ``api`` refuses a call with these arguments, or "" when it accepts them."""
    if api.params is None:
        return ""  # no signature recorded (a value, a C++ object): nothing to refuse on
    params = api.public_params
    # A keyword passed by name is checked against every parameter, the compiler's plumbing
    # included: code that hands ``_builder=`` to a builtin works exactly where the builtin
    # still takes ``_builder`` (3.4.0 renamed it ``_semantic``).
    every = api.params
    kw_ok = {p.name for p in every if p.kind in (POSITIONAL_OR_KEYWORD, KEYWORD_ONLY)}
    var_kw = any(p.kind == VAR_KEYWORD for p in params)
    bad = [k for k in keywords if k not in kw_ok and not var_kw]
    if bad:
        return f"no keyword {', '.join(bad)} (signature: {signature_text(params)})"
    slots = [p for p in params if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)]
    if positional > len(slots) and not any(p.kind == VAR_POSITIONAL for p in params):
        return f"takes at most {len(slots)} positional arguments, {positional} given"
    return ""


def support(
    census: Census | None, qualname: str, keywords: Iterable[str] = (), positional: int = 0
) -> Support:
    if census is None:
        return Support("unknown", "no API census recorded for this release")
    api, status, reason = census.resolve(qualname)
    if api is None:
        evidence = Evidence(census.release, None, None) if status == "absent" else None
        return Support(status, reason, evidence)
    why = accepts(api, tuple(keywords), positional)
    ev = Evidence(census.release, api.file, api.line)
    return Support("rejects", why, ev) if why else Support("ok", "", ev)


@dataclass(frozen=True)
class WorksOn:
    qualname: str
    per_release: dict[str, Support]

    @property
    def ok(self) -> list[str]:
        return [r for r, s in self.per_release.items() if s.status == "ok"]

    @property
    def oldest(self) -> str | None:
        return self.ok[0] if self.ok else None

    @property
    def newest(self) -> str | None:
        return self.ok[-1] if self.ok else None

    def failing(self) -> dict[str, Support]:
        """Releases where the name is absent or refuses the arguments (unknown left out)."""
        return {r: s for r, s in self.per_release.items() if s.status in ("absent", "rejects")}


def works_on(
    censuses: Mapping[str, Census | None],
    qualname: str,
    keywords: Iterable[str] = (),
    positional: int = 0,
) -> WorksOn:
    """On which releases ``qualname`` exists and accepts these arguments (oldest first)."""
    keywords = tuple(keywords)
    ordered = sorted(censuses, key=release_key)
    return WorksOn(
        qualname, {r: support(censuses[r], qualname, keywords, positional) for r in ordered}
    )


def omitted_defaults(
    censuses: Mapping[str, Census | None],
    qualname: str,
    passed: Iterable[str] = (),
    positional: int = 0,
) -> dict[str, dict[str, str]]:
    """Parameters a call leaves to their defaults (neither passed by keyword nor covered by
    the first ``positional`` slots) whose default, or ``triton.Config({})``-style field value,
    differs between the releases where the name exists: ``{param: {release: repr}}``."""
    passed = set(passed)
    seen: dict[str, dict[str, str]] = defaultdict(dict)
    for release in sorted(censuses, key=release_key):
        c = censuses[release]
        api = c.lookup(qualname) if c else None
        if api is None:
            continue
        slots = [
            p.name for p in api.public_params if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)
        ][:positional]
        for p in api.public_params:
            if p.default is not None and p.name not in passed and p.name not in slots:
                seen[p.name][release] = p.default
        for name, value in api.fields.items():
            if name not in passed and name not in slots:
                seen.setdefault(name, {})
                seen[name].setdefault(release, value)
    return {k: v for k, v in sorted(seen.items()) if len(set(v.values())) > 1}


def common_range(works: Iterable[WorksOn]) -> tuple[str | None, str | None, list[str]]:
    """For a file's uses: ``(oldest, newest, releases)`` where every one of them works
    (exists and accepts its arguments), oldest first; (None, None, []) when no release does.
    A release where any use is ``unknown`` is not counted: the census cannot vouch for it."""
    works = list(works)
    if not works:
        return None, None, []
    releases = [r for r in works[0].per_release if all(w.per_release.get(r) and
                                                        w.per_release[r].status == "ok"
                                                        for w in works)]  # fmt: skip
    return (releases[0], releases[-1], releases) if releases else (None, None, [])
