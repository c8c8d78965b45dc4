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

Diff two releases (each entry once, with evidence: release, source file, line)::

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
import itertools
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


# -- what changed -----------------------------------------------------------------------------
# In the order a reader upgrading wants them: what breaks first.
CHANGE_KINDS = (
    "module-removed",
    "removed",
    "moved",
    "signature",
    "default",
    "env-removed",
    "module-added",
    "added",
    "env-added",
    "import",
    "env-private",
)
HEADINGS = {
    "module-removed": "Modules removed",
    "removed": "Names removed",
    "moved": "Names moved",
    "signature": "Signatures changed",
    "default": "Defaults changed",
    "env-removed": "Environment variables no longer read (by the Python source)",
    "module-added": "Modules added",
    "added": "Names added",
    "env-added": "Environment variables newly read",
    "import": "Modules that import on one side only with an error",
    "env-private": "Environment variables only Triton's private modules read (its own tests, CI)",
}


@dataclass(frozen=True)
class Change:
    kind: str
    name: str
    text: str
    base: str
    candidate: str
    evidence: tuple[Evidence, ...]
    breaking: bool = False
    aliases: tuple[str, ...] = ()
    # For signature and default changes: the parameters concerned.
    params: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        return self.name.rsplit(".", 1)[0] if "." in self.name else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "aliases": list(self.aliases),
            "text": self.text,
            "breaking": self.breaking,
            "params": list(self.params),
            "evidence": [str(e) for e in self.evidence],
        }


def _module_of(qualname: str, census: Census) -> str:
    return census._split(qualname)[0] or ""


def _name_order(census: Census, names: Mapping[str, Api]) -> Any:
    """Which of a definition's names leads: the shortest (tl.dot before tl.core.dot), then the
    one in the module that defines it (tools.tensor_descriptor.TensorDescriptor, not the
    tools.ragged_tma re-export), then alphabetical."""

    def key(q: str) -> tuple[int, bool, str]:
        home = census.modules.get(_module_of(q, census), {}).get("file")
        return (q.count("."), home != names[q].file, q)

    return key


def _by_definition(
    census: Census, names: Mapping[str, Api], keep: Iterable[str]
) -> list[list[str]]:
    """Group qualified names that are one definition (tl.dot and tl.core.dot), leader first."""
    groups: dict[str, list[str]] = defaultdict(list)
    for q in keep:
        api = names[q]
        groups[api.key or f"value:{q}"].append(q)
    order = _name_order(census, names)
    return sorted((sorted(g, key=order) for g in groups.values()), key=lambda g: g[0])


def _ev(census: Census, api: Api) -> Evidence:
    return Evidence(census.release, api.file, api.line)


def _signature_changes(old: Api, new: Api) -> tuple[list[str], bool, list[str]]:
    """What differs between two signatures, parameter by parameter; whether code written
    for the old one can break (a parameter removed, made keyword-only or positional-only,
    reordered among positionals, or a new one without a default); the parameters concerned."""
    o = {p.name: p for p in old.public_params}
    n = {p.name: p for p in new.public_params}
    notes, breaking, touched = [], False, []
    for name in o.keys() - n.keys():
        notes.append(f"-{o[name]}")
        touched.append(name)
        breaking = True
    for name in n.keys() - o.keys():
        notes.append(f"+{n[name]}")
        touched.append(name)
        if n[name].required:
            breaking = True
    for name in o.keys() & n.keys():
        if o[name].kind != n[name].kind:
            notes.append(f"{name}: {o[name].kind} -> {n[name].kind}")
            touched.append(name)
            breaking = True
    positional = [
        p.name for p in old.public_params if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)
    ]
    positional_new = [
        p.name for p in new.public_params if p.kind in (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)
    ]
    shared = [p for p in positional if p in positional_new]
    if shared != [p for p in positional_new if p in positional]:
        notes.append("positional order changed")
        breaking = True
    return sorted(notes), breaking, sorted(touched)


def diff(old: Census, new: Census) -> list[Change]:
    """Every API change from ``old`` to ``new``, each named once (aliases folded in)."""
    changes: list[Change] = []
    base, cand = old.release, new.release

    def add(
        kind: str,
        names: list[str],
        text: str,
        evidence: Iterable[Evidence],
        breaking: bool = False,
        params: Iterable[str] = (),
    ) -> None:
        changes.append(
            Change(
                kind,
                names[0],
                text,
                base,
                cand,
                tuple(evidence),
                breaking,
                tuple(names[1:]),
                tuple(params),
            )
        )

    # Modules: one entry for a module that appeared or went, none for each of its names.
    gone_modules, new_modules = set(), set()
    for modname in sorted(set(old.modules) | set(new.modules)):
        a, b = old.modules.get(modname), new.modules.get(modname)
        a_ok, b_ok = old.module_ok(modname), new.module_ok(modname)
        a_missing = a is None or a.get("status") == "missing"
        b_missing = b is None or b.get("status") == "missing"
        if a_ok and b_missing:
            gone_modules.add(modname)
            add(
                "module-removed",
                [modname],
                f"{modname} no longer exists",
                [Evidence(base, (a or {}).get("file"), None)],
                breaking=True,
            )
        elif a_missing and b_ok:
            new_modules.add(modname)
            add(
                "module-added",
                [modname],
                f"{modname} is new",
                [Evidence(cand, (b or {}).get("file"), None)],
            )
        elif a_ok != b_ok and not (a_missing or b_missing):
            bad, side = (b, cand) if a_ok else (a, base)
            add(
                "import",
                [modname],
                f"{modname} fails to import on {side}: {(bad or {}).get('error', '')[:160]}",
                [Evidence(side, None, None)],
                breaking=a_ok,
            )

    # A name is compared only where its module imports on both sides; a module that went,
    # came or broke has its one entry above.
    old_names, new_names = old.names(), new.names()
    # A submodule bound as an attribute (triton.tools.tensor_descriptor, tl.semantic.math) comes
    # and goes with what ``import triton`` happens to load; the module's own entry says whether
    # it exists, so such bindings are not diffed as names.
    recorded = set(old.modules) & set(new.modules)

    def api_names(names: dict[str, Api]) -> dict[str, Api]:
        return {q: a for q, a in names.items() if not (a.kind == "module" and a.value in recorded)}

    old_names, new_names = api_names(old_names), api_names(new_names)
    removed = [q for q in old_names.keys() - new_names.keys() if new.module_ok(_module_of(q, old))]
    added = [q for q in new_names.keys() - old_names.keys() if old.module_ok(_module_of(q, new))]

    # Moved: a name gone from one module that appears, newly, under the same leaf elsewhere.
    added_by_leaf: dict[str, list[str]] = defaultdict(list)
    for q in added:
        added_by_leaf[q.rsplit(".", 1)[1]].append(q)
    moved_to: set[str] = set()
    for group in _by_definition(old, old_names, removed):
        leaf = group[0].rsplit(".", 1)[1]
        api = old_names[group[0]]
        targets = sorted(
            (q for q in added_by_leaf.get(leaf, ()) if new_names[q].kind == api.kind),
            key=lambda q: (q.count("."), q),
        )
        if targets:
            moved_to.update(targets)
            dest = new_names[targets[0]]
            add(
                "moved",
                group,
                f"{group[0]} -> {', '.join(targets)}",
                [_ev(old, api), _ev(new, dest)],
                breaking=True,
            )
        else:
            add(
                "removed", group, f"{group[0]} ({api.kind}) removed", [_ev(old, api)], breaking=True
            )
    for group in _by_definition(new, new_names, [q for q in added if q not in moved_to]):
        api = new_names[group[0]]
        add("added", group, f"{group[0]} ({api.kind}) added", [_ev(new, api)])

    # Changed: once per definition pair, whatever number of public names reach it.
    seen: set[tuple[str | None, str | None]] = set()
    both = sorted(old_names.keys() & new_names.keys(), key=_name_order(new, new_names))
    aliases_of: dict[tuple[str | None, str | None], list[str]] = defaultdict(list)
    for q in both:
        a, b = old_names[q], new_names[q]
        aliases_of[(a.key or q, b.key or q)].append(q)
    for q in both:
        a, b = old_names[q], new_names[q]
        pair = (a.key or q, b.key or q)
        if pair in seen:
            continue
        seen.add(pair)
        names = aliases_of[pair]
        ev = [_ev(old, a), _ev(new, b)]
        said: set[tuple[str, str | None, str | None]] = set()
        if a.kind != b.kind:
            add(
                "signature",
                names,
                f"{q}: {a.kind} -> {b.kind}",
                ev,
                breaking=b.kind not in ("function", "builtin", "jit", "class") or a.kind == "class",
            )
        if a.params is not None and b.params is not None:
            notes, breaking, touched = _signature_changes(a, b)
            if notes:
                add("signature", names, f"{q}({', '.join(notes)})", ev, breaking, touched)
            # A field that comes or goes with its parameter (+num_ctas=1) is said there.
            for p in a.public_params:
                if p.name not in b.fields and p.name in touched:
                    said.add((p.name, a.fields.get(p.name), None))
            for p in b.public_params:
                if p.name not in a.fields and p.name in touched:
                    said.add((p.name, None, b.fields.get(p.name)))
            o = {p.name: p for p in a.public_params}
            for p in b.public_params:
                if p.name in o and o[p.name].default != p.default and p.kind == o[p.name].kind:
                    said.add((p.name, o[p.name].default, p.default))
                    add(
                        "default",
                        names,
                        f"{q}: {p.name} default {o[p.name].default} -> {p.default}",
                        ev,
                        breaking=False,
                        params=[p.name],
                    )
        for name in sorted(set(a.fields) | set(b.fields)):
            if (name, a.fields.get(name), b.fields.get(name)) in said:
                continue  # the same change as the parameter's default: named once
            if a.fields.get(name) != b.fields.get(name):
                add(
                    "default",
                    names,
                    f"{q}: field {name} {a.fields.get(name, '(none)')} -> "
                    f"{b.fields.get(name, '(none)')}",
                    ev,
                    params=[name],
                    breaking=name not in b.fields,
                )
        if (a.file or "").endswith(".py") and (b.file or "").endswith(".py"):
            # (a C++ binding's members are its binding library's: not compared)
            for change in member_changes(q, a, b):
                kind, members, text, breaking = change
                add(kind, [f"{q}.{m}" for m in members] + names[1:], text, ev, breaking)
        if a.kind == "value" and b.kind == "value" and a.value != b.value:
            add("default", names, f"{q} = {a.value} -> {b.value}", ev)

    # Environment variables; those only Triton's own test runner and CI read are kept apart.
    for var in sorted(set(old.env) - set(new.env)):
        site = (old.env[var].get("sites") or [[None, None]])[0]
        private = bool(old.env[var].get("private", False))
        # Only the Python source is scanned: the C++ side may still read it (say so).
        text = f"{var} is no longer read by the Python source"
        kind = "env-private" if private else "env-removed"
        add(kind, [var], text, [Evidence(base, *site)], breaking=not private)
    for var in sorted(set(new.env) - set(old.env)):
        site = (new.env[var].get("sites") or [[None, None]])[0]
        knobs = new.env[var].get("knobs")
        text = f"{var} is read" + (f" (knob {', '.join(knobs)})" if knobs else "")
        kind = "env-private" if new.env[var].get("private", False) else "env-added"
        add(kind, [var], text, [Evidence(cand, *site)])

    # Hooks, knobs and driver utilities that moved to a path of another name
    # (CompiledKernel.launch_enter_hook -> triton.knobs.runtime.launch_enter_hook): the pairs
    # are data (matrix/data/runtime_homes.toml).
    changes.extend(home_moves(old, new))

    order = {k: i for i, k in enumerate(CHANGE_KINDS)}
    return sorted(changes, key=lambda c: (order[c.kind], c.module, c.name, c.text))


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


def home_moves(old: Census, new: Census) -> list[Change]:
    """A "moved" change for each home whose path on ``old`` is gone on ``new`` while another
    of its paths is there: ``launch_enter_hook: CompiledKernel.launch_enter_hook ->
    triton.knobs.runtime.launch_enter_hook``."""
    out = []
    for home in load_homes():
        before = [p for p in home.at if old.status(p) == "present"]
        after = [p for p in home.at if new.status(p) == "present"]
        gone = [p for p in before if new.status(p) == "absent"]
        came = [p for p in after if p not in before]
        if not gone or not came:
            continue
        was, now = old.lookup(gone[0]), new.lookup(came[0])
        evidence = tuple(
            Evidence(c.release, a.file, a.line) for c, a in ((old, was), (new, now)) if a
        )
        out.append(
            Change(
                "moved",
                gone[0],
                f"{home.name}: {gone[0]} -> {came[0]}; {home.what}",
                old.release,
                new.release,
                evidence,
                breaking=True,
                aliases=tuple(gone[1:]),
            )
        )
    return out


def _bound(raw: list[str]) -> tuple[Param, ...]:
    params = parse_params(raw)
    return params[1:] if params and params[0].name in ("self", "cls") else params


def _member_text(raw: Any) -> str:
    if isinstance(raw, list):
        return signature_text(_bound(raw))
    if raw == "property":
        return "property"
    if isinstance(raw, dict) and "knob" in raw:
        default = f", default {normal_repr(raw['default'])}" if raw.get("default") else ""
        return f"{raw['knob']}({raw.get('env')}{default})"
    if isinstance(raw, dict) and "value" in raw:
        return f"= {normal_repr(raw['value'])}"
    return "attribute"


def member_changes(q: str, a: Api, b: Api) -> list[tuple[str, list[str], str, bool]]:
    """(kind, members, text, breaking) for a class's members from ``a`` to ``b``: members gone
    (one entry for all of them), and each method whose signature, or member whose kind, knob
    or value changed. A private member (``_bench``) is compared only where both sides record
    them (api_surface.DEEP_FILES); an attribute set on ``self`` counts as a member."""
    deep = bool(a.attrs or any(m.startswith("_") for m in a.members)) and bool(
        b.attrs or any(m.startswith("_") for m in b.members)
    )

    def visible(api: Api) -> dict[str, Any]:
        out: dict[str, Any] = {m: None for m in api.attrs}
        out.update(api.members)
        return {m: r for m, r in out.items() if deep or not m.startswith("_")}

    old, new = visible(a), visible(b)
    out: list[tuple[str, list[str], str, bool]] = []
    gone = sorted(set(old) - set(new))
    if gone:
        text = f"{q}: member{'s' if len(gone) > 1 else ''} {', '.join(gone)} removed"
        out.append(("removed", gone, text, True))
    for m in sorted(set(old) & set(new)):
        ra, rb = old[m], new[m]
        if ra is None or rb is None:
            if (ra is None) != (rb is None) and isinstance(ra or rb, list):
                # an attribute set per instance became a method, or the reverse
                out.append(("signature", [m], f"{q}.{m}: {_member_text(ra)} -> "
                            f"{_member_text(rb)}", True))  # fmt: skip
            continue
        if isinstance(ra, list) and isinstance(rb, list):
            pa, pb = _bound(ra), _bound(rb)
            if pa == pb:
                continue
            old_api = Api(f"{q}.{m}", "method", params=pa)
            new_api = Api(f"{q}.{m}", "method", params=pb)
            notes, breaking, _ = _signature_changes(old_api, new_api)
            defaults = [
                f"{p.name} default {o.default} -> {p.default}"
                for p in new_api.public_params
                for o in old_api.public_params
                if o.name == p.name and o.default != p.default and o.kind == p.kind
            ]
            if notes or defaults:
                text = f"{q}.{m}{signature_text(pa)} -> {signature_text(pb)}"
                out.append(("signature" if notes else "default", [m], text, breaking))
        elif isinstance(ra, dict) and isinstance(rb, dict) and "knob" in ra and "knob" in rb:
            if "default" not in ra or "default" not in rb:
                # one side's descriptor kept no default value (3.4.0's is a method)
                ra, rb = {**ra, "default": None}, {**rb, "default": None}
            if ra != rb:
                text = f"{q}.{m}: {_member_text(ra)} -> {_member_text(rb)}"
                out.append(("default", [m], text, ra.get("env") != rb.get("env")))
        elif _member_text(ra) != _member_text(rb):
            kind_changed = isinstance(ra, list) != isinstance(rb, list) or "property" in (ra, rb)
            text = f"{q}.{m}: {_member_text(ra)} -> {_member_text(rb)}"
            out.append(("signature" if kind_changed else "default", [m], text, kind_changed))
    return out


@dataclass(frozen=True)
class PairChanges:
    base: str
    candidate: str
    groups: list[tuple[str, list[Change]]]

    @property
    def count(self) -> int:
        return sum(len(g) for _, g in self.groups)


def group_changes(changes: Iterable[Change]) -> list[tuple[str, list[Change]]]:
    """Changes grouped under a heading per kind, in CHANGE_KINDS order, empty groups left out."""
    by_kind: dict[str, list[Change]] = defaultdict(list)
    for c in changes:
        by_kind[c.kind].append(c)
    return [(HEADINGS[k], by_kind[k]) for k in CHANGE_KINDS if by_kind.get(k)]


def changes_by_pair(censuses: Mapping[str, Census]) -> list[PairChanges]:
    """The grouped API changes of every adjacent pair of releases, oldest pair first."""
    ordered = sorted(censuses.values(), key=lambda c: release_key(c.release))
    return [
        PairChanges(a.release, b.release, group_changes(diff(a, b)))
        for a, b in itertools.pairwise(ordered)
    ]


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
