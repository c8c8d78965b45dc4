"""API pages, caniuse style: one entry per public name of the API census (``api/index.html``,
searchable; the same data in ``api/names.json``).

Per name: the releases where it exists (ranges), each signature change with the release that
made it, the release that removed it, and the scanner rules (``matrix/data/scan_rules.toml``)
that find a use of it: rules that match the name (``call``, ``name``), and the census rules
that report what the census shows changed for it (``census-missing`` where some release lacks
it, ``census-keyword``/``census-positional`` where its parameters changed, ``census-default``
where a default did). One page and one JSON, not a page per name: 1,209 names fit in one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.analyze.census import Census, signature_text
from matrix.core import NO_OBSERVATION_STATUSES, release_key
from matrix.results import Run

TL = "triton.language."
# The fields of a scanner rule (matrix.scan.rules.Rule) that narrow a call to some arguments.
ARGUMENT_CONDITIONS = ("keywords", "any_present", "all_present", "value", "not_values")


@dataclass
class ApiName:
    name: str
    kind: str
    present: list[str]  # releases where it exists
    unknown: list[str]  # releases whose census cannot tell (module did not import)
    changes: list[tuple[str, str, str]] = field(default_factory=list)  # (release, old, new)
    removed_in: str | None = None
    added_in: str | None = None
    rules: list[tuple[str, str]] = field(default_factory=list)  # (rule id, rule name)
    signature: str = ""  # in the newest release that has it
    # Releases where the name exists but a probe of a rule that finds it says using it fails
    # (``block_ptr``: ``removed`` on 3.9.0, where ``tl.make_block_ptr`` raises), with why.
    raises: list[tuple[str, str]] = field(default_factory=list)  # (release, "probe: status")

    @property
    def works(self) -> list[str]:
        """Releases where it exists and no probe says using it fails."""
        broken = {r for r, _ in self.raises}
        return [r for r in self.present if r not in broken]

    @property
    def stops_working(self) -> str | None:
        """The first release from which it is gone or raises, for good (None: it still works)."""
        return self.removed_in or (self.raises[0][0] if self.raises else None)

    @property
    def slug(self) -> str:
        return "n-" + self.name.replace(".", "-")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "present": self.present,
            "unknown": self.unknown,
            "signature_changes": [list(c) for c in self.changes],
            "added_in": self.added_in,
            "removed_in": self.removed_in,
            "rules": [r for r, _ in self.rules],
            "raises": [list(r) for r in self.raises],
            "stops_working": self.stops_working,
        }


def ranges(releases: Sequence[str], present: Sequence[str]) -> str:
    """``3.0.0–3.1.0, 3.3.1–3.9.0``: runs of consecutive recorded releases."""
    have = set(present)
    out, start, prev = [], None, None
    for r in releases:
        if r in have:
            start = start or r
            prev = r
        elif start:
            out.append(start if start == prev else f"{start}–{prev}")
            start = None
    if start:
        out.append(start if start == prev else f"{start}–{prev}")
    return ", ".join(out) or "none"


def _rule_matches(rule: Any, name: str) -> bool:
    kind = getattr(rule, "kind", "")
    if kind in ("call", "dot-acc-dtype"):
        return any(name == TL + c for c in getattr(rule, "calls", ()))
    if kind == "name":
        for n in getattr(rule, "names", ()):
            if n.endswith("."):
                if name.startswith(n):
                    return True
            elif name == n or name.startswith(n + "."):
                return True
    return False


def probe_statuses(runs: Sequence[Run]) -> dict[str, dict[str, set[str]]]:
    """Per probe and release, every status it recorded (any backend, column or numpy)."""
    out: dict[str, dict[str, set[str]]] = {}
    for run in runs:
        for r in run.results:
            out.setdefault(r.probe, {}).setdefault(str(run.triton), set()).add(r.status)
    return out


def _raises(
    rules: Sequence[Any], present: Sequence[str], statuses: Mapping[str, Mapping[str, set[str]]]
) -> list[tuple[str, str]]:
    """The releases of ``present`` where a rule's probe recorded only statuses that rule calls
    breaking (``removed``, ``rejected``, ...; matrix/data/scan_rules.toml): the name is there,
    using it fails. A release whose probe also recorded another status is not counted."""
    # A rule that needs particular arguments (``boundary_check=`` of tl.load) says nothing of
    # the name used without them.
    plain = [
        r for r in rules if all(getattr(r, a, None) in (None, ()) for a in ARGUMENT_CONDITIONS)
    ]
    out: list[tuple[str, str]] = []
    for release in present:
        for rule in plain:
            probe, breaking = getattr(rule, "probe", None), getattr(rule, "breaking", ())
            seen = statuses.get(probe or "", {}).get(release, set()) - NO_OBSERVATION_STATUSES
            if probe and breaking and seen and seen <= set(breaking):
                out.append((release, f"{probe}: {'/'.join(sorted(seen))}"))
                break
    return out


def build_names(
    censuses: Mapping[str, Census],
    rules: Sequence[Any],
    statuses: Mapping[str, Mapping[str, set[str]]] | None = None,
) -> list[ApiName]:
    """Every census name; with ``statuses`` (``probe_statuses``), the releases where a probe
    says using it fails (``ApiName.raises``)."""
    releases = sorted(censuses, key=release_key)
    per_release = {r: censuses[r].names() for r in releases}
    everything = sorted({n for names in per_release.values() for n in names})
    census_rule = {getattr(r, "kind", ""): r for r in rules if str(r.kind).startswith("census-")}
    out = []
    for name in everything:
        present = [r for r in releases if name in per_release[r]]
        unknown = [
            r for r in releases if r not in present and censuses[r].status(name) == "unknown"
        ]
        newest = per_release[present[-1]][name]
        entry = ApiName(name, newest.kind, present, unknown)
        if newest.params is not None:
            entry.signature = signature_text(newest.public_params)
        prev: tuple[str, list[tuple[str, str]]] | None = None  # signature, (name, kind)s
        defaults_changed = params_changed = False
        for r in present:
            api = per_release[r][name]
            if api.params is None:
                continue
            sig = signature_text(api.public_params)
            shape = [(p.name, p.kind) for p in api.public_params]
            if prev is not None and sig != prev[0]:
                entry.changes.append((r, prev[0], sig))
                if shape == prev[1]:
                    defaults_changed = True  # same parameters: only a default moved
                else:
                    params_changed = True
            prev = (sig, shape)
        if present[0] != releases[0]:
            entry.added_in = present[0]
        if present[-1] != releases[-1]:
            after = releases[releases.index(present[-1]) + 1 :]
            gone = [r for r in after if r not in unknown]
            entry.removed_in = gone[0] if gone else None
        matching = [r for r in rules if _rule_matches(r, name)]
        entry.rules = [(r.id, r.name) for r in matching]
        entry.raises = _raises(matching, present, statuses or {})
        wanted = []
        if len(present) + len(unknown) < len(releases):
            wanted.append("census-missing")
        if params_changed:
            wanted += ["census-keyword", "census-positional"]
        if defaults_changed:
            wanted.append("census-default")
        entry.rules += [
            (census_rule[k].id, census_rule[k].name) for k in wanted if k in census_rule
        ]
        out.append(entry)
    return out
