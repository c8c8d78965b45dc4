"""What compiling does to a kernel's values that the interpreter does not.

Triton's code generator makes a Python scalar bound to a name a 0-d tensor
(``m = float("-inf")`` is an fp32 tensor: ``visit_Assign`` -> ``_sanitize_target_value`` ->
``semantic.to_tensor``), and refuses a loop whose carried value leaves the body with another
type than it entered with (``_verify_loop_carried_variable``). The interpreter runs the body as
Python: a bound scalar stays a Python number and nothing checks a loop's types. So each rule
holds only where the team's targets leave the interpreter out (declared, or inferred from its
repository); where the interpreter may be a target, a bound scalar is either and no loop
narrows a type variable (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from matrix.analyze.profile.model import ELEM_DTYPES, Val, base_of, cand_of, per_side

# What a Python scalar becomes when a kernel binds it to a name (or a tl function takes it:
# ``tl.log2(math.e)``): a 0-d tensor, a float fp32, an int int32, a bool int1, typed from then on
# as a run-time argument of that dtype is (``arg_f32``). An annotated ``x: tl.constexpr = ...``
# stays a constexpr.
BOUND_SCALARS = {
    "lit_float": "arg_f32", "cx_float": "arg_f32", "lit_int": "arg_i32", "cx_int": "arg_i32",
    "lit_bool": "int1",
}  # fmt: skip
RUNTIME_DTYPE = {"arg_f32": "float32", "arg_i32": "int32", "arg_i64": "int64"}


def tensor_of(kinds: frozenset[str]) -> frozenset[str] | None:
    """The dtypes of a compiled tensor of ``kinds`` (a run-time scalar argument is a 0-d
    tensor); None where some kind is a Python scalar or not a dtype."""
    out = {RUNTIME_DTYPE.get(k, k) for k in kinds}
    return frozenset(out) if out and out <= ELEM_DTYPES else None


def bound(v: Val, interpret: bool) -> Val:
    """``v`` as a name holds it after an assignment: a Python scalar is a 0-d tensor when
    compiled, and also still a Python scalar where the team runs the interpreter (``interpret``:
    it does, or may)."""
    if v.items is not None:
        return replace(v, items=tuple(bound(i, interpret) for i in v.items))
    if v.pointer or v.dtype is not False or v.kinds is None:
        return v
    if not any(k in BOUND_SCALARS for k in cand_of(v).kinds or v.kinds):
        return v

    def kinds(ks: frozenset[str]) -> frozenset[str]:
        out = {BOUND_SCALARS.get(k, k) for k in ks}
        return frozenset(out | ks) if interpret else frozenset(out)

    def one(x: Val) -> Val:
        if x.kinds is None:
            return x
        per = tuple((d, kinds(ks)) for d, ks in x.per) if x.per is not None else None
        return replace(x, kinds=kinds(x.kinds), per=per)

    return per_side(one, v)


def carried_mismatches(entry: Mapping[str, Val], env: Mapping[str, Val]) -> dict[str, set[str]]:
    """The dtypes of each type variable under which a value a loop carries (in ``entry`` before
    the loop, in ``env`` after its body) leaves the body, on the baseline, with a dtype other
    than the tensor it entered as: dtypes the compiled code is never run with."""
    out: dict[str, set[str]] = {}
    for name, before in entry.items():
        after = base_of(env.get(name, before))
        start = tensor_of(base_of(before).kinds or frozenset())
        if start is None or before.vars or after.pointer or len(after.vars) != 1:
            continue
        for d, ks in after.per or ():
            if ks and ks <= ELEM_DTYPES and not ks & start:
                out.setdefault(next(iter(after.vars)), set()).add(d)
    return out


def carried_types(entry: Mapping[str, Val], env: Mapping[str, Val]) -> dict[str, Val]:
    """The values a loop carries that its body leaves untyped (``out = out + tl.histogram(...)``
    after ``out = tl.zeros(..., tl.int32)``), as they entered: compiled code whose carried
    value changes type does not compile, so a tensor of known dtypes (no type variable) keeps
    them round the loop."""
    out: dict[str, Val] = {}
    for name, before in entry.items():
        after = env.get(name)
        if after is None or after is before or after.kinds is not None or after.pointer:
            continue
        if before.vars or before.cand is not None or before.pointer or before.items is not None:
            continue
        if before.kinds and before.kinds <= ELEM_DTYPES:
            out[name] = before
    return out
