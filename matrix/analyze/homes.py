"""Where each runtime hook, knob, cache setting and driver utility lives, release by release.

``matrix/data/runtime_homes.toml`` names each thing and every path it has had; the API census
(``matrix.analyze.census``) says on which releases each path resolves. From both:

>>> homes = load_homes()                                            # doctest: +SKIP
>>> where(censuses, homes[0])         # {release: (paths present there, ...)}  # doctest: +SKIP
>>> home_of(censuses, "triton.compiler.CompiledKernel.launch_enter_hook").name  # doctest: +SKIP
'launch_enter_hook'
>>> home_text(censuses, home)  # doctest: +SKIP
'triton.compiler.compiler.CompiledKernel.launch_enter_hook on 3.0.0-3.3.1; triton.knobs...'

The table is read by ``matrix.analyze.census`` (``load_homes``), whose diff lists a thing whose
path on one release is gone on the next, with another of its paths there, as "moved"
(``home_moves``): the diff otherwise pairs only names with the same last part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matrix.analyze.census import Api, Census, Home, load_homes


def _identity(api: Api | None) -> str | None:
    """What a resolved path is, whatever re-export reached it: its definition's key and, for a
    member, the member's name (``triton.compiler.CompiledKernel.launch_enter_hook`` and
    ``triton.compiler.compiler.CompiledKernel.launch_enter_hook`` are one)."""
    if api is None:
        return None
    if api.kind in ("method", "property", "value", "attribute") and api.key is not None:
        return f"{api.key}.{api.qualname.rsplit('.', 1)[-1]}"
    return api.key or api.qualname


def where(censuses: Mapping[str, Census], home: Home) -> dict[str, tuple[str, ...]]:
    """``{release: the paths of home present there}`` (empty where none is)."""
    return {
        release: tuple(p for p in home.at if census.status(p) == "present")
        for release, census in censuses.items()
    }


def home_of(censuses: Mapping[str, Census], qualname: str) -> Home | None:
    """The home one of whose paths ``qualname`` is (the same definition on some release)."""
    for home in load_homes():
        if qualname in home.at:
            return home
    for census in censuses.values():
        mine = _identity(census.lookup(qualname))
        if mine is None:
            continue
        for home in load_homes():
            if any(_identity(census.lookup(p)) == mine for p in home.at):
                return home
    return None


def _spans(releases: Sequence[str], chosen: set[str]) -> str:
    runs: list[list[str]] = []
    for i, r in enumerate(releases):
        if r not in chosen:
            continue
        if runs and runs[-1][-1] == releases[i - 1]:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def home_text(censuses: Mapping[str, Census], home: Home) -> str:
    """``A on 3.0.0-3.3.1; B on 3.4.0-3.9.0``: each path and the releases that have it."""
    releases = list(censuses)
    per = where(censuses, home)
    parts = []
    for path in home.at:
        have = {r for r, paths in per.items() if path in paths}
        if have:
            parts.append(f"{path} on {_spans(releases, have)}")
    return "; ".join(parts) if parts else "on no recorded release"
