"""The result dtype of a two-operand op, as the baseline and the candidate recorded it.

The fingerprint's ``types`` cells (``fp.binary.add[int8,lit_int]`` = ``int32``,
``fp.binary_fn.maximum[bfloat16,bfloat16]`` = ``fp32``) are exactly each release's promotion
table. The profile types a binary op's result with them, per side: ``tl.maximum`` of two
bfloat16 values is a float32 on 3.8.0 and a bfloat16 on 3.9.0, so what it feeds is typed per
release (``Val.cand``). A combination no release recorded (two scalars, an ``int1`` tensor,
an op the battery does not run) is typed by the profile's fixed rule (``model._promote``) and
named in the profile's notes; a combination a release refuses everywhere gives no result type
there (code that runs on it does not do it), and the fixed rule stands in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from matrix.analyze.profile.admits import release_cells
from matrix.analyze.profile.model import SCALAR_KINDS, Kinds, fixed_result, with_unknown
from matrix.core import REJECTED, Release
from matrix.results import Run

# The usage ops whose fingerprint group is spelt as the op (``binary.add``, ``reduce.max``) or
# as its family (``where``, ``clamp``), each cell ``LEFT,RIGHT`` (one operand: ``float16``)
# with a dtype for status.
OPS = ("binary.", "binary_fn.", "binary_int_fn.", "reduce.", "unary.")
FAMILY_OPS = ("where", "clamp")
BASELINE, CANDIDATE = 0, 1
MAX_NAMED = 3  # operand pairs named per op in the note on unrecorded combinations


class ReleaseTypes:
    """One release's recorded result dtypes: ``(group, "LEFT,RIGHT") -> dtypes`` (every
    column's answer: the interpreter and a compile target may differ), and the cells it
    refused in every column."""

    def __init__(
        self,
        release: str = "",
        results: Mapping[tuple[str, str], frozenset[str]] | None = None,
        refused: Iterable[tuple[str, str]] = (),
        columns: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
    ) -> None:
        self.release = release
        self.results = dict(results or {})
        self.refused = frozenset(refused)
        # each cell's answer per column (``aot:cuda:90`` -> ``float32``), where a question is
        # about one column (``in_column``)
        self.columns = {k: dict(v) for k, v in (columns or {}).items()}

    @classmethod
    def from_runs(
        cls,
        runs: Iterable[Run],
        release: str,
        dtypes: Mapping[str, str],
        runs_on: Callable[[str], bool] | None = None,
    ) -> ReleaseTypes:
        """From the runs of ``release`` among ``runs``; ``dtypes`` spells the cells' dtype
        names as the profile's (``fp32`` -> ``float32``: the usage map's table). ``runs_on``:
        the columns the team's code runs on (a result type only the interpreter gives, for a
        team whose kernels run compiled, types nothing of theirs); None: every column."""
        want = Release.parse(release, "--baseline/--candidate")
        got: dict[tuple[str, str], set[str]] = {}
        columns: dict[tuple[str, str], dict[str, str]] = {}
        seen: set[tuple[str, str]] = set()
        for key, status, column in release_cells(runs, want, OPS, FAMILY_OPS):
            if runs_on is not None and not runs_on(column):
                continue
            seen.add(key)
            name = dtypes.get(str(status))
            if name is not None:
                got.setdefault(key, set()).add(name)
                columns.setdefault(key, {})[column] = name
        refused = seen - set(got)
        return cls(str(want), {k: frozenset(v) for k, v in got.items()}, refused, columns)

    def in_column(self, column: str, op: str, *operands: str) -> str | None:
        """The result dtype recorded for ``op`` on ``operands`` in ``column`` (the mirrored
        operands where only those were recorded, as ``SidedTypes._pair`` reads them); None
        where that column recorded none."""
        for ops in (operands, operands[::-1]):
            found = self.columns.get((op, ",".join(ops)), {}).get(column)
            if found is not None:
                return found
        return None

    def result(self, op: str, *operands: str) -> frozenset[str] | str | None:
        """The recorded result dtypes; ``REJECTED`` where every column refused it; None where
        no cell records it."""
        key = (op, ",".join(operands))
        found = self.results.get(key)
        if found is not None:
            return found
        return REJECTED if key in self.refused else None


class SidedTypes:
    """The baseline's and the candidate's result types, with what the profile typed by the
    fixed rule for want of a recorded cell (``unrecorded``: op -> operand pairs)."""

    def __init__(self, baseline: ReleaseTypes, candidate: ReleaseTypes) -> None:
        self.sides = (baseline, candidate)
        self.unrecorded: dict[str, set[str]] = {}
        self._cache: dict[tuple[str, Kinds, Kinds, int], Kinds] = {}

    @classmethod
    def from_runs(
        cls,
        runs: Iterable[Run],
        baseline: str,
        candidate: str,
        dtypes: Mapping[str, str],
        runs_on: Callable[[str], bool] | None = None,
    ) -> SidedTypes:
        runs = list(runs)
        return cls(
            ReleaseTypes.from_runs(runs, baseline, dtypes, runs_on),
            ReleaseTypes.from_runs(runs, candidate, dtypes, runs_on),
        )

    def release(self, side: int) -> str:
        return self.sides[side].release

    def promote(self, op: str | None, a: Kinds, b: Kinds, side: int) -> Kinds:
        """The result kinds of ``op`` on operands of kinds ``a`` and ``b`` on one side: each
        pair's recorded dtype, else the fixed rule's (unknown where either operand is)."""
        if a is None or b is None:
            return with_unknown(op, a if b is None else b)
        key = (op or "", a, b, side)
        if key in self._cache:
            return self._cache[key]
        out: set[str] = set()
        for x in a:
            for y in b:
                out |= self._pair(op, x, y, side)
        got = frozenset(out)
        self._cache[key] = got
        return got

    def _pair(self, op: str | None, x: str, y: str, side: int) -> frozenset[str]:
        fixed = fixed_result(op, frozenset({x}), frozenset({y}))
        if x in SCALAR_KINDS and y in SCALAR_KINDS:
            return fixed or frozenset()  # two scalars: a scalar kind, which no cell measures
        found = self.sides[side].result(op, x, y) if op else None
        if found is None and op and op != "clamp" and x in SCALAR_KINDS:
            # The battery puts only some scalar kinds on the left (fingerprint.toml
            # lhs_scalars); Triton types a binary op of a tensor and a scalar the same in
            # either order (semantic.py binary_op_type_checking_impl; the committed results
            # agree on every one of their 23,100 mirrored pairs): the mirrored cell.
            found = self.sides[side].result(op, y, x)
        if isinstance(found, frozenset):
            return found
        if found is None:  # nothing recorded: said in the profile's notes, never silently
            self.unrecorded.setdefault(op or "an unmapped operator", set()).add(f"{x},{y}")
        return fixed or frozenset()

    def result1(
        self, op: str, kind: str, side: int, fixed: Callable[[str], frozenset[str]]
    ) -> frozenset[str]:
        """The result dtypes of one-operand ``op`` (``reduce.max``, ``unary.softmax``) on
        ``kind`` on one side: recorded, else ``fixed(kind)``."""
        found = self.sides[side].result(op, kind)
        if isinstance(found, frozenset):
            return found
        if found is None and kind not in SCALAR_KINDS:
            self.unrecorded.setdefault(op, set()).add(kind)
        return fixed(kind)

    def note(self) -> str:
        """What the profile typed by the fixed rule, for its notes ("" where nothing)."""
        if not self.unrecorded:
            return ""
        parts = []
        for op, pairs in sorted(self.unrecorded.items()):
            shown = sorted(pairs)[:MAX_NAMED]
            more = f" and {len(pairs) - len(shown)} more" if len(pairs) > len(shown) else ""
            parts.append(f"{op} [{'; '.join(shown)}{more}]")
        return (
            f"result dtypes typed by the profile's fixed promotion rule where the fingerprint "
            f"of {self.release(BASELINE)} or {self.release(CANDIDATE)} has no cell for the "
            f"operands: " + ", ".join(parts)
        )
