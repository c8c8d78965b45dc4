"""Which recorded runs the gate compares: the runs of a release, and of both sides the runs
that installed, with what every other run means for the verdict."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from matrix.core import Release, ReleaseError, install_ok
from matrix.gate.sides import Sides
from matrix.results import Run


def runs_for(runs: Iterable[Run], release: Release | str) -> list[Run]:
    """The runs of ``release`` (``3.9`` is ``3.9.0``: the runs were parsed when read)."""
    wanted = Release.parse(release)
    return [r for r in runs if r.release == wanted]


@dataclass
class Selection:
    """The runs of both sides that installed (``sides``), and what the others mean."""

    sides: Sides
    errors: list[str] = field(default_factory=list)
    undecidable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The numpy of each side's cells that did not install: what they mean is said above, so
    # ``compare`` does not count their missing columns again.
    uninstalled: dict[str, set[str]] = field(
        default_factory=lambda: {"baseline": set(), "candidate": set()}
    )


def _install_text(run: Run) -> str:
    detail = " ".join(str(run.install.get("detail", "")).split())
    status = run.install.get("status")
    return f"install status {status!r}" + (f" ({detail[:300]})" if detail else "")


def select_runs(
    base_runs: Sequence[Run], cand_runs: Sequence[Run], baseline: Release, candidate: Release
) -> Selection:
    """Keep the runs that installed; decide what every other run means for the verdict.

    - no run at all, no run that installed, an incomplete cell, or an installed cell with no
      results: an error (exit 2), on either side;
    - a candidate cell that did not install where the baseline's cell with the same numpy did:
      undecidable (the candidate cannot be installed where the baseline could);
    - a cell that did not install on the baseline (or on both sides): a note, since the
      baseline never worked there and nothing is lost by upgrading.
    """
    installed: dict[str, list[Run]] = {"baseline": [], "candidate": []}
    sel = Selection(Sides(installed["baseline"], installed["candidate"], baseline, candidate))
    for side, release, runs in (
        ("baseline", baseline, base_runs),
        ("candidate", candidate, cand_runs),
    ):
        if not runs:
            sel.errors.append(
                f"no results for the {side} Triton {release}: no run has env.triton == '{release}'"
            )
            continue
        ok = [r for r in runs if install_ok(r.install)]
        for run in ok:
            if not run.complete:
                sel.errors.append(
                    f"{side} run {run.id!r}: incomplete cell (complete: false); rerun it"
                )
            elif not run.results and "tests" not in run.extra:
                sel.errors.append(f"{side} run {run.id!r}: installed but recorded no results")
            problem = _numpy_problem(run)
            if problem:
                sel.errors.append(f"{side} run {run.id!r}: {problem}")
        if not ok:
            failed = "; ".join(f"{r.id!r}: {_install_text(r)}" for r in runs)
            sel.errors.append(f"the {side} Triton {release} did not install in any cell: {failed}")
        installed[side].extend(ok)

    base_numpys = {str(r.env.get("numpy")) for r in installed["baseline"]}
    for side, runs in (("baseline", base_runs), ("candidate", cand_runs)):
        sel.uninstalled[side] = {str(r.env.get("numpy")) for r in runs if not install_ok(r.install)}
    for run in base_runs:
        if not install_ok(run.install):
            sel.notes.append(
                f"baseline cell {run.id!r} did not install ({_install_text(run)}): nothing to "
                "compare there"
            )
    for run in cand_runs:
        if install_ok(run.install):
            continue
        numpy = str(run.env.get("numpy"))
        if numpy in base_numpys:
            sel.undecidable.append(
                f"candidate cell {run.id!r} did not install ({_install_text(run)}), but the "
                f"baseline {baseline} installed with numpy {numpy}"
            )
        else:
            sel.notes.append(
                f"candidate cell {run.id!r} did not install ({_install_text(run)}); the baseline "
                f"has no installed cell with numpy {numpy} either"
            )
    return sel


def _numpy_problem(run: Run) -> str | None:
    """Why a run's ``env.numpy`` cannot place its interpreter results in a column, or None:
    interpreter cells pair by numpy, so a numpy that is not a release would pair with anything."""
    if not any(r.backend == "interpret" for r in run.results) and "tests" not in run.extra:
        return None
    numpy = run.env.get("numpy")
    try:
        Release.parse(numpy, "env.numpy")
    except (ReleaseError, TypeError, AttributeError):
        return (
            f"env.numpy is {numpy!r}, not a numpy release: its interpreter cells pair with nothing"
        )
    return None
