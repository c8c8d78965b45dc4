"""What changed between two censuses: every API change from one release to the next.

A change is named once (a definition's aliases folded in), in the order a reader upgrading wants
them (CHANGE_KINDS: what breaks first), with the evidence (file, line) on each side. The census
itself, what one release's API is, is ``matrix.analyze.census``.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from matrix.analyze.census import (
    POSITIONAL_ONLY,
    POSITIONAL_OR_KEYWORD,
    Api,
    Census,
    Evidence,
    Param,
    load_homes,
    normal_repr,
    parse_params,
    signature_text,
)
from matrix.core import release_key

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


@dataclass
class _Changes:
    """The changes found so far from ``base`` to ``cand``; ``add`` records one, its first name
    leading and the others its aliases."""

    base: str
    cand: str
    items: list[Change] = field(default_factory=list)

    def add(
        self,
        kind: str,
        names: list[str],
        text: str,
        evidence: Iterable[Evidence],
        breaking: bool = False,
        params: Iterable[str] = (),
    ) -> None:
        self.items.append(
            Change(
                kind,
                names[0],
                text,
                self.base,
                self.cand,
                tuple(evidence),
                breaking,
                tuple(names[1:]),
                tuple(params),
            )
        )


def diff(old: Census, new: Census) -> list[Change]:
    """Every API change from ``old`` to ``new``, each named once (aliases folded in)."""
    out = _Changes(old.release, new.release)
    _module_changes(old, new, out)
    old_names, new_names = _compared_names(old, new)
    _names_gone_or_new(old, new, old_names, new_names, out)
    _definition_changes(old, new, old_names, new_names, out)
    _env_changes(old, new, out)
    # Hooks, knobs and driver utilities that moved to a path of another name
    # (CompiledKernel.launch_enter_hook -> triton.knobs.runtime.launch_enter_hook): the pairs
    # are data (matrix/data/runtime_homes.toml).
    out.items.extend(home_moves(old, new))

    order = {k: i for i, k in enumerate(CHANGE_KINDS)}
    return sorted(out.items, key=lambda c: (order[c.kind], c.module, c.name, c.text))


def _module_changes(old: Census, new: Census, out: _Changes) -> None:
    """One entry for a module that appeared, went or broke, none for each of its names."""
    base, cand = old.release, new.release
    for modname in sorted(set(old.modules) | set(new.modules)):
        a, b = old.modules.get(modname), new.modules.get(modname)
        a_ok, b_ok = old.module_ok(modname), new.module_ok(modname)
        a_missing = a is None or a.get("status") == "missing"
        b_missing = b is None or b.get("status") == "missing"
        if a_ok and b_missing:
            out.add(
                "module-removed",
                [modname],
                f"{modname} no longer exists",
                [Evidence(base, (a or {}).get("file"), None)],
                breaking=True,
            )
        elif a_missing and b_ok:
            out.add(
                "module-added",
                [modname],
                f"{modname} is new",
                [Evidence(cand, (b or {}).get("file"), None)],
            )
        elif a_ok != b_ok and not (a_missing or b_missing):
            bad, side = (b, cand) if a_ok else (a, base)
            out.add(
                "import",
                [modname],
                f"{modname} fails to import on {side}: {(bad or {}).get('error', '')[:160]}",
                [Evidence(side, None, None)],
                breaking=a_ok,
            )


def _compared_names(old: Census, new: Census) -> tuple[dict[str, Api], dict[str, Api]]:
    """The public names of each side that are diffed as names."""
    old_names, new_names = old.names(), new.names()
    # A submodule bound as an attribute (triton.tools.tensor_descriptor, tl.semantic.math) comes
    # and goes with what ``import triton`` happens to load; the module's own entry says whether
    # it exists, so such bindings are not diffed as names.
    recorded = set(old.modules) & set(new.modules)

    def api_names(names: dict[str, Api]) -> dict[str, Api]:
        return {q: a for q, a in names.items() if not (a.kind == "module" and a.value in recorded)}

    return api_names(old_names), api_names(new_names)


def _names_gone_or_new(
    old: Census, new: Census, old_names: dict[str, Api], new_names: dict[str, Api], out: _Changes
) -> None:
    """Names removed, moved or added. A name is compared only where its module imports on both
    sides: a module that went, came or broke has its one entry (``_module_changes``)."""
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
            out.add(
                "moved",
                group,
                f"{group[0]} -> {', '.join(targets)}",
                [_ev(old, api), _ev(new, dest)],
                breaking=True,
            )
        else:
            out.add(
                "removed", group, f"{group[0]} ({api.kind}) removed", [_ev(old, api)], breaking=True
            )
    for group in _by_definition(new, new_names, [q for q in added if q not in moved_to]):
        api = new_names[group[0]]
        out.add("added", group, f"{group[0]} ({api.kind}) added", [_ev(new, api)])


def _definition_changes(
    old: Census, new: Census, old_names: dict[str, Api], new_names: dict[str, Api], out: _Changes
) -> None:
    """Kind, signature, default, member and value changes of the names on both sides."""
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
            out.add(
                "signature",
                names,
                f"{q}: {a.kind} -> {b.kind}",
                ev,
                breaking=b.kind not in ("function", "builtin", "jit", "class") or a.kind == "class",
            )
        if a.params is not None and b.params is not None:
            notes, breaking, touched = _signature_changes(a, b)
            if notes:
                out.add("signature", names, f"{q}({', '.join(notes)})", ev, breaking, touched)
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
                    out.add(
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
                out.add(
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
                out.add(kind, [f"{q}.{m}" for m in members] + names[1:], text, ev, breaking)
        if a.kind == "value" and b.kind == "value" and a.value != b.value:
            out.add("default", names, f"{q} = {a.value} -> {b.value}", ev)


def _env_changes(old: Census, new: Census, out: _Changes) -> None:
    """Environment variables read on one side only."""
    base, cand = old.release, new.release
    # Environment variables; those only Triton's own test runner and CI read are kept apart.
    for var in sorted(set(old.env) - set(new.env)):
        site = (old.env[var].get("sites") or [[None, None]])[0]
        private = bool(old.env[var].get("private", False))
        # Only the Python source is scanned: the C++ side may still read it (say so).
        text = f"{var} is no longer read by the Python source"
        kind = "env-private" if private else "env-removed"
        out.add(kind, [var], text, [Evidence(base, *site)], breaking=not private)
    for var in sorted(set(new.env) - set(old.env)):
        site = (new.env[var].get("sites") or [[None, None]])[0]
        knobs = new.env[var].get("knobs")
        text = f"{var} is read" + (f" (knob {', '.join(knobs)})" if knobs else "")
        kind = "env-private" if new.env[var].get("private", False) else "env-added"
        out.add(kind, [var], text, [Evidence(cand, *site)])


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
