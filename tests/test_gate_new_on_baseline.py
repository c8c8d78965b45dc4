"""What code that runs on the baseline cannot be using never blocks an upgrade: a feature the
probe itself found broken there, and a Triton name the baseline's census does not have
(TransformerEngine's ``tl.make_tensor_descriptor`` where 3.3.1 has only the experimental
spelling: ``tensor_descriptor`` `broken`/`experimental` -> `supported` blocked it)."""

from __future__ import annotations

from matrix.analyze.census import Census
from matrix.core import Release
from matrix.gate.findings import BEHAVIOUR, RELAXATION, Comparison
from matrix.gate.probe_compare import ProbePair, Upgrade, compare_probe, concerned_uses
from matrix.results import Result
from matrix.scan.engine import scan_source
from matrix.scan.rule_file import load_rules

KERNEL = """import triton
import triton.language as tl


@triton.jit
def k(x_ptr, M, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M], strides=[1], block_shape=[BLOCK])
    desc.store([0], desc.load([0]) * 2)
"""
UPGRADE = Upgrade(Release.parse("3.3.1"), Release.parse("3.4.0"))


def _census(release: str, names: list[str]) -> Census:
    doc = {
        "format": 1,
        "version": release,
        "modules": {
            "triton.language": {"status": "ok", "file": "language/__init__.py",
                                "names": {n: f"D{i}" for i, n in enumerate(names)}},
        },
        "defs": {f"D{i}": {"kind": "function", "file": "language/core.py", "line": i + 1,
                           "params": []} for i in range(len(names))},
        "env": {},
    }  # fmt: skip
    return Census(doc, release)


def _uses():
    rules = [r for r in load_rules() if r.probe == "tensor_descriptor"]
    found = [f for f in scan_source(KERNEL, "k.py", rules) if f.rule.probe == "tensor_descriptor"]
    assert found and all(f.qualname == "triton.language.make_tensor_descriptor" for f in found)
    return found


def _row(status: str) -> Result:
    return Result("tensor_descriptor", "aot", "cuda:90", status)


def test_a_use_of_a_name_the_baseline_lacks_is_new_on_the_candidate():
    uses = _uses()
    lacking = {"3.3.1": _census("3.3.1", ["_experimental_make_tensor_descriptor"]),
               "3.4.0": _census("3.4.0", ["make_tensor_descriptor"])}  # fmt: skip
    base, cand = _row("experimental"), _row("supported")
    assert concerned_uses(uses, base, cand, UPGRADE.candidate, lacking, UPGRADE.baseline) == []
    # where the baseline has the name, the use is the change's
    having = {**lacking, "3.3.1": _census("3.3.1", ["make_tensor_descriptor"])}
    kept = concerned_uses(uses, base, cand, UPGRADE.candidate, having, UPGRADE.baseline)
    assert kept == uses


def test_a_status_the_probe_calls_breaking_on_the_baseline_is_a_relaxation():
    uses = _uses()
    out = Comparison()
    pair = ProbePair("tensor_descriptor", "aot:cuda:90", "aot:cuda:90", _row("broken"),
                     _row("supported"), uses)  # fmt: skip
    compare_probe(out, UPGRADE, pair)
    assert [f.kind for f in out.findings] == [RELAXATION]
    # broken, then absent: not a fix, so not a relaxation (the use may have got by before)
    out = Comparison()
    pair = ProbePair("tensor_descriptor", "aot:cuda:90", "aot:cuda:90", _row("broken"),
                     _row("absent"), uses)  # fmt: skip
    compare_probe(out, UPGRADE, pair)
    assert RELAXATION not in [f.kind for f in out.findings]
    # the other way is a change
    out = Comparison()
    pair = ProbePair("tensor_descriptor", "aot:cuda:90", "aot:cuda:90", _row("supported"),
                     _row("broken"), uses)  # fmt: skip
    compare_probe(out, UPGRADE, pair)
    assert [f.kind for f in out.findings] == [BEHAVIOUR]
