"""The value a wrapper's name has at a launch where its function assigns it under ``if`` tests
of a dtype, read in statement order, per dtype the test is about (``host_tokens.pick``):

    compute_dtype = out.dtype
    if input.dtype == torch.float16 or input.dtype == torch.bfloat16:
        compute_dtype = torch.float32

is float32 for an fp16 or bf16 input and ``out``'s dtype otherwise, not "any of the two". Used
by the host reader (``host.py``) only where every binding of the name is such an assignment
(at the top level, or in the branches of top-level ``if`` statements) and some test is about
a dtype; anything else (a loop, a ``with``, a tuple target) keeps the host reader's own
reading (every assignment's value joined)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from matrix.analyze.profile.host_tokens import Tested, pick

UNBOUND = ""  # the name holds nothing yet (never a value: a dtype name or a token)
# an assignment's value given the name's value before it (``x = x.contiguous()``: that one)
Assigned = Callable[[ast.Assign | ast.AnnAssign, str | None], str | None]
# what a test says per dtype, given the name's value before it
Test = Callable[[ast.expr, str | None], Tested | bool | None]


def assigns(s: ast.stmt, name: str) -> bool:
    """``name = value`` (one plain target)."""
    if isinstance(s, ast.Assign):
        return len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and (
            s.targets[0].id == name)  # fmt: skip
    return isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == name


def branched(
    body: Sequence[ast.stmt], name: str, start: str | None, until: int, assigned: Assigned,
    test: Test,
) -> tuple[str | None, set[int], bool]:  # fmt: skip
    """The value of ``name`` after ``body`` up to line ``until`` (0: all of it), from ``start``
    (UNBOUND: none yet); the assignments read (their ids); whether a test was about a dtype."""
    covered: set[int] = set()
    split = False

    def walk(stmts: Sequence[ast.stmt], cur: str | None) -> str | None:
        nonlocal split
        for s in stmts:
            if until and s.lineno > until:
                break  # after the launch: not what it passes
            if assigns(s, name):
                covered.add(id(s))
                cur = assigned(s, cur)  # type: ignore[arg-type]
            elif isinstance(s, ast.If) and any(
                assigns(n, name) for n in ast.walk(s) if isinstance(n, ast.stmt)
            ):
                said = test(s.test, None if cur == UNBOUND else cur)
                split |= said is not None
                then, orelse = walk(s.body, cur), walk(s.orelse, cur)
                if UNBOUND in (then, orelse):  # bound on one path only: the other's value
                    cur = orelse if then == UNBOUND else then
                else:
                    cur = pick(said, then, orelse)
        return cur

    return walk(body, start), covered, split
