"""The gate's view of a team's code: its usage profile, and what each finding means for it.

``build_profile`` reads the team's sources (``--scan``, ``--tests``) with the scanner's name
resolution (re-exported ``tl``, relative imports) and types each kernel a test launched by its
captured launches (``matrix.analyze.profile``). ``relevance`` maps one gate finding onto the
profile: used (naming kernel, file:line, test), may affect (an operand not inferable: blocks)
or not used (listed apart, never blocking).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from matrix.analyze import fingerprint
from matrix.analyze.profile import (
    MAY_AFFECT,
    NOT_USED,
    USED,
    HostTypes,
    Launch,
    Match,
    Matcher,
    Profile,
    Use,
    jit_functions,
    load_map,
    profile_module,
    ttir,
)
from matrix.analyze.profile.admits import Admits
from matrix.analyze.profile.context import Context, Helper
from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.host_uses import env_uses, host_name_uses
from matrix.analyze.profile.modules import (
    launch_key,
    module_aliases,
    module_globals,
    plain_functions,
)
from matrix.analyze.profile.promotion import SidedTypes
from matrix.cli import resolved
from matrix.gate import timing
from matrix.gate.compare import GateFinding, Sides, test_finding_name
from matrix.gate.kernel_compiles import coverage_line
from matrix.gate.kernel_compiles import finding_name as kernel_finding_name
from matrix.gate.reach import WORD, Reach
from matrix.gate.shapes import Sites, needed_shape
from matrix.gate.targets import repository_python_files
from matrix.gate.unread import names_into_kernels, names_none, unrecognized_kernels
from matrix.results import Run
from matrix.scan import (
    Imports,
    Project,
    SourceModule,
    imported_files,
    iter_python_files,
    parse_module,
    read_source,
)

T = TypeVar("T")
TEST_PREFIX = test_finding_name("")
KERNEL_PREFIX = kernel_finding_name("")


def _launches_by_file(
    runs: Iterable[Run], tests: Sequence[str]
) -> tuple[dict[str, dict[str, list[Launch]]], list[dict[str, Any]]]:
    """``{resolved kernel file: {kernel name: [Launch]}}`` from every run's captured launches,
    and the launches whose file is not on disk (read from their recorded source, if any)."""
    table: dict[str, dict[str, list[Launch]]] = {}
    elsewhere: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for run in runs:
        suite = (run.extra.get("suite") or {}).get("path")
        for launch in run.extra.get("launches") or []:
            if not isinstance(launch, dict) or "name" not in launch:
                continue
            key = (str(launch.get("key")), str(launch.get("test")))
            if key in seen:
                continue
            seen.add(key)
            item = Launch(
                dict(launch.get("signature") or {}),
                dict(launch.get("constexprs") or {}),
                str(launch.get("test") or ""),
            )
            roots = [Path(t) for t in tests] + ([Path(suite)] if suite else [])
            file = None
            for root in roots:
                candidate = resolved(root / str(launch.get("file", "")))
                if candidate.is_file():
                    file = str(candidate)
                    break
            if file is None:
                elsewhere.append({**launch, "_launch": item})
                continue
            table.setdefault(file, {}).setdefault(str(launch["name"]).split(".")[-1], []).append(
                item
            )
    return table, elsewhere


def build_profile(
    scan: Sequence[str],
    tests: Sequence[str],
    runs: Iterable[Run],
    declaration: Declaration | None = None,
    baseline: str | None = None,
    launches_elsewhere: bool = True,
    candidate: str | None = None,
) -> Profile:
    """The usage profile of the team's code: every file under ``scan`` and ``tests`` read from
    source, each kernel a captured launch ran typed by that launch (and tied to its test),
    else by what the tree's host code passes (with the calls of the repository's files around
    ``scan`` that name a scanned function: targets.toml [callers]), else by the team's
    ``declaration`` of its pointers' dtypes, else left as type variables (the element type of
    ``x_ptr``), each
    admitting the dtypes its code does not rule out (on ``baseline``'s recorded refusals) of
    those tensors carry in practice (``[open_types]``: fp16/bf16/fp32, one 16-bit format per
    launch; ``profile.assumption`` says so).
    ``launches_elsewhere=False``: leave out captured launches of kernels outside ``scan`` and
    ``tests`` (this project's own profile is its kernels/, not a team suite's recorded runs).
    With ``baseline`` and ``candidate``, a binary op's result is typed with the result types
    each recorded (fingerprint types cells), per release where they differ."""
    runs = list(runs)
    declaration = declaration or Declaration()
    dtypes = load_map().dtypes
    # result types from the columns the team runs on only (the interpreter's are its own)
    on = declaration.runs_on
    types = (
        SidedTypes.from_runs(runs, baseline, candidate, dtypes, on)
        if baseline and candidate
        else None
    )
    ctx = Context(declaration, Admits.from_runs(runs, baseline), types)
    launches, elsewhere = _launches_by_file(runs, tests)
    if not launches_elsewhere:
        elsewhere = []
    files = list(dict.fromkeys(str(resolved(p)) for p in iter_python_files([*scan, *tests])))
    if launches_elsewhere:  # (a suite's kernels the raw files name, read from their files)
        files += [f for f in launches if f not in files]
    roots = [*scan, *tests]

    def _show(path: str) -> str:
        return shown_path(path, roots)

    profile = Profile(types=types)
    parsed = _parse(files, profile, _show)
    imported = _imported_helpers(parsed)
    profile.imported = [m.path for m in imported]
    project, kernels = _kernels(parsed, imported, profile, _show)
    host = _host_types(scan, {*files, *profile.imported}, parsed, kernels, profile.sources)
    helpers, plain, aliases = _callables([*parsed, *imported], kernels, project, _show)
    ctx.functions = lambda q: _helper_named(plain, q)
    ctx.aliases = _Named(aliases)
    for m in parsed:
        imports = project.imports(m)
        captured = launches.get(m.path) or {}
        typed: dict[str, list[Launch]] = {}
        for fn in kernels[m.path]:
            # what ran (a captured launch) first; else what the tree's host code passes
            # (every launch site: one that types nothing is a reading with open variables)
            typed[launch_key(fn)] = captured.get(fn.name) or host.launches(fn)
            ints = _int_constexprs(typed[launch_key(fn)])
            held = (_show(m.path), fn.name)
            if held in profile.int_constexprs:  # two definitions of one name: either holds
                had = profile.int_constexprs[held]
                ints = {k: had[k] | ints[k] for k in had.keys() & ints.keys()}
            profile.int_constexprs[held] = ints
        profile.extend(
            profile_module(
                m.tree,
                imports,
                _show(m.path),
                m.source,
                typed,
                kernels=kernels[m.path],
                lookup=lambda q: _helper_named(helpers, q),
                ctx=ctx,
                launched=host.launched,
            )
        )
    profile.reach = Reach(scan, {m.path: m.tree for m in parsed}, kernels,
                          {m.path: _show(m.path) for m in parsed})  # fmt: skip
    profile.interpreted_elsewhere = _interpreted_elsewhere(parsed, declaration, _show)
    # helpers typed per call site replace their own readings (parameters guessed)
    profile.uses = ctx.uses(profile.uses)
    profile.assumed = sorted(ctx.assumed)
    profile.assumption = load_map().open_types.note(len(profile.assumed))
    if types is not None and types.note():
        profile.notes.append(types.note())
    profile.uses += _host_names(parsed, project, kernels, _show)
    for launch in elsewhere:
        profile.extend(_from_recorded_source(launch))
    # what the compiler says the captured kernels ran on types what the source could not
    ttir.refine(profile, ttir.compile_records(runs))
    n = sum(len(v) for by in launches.values() for v in by.values())
    if n or elsewhere:
        profile.sources.append(f"{n + len(elsewhere)} captured launch(es)")
    return profile


def _kernels(
    parsed: Sequence[SourceModule],
    imported: Sequence[SourceModule],
    profile: Profile,
    show: Callable[[str], str],
) -> tuple[Project, dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]]:
    """The project of the read files and each file's ``@triton.jit`` functions (under a jit
    wrapper of the tree's too). Where a read file has a function that looks like a kernel the
    gate does not recognise, the team's modules the imported ones import are read as well (a
    wrapper defined beside the package: Triton-distributed's ``triton_dist.jit``, re-exported
    by ``triton_dist/__init__.py``); one still unrecognised is named in ``profile.unread``."""
    project = Project([*parsed, *imported])
    kernels = {m.path: jit_functions(m.tree, project.imports(m)) for m in [*parsed, *imported]}
    unknown = _unrecognized(parsed, project, kernels, show)
    if unknown:
        have = {Path(m.path).resolve() for m in parsed}
        more = [m for m in _imported_helpers(imported) if Path(m.path).resolve() not in have]
        if more:
            project = Project([*parsed, *imported, *more])
            kernels = {m.path: jit_functions(m.tree, project.imports(m))
                       for m in [*parsed, *imported]}  # fmt: skip
            unknown = _unrecognized(parsed, project, kernels, show)
    profile.unread += unknown
    return project, kernels


def _unrecognized(
    parsed: Sequence[SourceModule],
    project: Project,
    kernels: Mapping[str, Sequence[ast.AST]],
    show: Callable[[str], str],
) -> list[str]:
    return [
        f"{show(m.path)}: {u}"
        for m in parsed
        for u in unrecognized_kernels(m.tree, project.imports(m), kernels[m.path])
    ]


def _interpreted_elsewhere(
    parsed: Sequence[SourceModule], declaration: Declaration, show: Callable[[str], str]
) -> set[str]:
    """The files (as shown) outside the folders where the repository shows interpreter runs,
    where it shows them only in some (``InferredTargets.scopes``); none where it shows them
    everywhere, or shows none."""
    scopes = [Path(f) for f in (declaration.inferred.scopes if declaration.inferred else ())]
    if not scopes:
        return set()
    return {show(m.path) for m in parsed
            if not any(Path(m.path).is_relative_to(f) for f in scopes)}  # fmt: skip


def _host_names(
    parsed: Sequence[SourceModule],
    project: Project,
    kernels: Mapping[str, Any],
    show: Callable[[str], str],
) -> list[Use]:
    """What host code names: variables (fp.env_values) and Triton's hooks."""
    out: list[Use] = []
    for m in parsed:
        lines = m.source.splitlines()
        out += env_uses(m.tree, show(m.path), lines)
        out += host_name_uses(m.tree, project.imports(m).qualname, show(m.path), lines,
                              kernels[m.path])  # fmt: skip
    return out


def _callables(
    modules: Sequence[Any],
    kernels: Mapping[str, Sequence[ast.FunctionDef | ast.AsyncFunctionDef]],
    project: Project,
    show: Callable[[str], str],
) -> tuple[dict[str, list[Helper]], dict[str, list[Helper]], dict[str, list[tuple[str, str]]]]:
    """What a kernel may call, by qualified name: the tree's ``@triton.jit`` helpers, its plain
    functions (evaluated at compile time on a dtype), and module-level aliases of Triton names
    (with the line that binds each)."""
    # every @triton.jit function by qualified name, so a kernel's call of a helper in another
    # file of the tree is followed for what it returns
    helpers: dict[str, list[Helper]] = {}
    # and every plain function, which a kernel may call at compile time on a dtype
    plain: dict[str, list[Helper]] = {}
    for m in modules:
        lines, glob = m.source.splitlines(), module_globals(m.tree)
        names = frozenset(f.name for f in kernels[m.path])
        imports = project.imports(m)
        for fn in kernels[m.path]:
            helpers.setdefault(f"{m.name}.{fn.name}", []).append(
                Helper(fn, imports, glob, show(m.path), lines, names)
            )
        for fn in plain_functions(m.tree, imports):
            plain.setdefault(f"{m.name}.{fn.name}", []).append(
                Helper(fn, imports, glob, show(m.path), lines, names)
            )
    # a module-level name bound to a helper or a Triton function (`softplus = softplus_nv`
    # in one branch of an `if`, `softplus_triton` in the other): a call of it is a call of
    # each (the helpers it may be join its definitions; Triton's are the context's aliases)
    aliases: dict[str, list[tuple[str, str]]] = {}
    for m in modules:
        for name, targets in module_aliases(m.tree, project.imports(m)).items():
            key = f"{m.name}.{name}"
            for target, line in targets:
                if target.startswith("triton."):  # with where it is bound (its guards)
                    aliases.setdefault(key, []).append((target, f"{show(m.path)}:{line}"))
                else:
                    found = [h for h in _helper_named(helpers, target)
                             if h not in helpers.get(key, [])]  # fmt: skip
                    if found:
                        helpers.setdefault(key, []).extend(found)
    return helpers, plain, aliases


_READ_ERRORS = (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError)


def _int_constexprs(launches: Sequence[Launch]) -> dict[str, frozenset[int]]:
    """The integers each constexpr parameter takes where every launch says (its captured
    value, or the host's ``Launch.values``); a parameter one launch leaves open is left out."""
    out: dict[str, frozenset[int]] | None = None
    for launch in launches:
        own = dict(launch.values)
        for k, v in launch.constexprs.items():
            if type(v) is int:
                own[k] = frozenset({v})
        out = own if out is None else {k: out[k] | own[k] for k in out.keys() & own.keys()}
    return out or {}


def _parse(files: Sequence[str], profile: Profile, show: Any) -> list[SourceModule]:
    """Every file parsed as Python reads it (PEP 263 coding line, BOM: the scanner's own
    reader). One that cannot be is named in ``profile.unread`` (its kernels' uses are
    unknown: the gate cannot say SAFE), unless it names nothing a use could reach a kernel
    through (``unread.names_into_kernels``): then in a note."""
    parsed, failed = [], []
    for file in files:
        try:
            parsed.append(parse_module(Path(file), read_source(Path(file))[1]))
        except _READ_ERRORS as e:
            failed.append((file, f"{show(file)}: not read ({type(e).__name__}: {e})"))
    names = names_into_kernels(parsed) if failed else set()
    for file, why in failed:
        if names_none(file, names):
            profile.notes.append(
                f"{why}; it names neither Triton nor anything the read files define or import "
                "from this repository, so nothing in it reaches a kernel"
            )
        else:
            profile.unread.append(why)
    return parsed


def _host_types(
    scan: Sequence[str],
    read: Iterable[str],
    parsed: Sequence[SourceModule],
    kernels: Mapping[str, Any],
    sources: list[str],
) -> HostTypes:
    """What the host code passes each kernel: the read files, and the repository's other
    files that call a function of the scanned ones (for host typing only), named first in
    ``sources``."""
    callers, note = _outside_callers(scan, read, parsed)
    trees = [*((m.tree, kernels[m.path]) for m in parsed), *((m.tree, []) for m in callers)]
    if note:
        sources.insert(0, note)
    return HostTypes(trees, load_map(), [(m.name, m.bindings) for m in [*parsed, *callers]],
                     outside=len(callers))  # fmt: skip


def _outside_callers(
    scan: Sequence[str], read: Iterable[str], parsed: Sequence[SourceModule]
) -> tuple[list[SourceModule], str]:
    """The Python files of the repository around ``scan`` (targets.repository_python_files)
    not read already that name a module-level function or class of the ``parsed`` files: the
    calls that type a wrapper's parameters from outside the scanned folder; and the line the
    profile's sources show ("" for none). A wrapper is typed by the calls of the files read:
    one that cannot be parsed, or past ``[callers] max_files``, is not among them (the
    sources line says how many)."""
    if not scan:
        return [], ""
    names = {
        n.name.encode() for m in parsed for n in m.tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not n.name.startswith("__")
    }  # fmt: skip
    done = {str(resolved(p)) for p in read}
    out: list[SourceModule] = []
    unread = 0
    files, cut = repository_python_files(scan)
    for file in files:
        if str(resolved(file)) in done:
            continue
        try:
            data = file.read_bytes()
            if names.isdisjoint(WORD.findall(data)):
                continue
            out.append(parse_module(file, read_source(file)[1]))
        except _READ_ERRORS:
            unread += 1
    note = f"{len(out)} file(s) outside --scan read for host calls" if out else ""
    if unread:
        note += f"{', ' if note else ''}{unread} outside file(s) not parsed"
    if cut:
        note += f"{', ' if note else ''}the walk for callers stopped at {len(files)} files"
    return out, note


def _imported_helpers(parsed: Sequence[SourceModule]) -> list[SourceModule]:
    """The team's own modules the read files import (compat/descriptors.py beside kernels/):
    their jit functions are helpers a kernel calls, typed per call site, never read as
    kernels of their own (they were not scanned). One that cannot be read leaves its helpers
    unknown, as a helper outside the tree always was (its calls return unknown)."""
    imported = []
    for file in imported_files(parsed):
        try:
            source = read_source(file)[1]
            if "jit" in source:
                imported.append(parse_module(file, source))
        except _READ_ERRORS:
            continue
    return imported


def _helper_named(helpers: Mapping[str, Sequence[T]], q: str) -> list[T]:
    """The helpers a qualified name calls: by the whole name, else by its longest tail that
    names one (``pkg.utils.ext.program_id`` of a tree scanned from inside ``pkg``, whose
    modules are named ``utils.ext``), else the one helper whose name ends with it (a relative
    import resolved without the package's own name: triton_kernels' ``from
    ..numerics_details.flexpoint import float_to_flex``)."""
    found = helpers.get(q)
    if found:
        return list(found)
    parts = q.split(".")
    for i in range(1, len(parts) - 1):
        found = helpers.get(".".join(parts[i:]))
        if found:
            return list(found)
    if len(parts) < 3 or q.startswith("triton."):
        return []  # (a module and a name at least: a bare `f` could end any other name)
    ends = [k for k in helpers if k.endswith("." + q)]
    return list(helpers[ends[0]]) if len(ends) == 1 else []


class _Named(Mapping[str, Sequence[T]]):
    """A table of qualified names read as ``_helper_named`` reads one (by the longest tail
    of a name that the table holds)."""

    def __init__(self, table: Mapping[str, Sequence[T]]) -> None:
        self.table = table

    def __getitem__(self, q: str) -> Sequence[T]:
        found = _helper_named(self.table, q)
        if not found:
            raise KeyError(q)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)


def _from_recorded_source(launch: dict[str, Any]) -> Profile:
    """A launch whose file is not here: read the kernel's own source if the capture recorded
    it (``source``), else say that it could not be read (its changes then may affect it)."""
    text = launch.get("source")
    name = str(launch.get("name", "?"))
    where = str(launch.get("file") or launch.get("kernel") or name)
    if not isinstance(text, str):
        return Profile(notes=[f"kernel {name} ({where}): its file is not here and no source was "
                              "recorded: not in the profile"])  # fmt: skip
    try:  # the scanner's parse, with its limits: a recorded source comes from a results file
        module = parse_module(Path(where), textwrap.dedent(text))
    except (SyntaxError, ValueError) as e:
        # its kernel's uses are unknown, as those of a file that cannot be read
        return Profile(unread=[f"kernel {name} ({where}): recorded source not read: {e}"])
    tree = module.tree
    imports = Imports(module)
    return profile_module(
        tree, imports, where, textwrap.dedent(text), {name.split(".")[-1]: [launch["_launch"]]}
    )


def coverage_text(sides: Sides) -> str:
    """How many captured specializations got a compiler answer, per side, in the words of the
    matrix's console line (``matrix.gate.kernel_compiles.coverage_line`` owns them)."""
    return coverage_line(sides)


def shown_path(path: str | Path, roots: Sequence[str | Path] = ()) -> str:
    """How the gate names a file of the team's code, in uses and in the acknowledgements it
    offers: relative to the current folder where the file lies under it, else relative to the
    folder above the scanned root that holds it (``--scan /abs/src/kern`` gives
    ``kern/a.py``): never a path that only this machine has."""
    file = resolved(path)
    try:
        return file.relative_to(resolved(Path.cwd())).as_posix()
    except ValueError:
        pass
    for root in roots:
        base = resolved(root)
        base = base if base.is_dir() else base.parent
        if file.is_relative_to(base):
            return (Path(base.name) / file.relative_to(base)).as_posix()
    return str(path)


def _split(probe: str) -> tuple[str, str | None]:
    group, bracket, cell = probe.partition("[")
    return (group, cell[:-1]) if bracket and cell.endswith("]") else (probe, None)


def relevance(f: GateFinding, matcher: Matcher, sites: Sites | None = None) -> Match:
    """What ``f`` means for the profiled code (``Match``); with ``sites`` (the team's source),
    a cell that measures one shape of a call keeps only the uses of that shape
    (``matrix.gate.shapes``)."""
    m = _relevance(f, matcher)
    if sites is None or not m.uses or not f.probe.startswith(fingerprint.PREFIX):
        return m
    group, cell = _split(f.probe)
    shape = needed_shape(fingerprint.group_name(group), cell)
    if shape is None:
        return m
    kept = [u for u in m.uses if sites.has_shape(u, shape, m.uses) is not False]
    if not kept:
        return Match(NOT_USED, [], f"no use has the shape {shape} the cell measures")
    return Match(m.status, kept, m.why)


def _relevance(f: GateFinding, matcher: Matcher) -> Match:
    probe = f.probe
    if f.uses:  # the scanner or the census tied it to the team's own lines already
        return Match(USED, [])
    if probe.startswith((TEST_PREFIX, KERNEL_PREFIX)):
        return Match(USED, [], "the team's own test or kernel")
    if probe.startswith(timing.SLOWDOWN_PREFIX):
        impl = probe[len(timing.SLOWDOWN_PREFIX) :].split(" ", 1)[0]
        return matcher.probe(impl)
    if probe.startswith(fingerprint.PREFIX):
        group, cell = _split(probe)
        name = fingerprint.group_name(group)
        if cell is None:  # the group itself did not run on one side
            family = name.split(".")[0]
            hits = [u for u in matcher.profile.uses if u.op.split(".")[0] == family]
            return Match(MAY_AFFECT, hits, "the group did not run") if hits else Match(NOT_USED)
        return matcher.cell(name, cell, f.where)
    return matcher.probe(probe)


__all__ = ["MAY_AFFECT", "NOT_USED", "USED", "build_profile", "relevance"]
