"""What the baseline release refuses: the combinations code that runs on it cannot be doing.

A fingerprint cell ``fp.binary.lt[float8e5,lit_int]`` that is ``rejected`` in every column the
baseline was measured in (interpreter, compile targets, GPU) is a combination no kernel that
works on the baseline performs. The type inference uses it to narrow a type variable: if
``x = tl.load(x_ptr)`` is compared with ``x < 0``, the element type of ``x_ptr`` is none of the
dtypes for which the baseline refuses that comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from matrix.analyze.fingerprint import PREFIX
from matrix.core import REJECTED, Release
from matrix.results import Run

# The usage ops whose fingerprint group is spelt as the op (``binary.lt``) or as its family
# (``where``); their cells are ``OPERAND,OPERAND`` (``unary.*``: one operand).
OPS = ("binary.", "binary_fn.", "binary_int_fn.", "unary.")
FAMILY_OPS = ("where",)


class Admits:
    """The cells the baseline rejects in every column it measured them in."""

    def __init__(self, rejected: Iterable[tuple[str, str]] = (), release: str = "") -> None:
        self.rejected = frozenset(rejected)
        self.release = release

    @classmethod
    def from_runs(cls, runs: Iterable[Run], release: str | None) -> Admits:
        """From the runs of ``release`` among ``runs`` (nothing when it is None or absent)."""
        if not release:
            return cls()
        want = Release.parse(release, "--baseline")
        seen: dict[tuple[str, str], bool] = {}  # cell -> rejected in every column so far
        for key, status, _ in release_cells(runs, want, OPS, FAMILY_OPS):
            seen[key] = seen.get(key, True) and status == REJECTED
        return cls((k for k, v in seen.items() if v), str(want))

    def rejects(self, op: str, operands: tuple[str, ...]) -> bool:
        """Whether the baseline refuses ``op`` on exactly these operand kinds everywhere."""
        return (op, ",".join(operands)) in self.rejected

    def __bool__(self) -> bool:
        return bool(self.rejected)


def release_cells(
    runs: Iterable[Run], want: Release, ops: tuple[str, ...], family_ops: tuple[str, ...]
) -> Iterator[tuple[tuple[str, str], object, str]]:
    """Every fingerprint cell ``((group, case), status, column)`` that ``want``'s runs
    recorded (each column's: ``interpret``, ``aot:cuda:90``, ``gpu:cuda:90``), in the groups
    whose names start with one of ``ops`` or are in ``family_ops``."""
    for run in runs:
        if run.triton is None or run.release != want:
            continue
        for r in run.results:
            group = r.probe[len(PREFIX) :] if r.probe.startswith(PREFIX) else ""
            if not (group.startswith(ops) or group in family_ops):
                continue
            cells = r.data.get("cells") if isinstance(r.data, dict) else None
            if isinstance(cells, dict):
                column = f"{r.backend}:{r.target}" if r.target else r.backend
                for case, status in cells.items():
                    yield (group, str(case)), status, column
