"""matrix.report.claims: the claims file is well formed, and each verdict arises for its reason.

The runs here are small, made up, and deliberately cover both sides of each claim: the seed notes
are partly wrong, so no fixture assumes which side a real release is on.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from matrix.catalog import PROBES_BY_NAME
from matrix.core import DataFileError
from matrix.report import claims as C
from matrix.results import Result, Run, write_raw

ROOT = Path(__file__).resolve().parents[1]
SEEDS = Path(__file__).parent / "fixtures" / "claims" / "seeds"

# The probes the lead plans (names and statuses agreed in the brief for this work).
LEAD_PLANNED = {
    "allow_tf32": {"accepted", "deprecated", "removed"},
    "boundary_check": {"accepted", "deprecated", "removed"},
    "atomic_add_bf16": {"accepted", "rejected"},
    "atomic_add_fp16": {"accepted", "rejected"},
    "python_min_runtime": {"works", "rejected", "wrong"},
    "true_div_program_id": {"rejected", "works"},
    "splitk_nondeterminism": {"nondeterministic", "deterministic"},
}


def res(probe, backend, target, status, detail="", **data) -> Result:
    return Result(
        probe=probe, backend=backend, target=target, status=status, detail=detail, data=data
    )


def run(triton, *results, numpy="2.4.6", install="ok", install_detail="") -> Run:
    return Run(
        id=f"triton-{triton}-numpy-{numpy}",
        env={"triton": triton, "numpy": numpy, "gpu": None},
        install={"status": install, "seconds": 1.0, "detail": install_detail},
        results=list(results),
    )


@pytest.fixture(scope="module")
def real() -> dict[str, C.Claim]:
    return {c.id: c for c in C.load_claims()}


def aot_run(triton, statuses) -> Run:
    """A run of aot results only: ``{(probe, target): status}``."""
    return run(triton, *(res(probe, "aot", t, status) for (probe, t), status in statuses.items()))


def verdict(real, claim_id, runs) -> C.Verdict:
    (v,) = C.evaluate(runs, [real[claim_id]])
    return v


def write_claims(tmp_path, text) -> Path:
    p = tmp_path / "claims.toml"
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


GOOD_CLAIM = """
[[claim]]
id = "c1"
note = "matmul"
quote = "That API was deprecated in 3.7"
[[claim.check]]
probe = "block_ptr"
releases = ">=3.7,<3.9"
expect = "deprecated"
"""


# --- the real claims file --------------------------------------------------------------------


def test_real_file_parses_into_claims_from_both_notes(real):
    assert 15 <= len(real) <= 30
    assert {c.note for c in real.values()} == {"split-k", "matmul"}
    for c in real.values():
        assert list(c.check.leaves()), c.id


def test_real_file_names_only_catalog_or_planned_probes(real):
    probes = C.load_probes()
    for c in real.values():
        for check in c.check.leaves():
            name = check.probe
            if name in PROBES_BY_NAME:
                continue
            assert name in probes, f"{c.id}: unknown probe {name}"
            info = probes[name]
            assert info.planned, f"{c.id}: {name}"
            if name in LEAD_PLANNED:
                assert set(info.statuses) == LEAD_PLANNED[name], name
                assert not info.proposed, f"{name} is the lead's, not a proposal"
            else:
                assert info.proposed, f"{c.id}: {name} is neither the lead's nor marked proposed"
            assert set(check.expect) <= set(info.statuses), c.id


def test_no_planned_probe_is_in_the_catalog_already():
    raw = tomllib.loads(C.DEFAULT_PATH.read_text(encoding="utf-8"))["planned"]
    assert not sorted(set(raw) & set(PROBES_BY_NAME))


def test_a_planned_entry_for_a_catalog_probe_is_refused(tmp_path):
    text = '[planned.splitk]\nstatuses = ["pass"]\nbackends = ["gpu"]\n' + GOOD_CLAIM
    with pytest.raises(C.ClaimsError, match=r"planned\.splitk: the catalog .* has this probe"):
        C.load_claims(write_claims(tmp_path, text))


def test_every_planned_probe_is_used_by_some_claim(real):
    used = {check.probe for c in real.values() for check in c.check.leaves()}
    raw = tomllib.loads(C.DEFAULT_PATH.read_text(encoding="utf-8"))["planned"]
    assert set(raw) <= used


@pytest.mark.parametrize("note", ["split-k", "matmul"])
def test_quotes_are_word_for_word_from_their_note(real, note):
    def norm(t):
        return re.sub(r"\s+", " ", t)

    text = norm((SEEDS / f"{note}.txt").read_text(encoding="utf-8"))
    for c in real.values():
        if c.note == note:
            assert norm(c.quote) in text, f"{c.id}: quote not found in the {note} note"


def test_with_no_results_every_claim_is_untested_and_names_its_probe(real):
    for v in C.evaluate([], list(real.values())):
        assert v.verdict == "untested", v.id
        assert any(line.startswith("no results for probe ") for line in v.evidence), v.id


# --- verdicts --------------------------------------------------------------------------------


def test_holds_when_every_release_agrees(real):
    runs = [
        run("3.6.0", res("block_ptr", "aot", "cuda:90", "supported")),
        run(
            "3.7.1",
            res("block_ptr", "aot", "cuda:90", "deprecated", "UserWarning: use descriptors"),
        ),
        run("3.8.0", res("block_ptr", "interpret", None, "deprecated", "FutureWarning: ...")),
    ]
    v = verdict(real, "block-ptr-deprecated-in-3.7", runs)
    assert v.verdict == "holds"
    assert any(
        line.startswith("agrees: 3.7.1 aot:cuda:90 block_ptr=deprecated (UserWarning")
        for line in v.evidence
    ), v.evidence
    assert any("3.8.0 numpy 2.4.6 interpret block_ptr=deprecated" in e for e in v.evidence)


def test_fails_when_every_release_disagrees(real):
    runs = [
        run("3.6.0", res("block_ptr", "aot", "cuda:90", "deprecated", "UserWarning: x")),
        run("3.7.1", res("block_ptr", "aot", "cuda:90", "supported")),
    ]
    v = verdict(real, "block-ptr-deprecated-in-3.7", runs)
    assert v.verdict == "fails"
    assert all(line.startswith("disagrees: ") for line in v.evidence), v.evidence


def test_partly_when_right_about_one_release_and_wrong_about_another(real):
    # The deprecation came a release later than the note says: right for 3.6, wrong for 3.7.
    runs = [
        run("3.6.0", res("block_ptr", "aot", "cuda:90", "supported")),
        run("3.7.1", res("block_ptr", "aot", "cuda:90", "supported")),
        run("3.8.0", res("block_ptr", "aot", "cuda:90", "deprecated", "UserWarning: x")),
    ]
    v = verdict(real, "block-ptr-deprecated-in-3.7", runs)
    assert v.verdict == "partly"
    assert any(line.startswith("disagrees: 3.7.1 ") for line in v.evidence)
    assert any(line.startswith("agrees: 3.8.0 ") for line in v.evidence)


def test_untested_when_no_result_bears_on_the_claim(real):
    v = verdict(
        real, "allow-tf32-deprecated", [run("3.9.0", res("splitk", "aot", "cuda:90", "pass"))]
    )
    assert v.verdict == "untested"
    assert v.evidence == ["no results for probe allow_tf32"]


def test_results_outside_the_claims_scope_are_not_evidence(real):
    # Only hip results: the NVIDIA claim has nothing to go on, and says the probe ran elsewhere.
    runs = [run("3.9.0", res("dot_f32_default_precision", "aot", "hip:gfx942", "ieee"))]
    v = verdict(real, "dot-f32-defaults-to-tf32-on-nvidia", runs)
    assert v.verdict == "untested"
    assert "the probe has other results" in v.evidence[-1]

    runs[0].results.append(res("dot_f32_default_precision", "aot", "cuda:90", "tf32"))
    v = verdict(real, "dot-f32-defaults-to-tf32-on-nvidia", runs)
    assert v.verdict == "holds"
    assert not any("hip:gfx942" in e for e in v.evidence)


def test_detail_condition_turns_a_wrong_exception_into_a_disagreement(real):
    runs = [
        run("3.8.0", res("block_ptr", "aot", "cuda:90", "deprecated", "UserWarning: x")),
        run(
            "3.9.0",
            res("block_ptr", "aot", "cuda:90", "removed", "AttributeError: no make_block_ptr"),
        ),
    ]
    v = verdict(real, "block-ptr-removed-in-3.9", runs)
    assert v.verdict == "partly"  # usable before 3.9 as claimed; removed, but not as claimed
    assert any("disagrees: 3.9.0" in e and "NotImplementedError" in e for e in v.evidence)

    runs[1] = run("3.9.0", res("block_ptr", "aot", "cuda:90", "removed", "NotImplementedError: x"))
    assert verdict(real, "block-ptr-removed-in-3.9", runs).verdict == "holds"


@pytest.mark.parametrize("status", ["skipped", "error", "crashed", "timeout"])
def test_statuses_that_observe_nothing_are_listed_but_not_counted(real, status):
    runs = [
        run("3.6.0", res("block_ptr", "aot", "cuda:90", status, "no compiler for target")),
        run("3.7.1", res("block_ptr", "aot", "cuda:90", "deprecated", "UserWarning: x")),
    ]
    v = verdict(real, "block-ptr-deprecated-in-3.7", runs)
    assert v.verdict == "holds"
    assert f"not an observation: 3.6.0 aot:cuda:90 block_ptr={status} (no compiler for target)" in (
        v.evidence
    )
    v = verdict(real, "block-ptr-deprecated-in-3.7", runs[:1])
    assert v.verdict == "untested"


def test_refused_or_wrong_min_supports_the_claim(real):
    # python_min_runtime ends "rejected" when min() is refused, "wrong" when it runs but
    # computes something else: both are what the claim predicts.
    runs = [
        run("3.4.0", res("python_min_runtime", "interpret", None, "works")),
        run("3.9.0", res("python_min_runtime", "aot", "cuda:90", "rejected", "CompilationError")),
    ]
    assert verdict(real, "python-min-not-guaranteed", runs).verdict == "holds"
    runs[1] = run("3.0.0", res("python_min_runtime", "interpret", None, "wrong", "stored -1"))
    assert verdict(real, "python-min-not-guaranteed", runs).verdict == "holds"
    runs[1] = run("3.9.0", res("python_min_runtime", "aot", "cuda:90", "works"))
    assert verdict(real, "python-min-not-guaranteed", runs).verdict == "fails"
    runs[1] = run("3.9.0", res("python_min_runtime", "aot", "cuda:90", "crashed", "SIGSEGV"))
    v = verdict(real, "python-min-not-guaranteed", runs)
    assert v.verdict == "fails"  # one observation (works); the crash counts for nothing
    assert any(
        e.startswith("not an observation: 3.9.0 aot:cuda:90 python_min_runtime=crashed")
        for e in v.evidence
    )


def test_true_division_claim_checks_the_exception_text(real):
    text = (
        "IncompatibleTypeErrorImpl('invalid operands of type pointer<fp32> and "
        "triton.language.float32')"
    )
    ok = [run("3.9.0", res("true_div_program_id", "aot", "cuda:90", "rejected", text))]
    assert verdict(real, "true-division-breaks-pointer-arithmetic", ok).verdict == "holds"
    other = [run("3.9.0", res("true_div_program_id", "aot", "cuda:90", "rejected", "TypeError"))]
    assert verdict(real, "true-division-breaks-pointer-arithmetic", other).verdict == "partly"
    works = [run("3.9.0", res("true_div_program_id", "aot", "cuda:90", "works"))]
    assert verdict(real, "true-division-breaks-pointer-arithmetic", works).verdict == "fails"


def test_failed_installs_are_listed_in_the_evidence(real):
    runs = [
        run("3.7.1", res("block_ptr", "aot", "cuda:90", "deprecated", "UserWarning: x")),
        run("3.8.0", install="no-wheel", install_detail="no cp311 wheel"),
    ]
    v = verdict(real, "block-ptr-deprecated-in-3.7", runs)
    assert v.verdict == "holds"
    assert "3.8.0 numpy 2.4.6 install=no-wheel: no results (no cp311 wheel)" in v.evidence


def test_a_failed_cell_is_evidence_only_where_it_could_have_run(real):
    cpu_cell = run("3.9.0", install="failed", install_detail="resolution failed")
    gpu_cell = run("3.9.0", install="failed", install_detail="no wheel on the GPU host")
    gpu_cell.env["gpu"] = {"name": "NVIDIA H200", "capability": "9.0"}
    # splitk_nondeterminism runs on gpu only: the interpreter/aot cell could not have told.
    v = verdict(real, "atomic-splitk-not-bitwise-reproducible", [cpu_cell])
    assert v.evidence == ["no results for probe splitk_nondeterminism"]
    v = verdict(real, "atomic-splitk-not-bitwise-reproducible", [gpu_cell])
    assert any("install=failed" in e and "GPU host" in e for e in v.evidence), v.evidence
    # ... and a release outside the check's range is no evidence either.
    v = verdict(real, "block-ptr-deprecated-in-3.7", [cpu_cell])
    assert not any("install=failed" in e for e in v.evidence), v.evidence


def test_a_run_without_a_version_is_reported_and_ignored(real):
    bad = run("main", res("block_ptr", "aot", "cuda:90", "supported"))
    v = verdict(real, "block-ptr-deprecated-in-3.7", [bad])
    assert v.verdict == "untested"
    assert any("env.triton 'main' is not a version" in e for e in v.evidence)
    v = verdict(real, "allow-tf32-deprecated", [bad])
    assert v.evidence == ["no results for probe allow_tf32"]


def test_a_release_candidate_counts_as_its_release(real):
    runs = [run("3.9.0rc1", res("block_ptr", "aot", "cuda:90", "removed", "NotImplementedError"))]
    v = verdict(real, "block-ptr-kernel-fails-before-gpu", runs)
    assert v.verdict == "holds"


def test_change_at_a_release(real):
    def cell(release, status):
        return run(release, res("dot_acc_out_dtype", "interpret", None, status))

    v = verdict(
        real,
        "dot-acc-out-dtype-changed-in-3.8",
        [cell("3.6.0", "fp32"), cell("3.7.1", "fp32"), cell("3.8.0", "fp16")],
    )
    assert v.verdict == "holds"
    assert (
        "agrees: interpret dot_acc_out_dtype: 3.7.1 fp32 -> 3.8.0 fp16 (changed at 3.8)"
        in v.evidence
    )

    v = verdict(
        real,
        "dot-acc-out-dtype-changed-in-3.8",
        [cell("3.7.1", "fp16"), cell("3.8.0", "fp16"), cell("3.9.0", "fp32")],
    )
    assert v.verdict == "fails"  # it changed, but at 3.9

    v = verdict(
        real, "dot-acc-out-dtype-changed-in-3.8", [cell("3.7.1", "fp32"), cell("3.9.0", "fp16")]
    )
    assert v.verdict == "untested"
    assert any("no 3.8 release" in e for e in v.evidence)


def test_change_is_judged_per_target(real):
    dot = "dot_acc_out_dtype"
    runs = [
        aot_run("3.7.1", {(dot, "cuda:90"): "fp32", (dot, "hip:gfx942"): "fp16"}),
        aot_run("3.8.0", {(dot, "cuda:90"): "fp16", (dot, "hip:gfx942"): "fp16"}),
    ]
    assert verdict(real, "dot-acc-out-dtype-changed-in-3.8", runs).verdict == "partly"


def test_differs_from_compares_with_the_same_release(real):
    def cell(release, cuda, hip):
        dot = "dot_f32_default_precision"
        return aot_run(release, {(dot, "cuda:90"): cuda, (dot, "hip:gfx942"): hip})

    assert (
        verdict(real, "amd-default-precision-differs", [cell("3.9.0", "tf32", "ieee")]).verdict
        == "holds"
    )
    v = verdict(
        real,
        "amd-default-precision-differs",
        [cell("3.8.0", "tf32", "ieee"), cell("3.9.0", "tf32", "tf32")],
    )
    assert v.verdict == "partly"
    assert any(
        e.startswith("disagrees: 3.9.0 aot:hip:gfx942") and "cuda:90 gives tf32" in e
        for e in v.evidence
    )

    lone = [run("3.9.0", res("dot_f32_default_precision", "aot", "hip:gfx942", "ieee"))]
    v = verdict(real, "amd-default-precision-differs", lone)
    assert v.verdict == "untested"
    assert any("no aot:cuda:90 result of the same release" in e for e in v.evidence)


def test_data_condition(real):
    def cell(status, **data):
        return [run("3.9.0", res("splitk_nondeterminism", "gpu", "cuda:90", status, **data))]

    assert (
        verdict(
            real, "atomic-splitk-spread-is-a-few-ulps", cell("nondeterministic", max_ulps=4)
        ).verdict
        == "holds"
    )
    v = verdict(real, "atomic-splitk-spread-is-a-few-ulps", cell("nondeterministic", max_ulps=300))
    assert v.verdict == "fails"
    assert any("max_ulps=300" in e and "data.max_ulps <= 16" in e for e in v.evidence)
    v = verdict(real, "atomic-splitk-spread-is-a-few-ulps", cell("nondeterministic"))
    assert v.verdict == "untested"
    assert any("no data.max_ulps in the result" in e for e in v.evidence)
    assert (
        verdict(
            real, "atomic-splitk-spread-is-a-few-ulps", cell("deterministic", max_ulps=0)
        ).verdict
        == "fails"
    )


def test_some_quantifier_inside_an_any_group(real):
    def cells(bf16_on_39):
        fp16, bf16 = ("atomic_add_fp16", "cuda:90"), ("atomic_add_bf16", "cuda:90")
        return [
            aot_run("3.8.0", {fp16: "accepted", bf16: "accepted"}),
            aot_run("3.9.0", {fp16: "accepted", bf16: bf16_on_39}),
        ]

    assert verdict(real, "atomic-add-half-may-be-unsupported", cells("rejected")).verdict == "holds"
    assert verdict(real, "atomic-add-half-may-be-unsupported", cells("accepted")).verdict == "fails"


def test_group_combinations():
    assert C._combine("all", ["holds", "untested", "holds"]) == "holds"
    assert C._combine("all", ["holds", "fails"]) == "partly"
    assert C._combine("all", ["fails", "untested"]) == "fails"
    assert C._combine("any", ["fails", "holds"]) == "holds"
    assert C._combine("any", ["fails", "partly"]) == "partly"
    assert C._combine("any", ["untested"]) == "untested"


def test_verdict_shape_and_order(real):
    v = C.evaluate([], list(real.values()))
    assert [x.id for x in v] == list(real)
    first = v[0]
    assert first.note in C.NOTES and first.quote == real[first.id].quote
    assert first.probes == real[first.id].probes
    with pytest.raises(AttributeError):
        first.verdict = "holds"  # frozen


def test_evaluate_reads_the_default_file_when_given_no_claims():
    assert len(C.evaluate([])) == len(C.load_claims())


# --- malformed files -------------------------------------------------------------------------


def test_a_good_minimal_file_parses(tmp_path):
    (c,) = C.load_claims(write_claims(tmp_path, GOOD_CLAIM))
    assert c.id == "c1" and c.probes == ("block_ptr",)


@pytest.mark.parametrize(
    ("change", "names"),
    [
        (('quote = "That API was deprecated in 3.7"\n', ""), ["'c1'", "quote"]),
        (('note = "matmul"', 'note = "matmul.md"'), ["'c1'", "note", "matmul.md"]),
        (('probe = "block_ptr"', 'probe = "block_pointer"'), ["'c1'", "probe", "block_pointer"]),
        (('expect = "deprecated"', 'expect = "deprecate"'), ["'c1'", "expect", "deprecate"]),
        (
            ('releases = ">=3.7,<3.9"', 'releases = "3.7 to 3.9"'),
            ["'c1'", "releases", "3.7 to 3.9"],
        ),
        (('expect = "deprecated"', 'expected = "deprecated"'), ["'c1'", "expected"]),
        (
            ('expect = "deprecated"', 'expect = "deprecated"\nchanges_at = "3.8"'),
            ["'c1'", "exactly one"],
        ),
        (
            ('expect = "deprecated"', 'expect = "deprecated"\nbackend = "cpu"'),
            ["'c1'", "backend", "cpu"],
        ),
        (
            ('expect = "deprecated"', 'expect = "deprecated"\ndata = { x = { about = 1 } }'),
            ["'c1'", "data", "about"],
        ),
        (('expect = "deprecated"', 'changes_at = "three"'), ["'c1'", "changes_at", "three"]),
        (
            ('expect = "deprecated"', 'expect = "deprecated"\nquantifier = "most"'),
            ["'c1'", "quantifier", "most"],
        ),
    ],
)
def test_a_malformed_claim_names_its_id_and_field(tmp_path, change, names):
    old, new = change
    assert old in GOOD_CLAIM
    path = write_claims(tmp_path, GOOD_CLAIM.replace(old, new))
    with pytest.raises(ValueError) as info:
        C.load_claims(path)
    assert isinstance(info.value, C.ClaimsError)
    for name in names:
        assert name in str(info.value), str(info.value)


def test_repeated_ids_are_refused(tmp_path):
    with pytest.raises(C.ClaimsError, match=r"'c1'.*repeated"):
        C.load_claims(write_claims(tmp_path, GOOD_CLAIM + GOOD_CLAIM))


def test_a_claim_without_id_is_named_by_position(tmp_path):
    with pytest.raises(C.ClaimsError, match=r"claim #1: id"):
        C.load_claims(write_claims(tmp_path, GOOD_CLAIM.replace('id = "c1"\n', "")))


def test_not_toml_and_missing_file(tmp_path):
    with pytest.raises(DataFileError, match=r"claims\.toml: expected valid TOML"):
        C.load_claims(write_claims(tmp_path, "[[claim]\n"))
    with pytest.raises(DataFileError, match=r"absent\.toml: expected a readable file"):
        C.load_claims(tmp_path / "absent.toml")


def test_a_planned_probe_needs_statuses(tmp_path):
    text = '[planned.new_probe]\nbackends = ["gpu"]\n' + GOOD_CLAIM
    with pytest.raises(C.ClaimsError, match=r"planned\.new_probe\.statuses"):
        C.load_claims(write_claims(tmp_path, text))


# --- runs where the report runs --------------------------------------------------------------


def test_works_without_triton_torch_or_numpy():
    code = textwrap.dedent(
        """
        import sys
        BLOCKED = {"triton", "torch", "numpy"}
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        from matrix.report import claims
        from matrix.results import Result, Run
        r = Result("block_ptr", "aot", "cuda:90", "removed", "NotImplementedError: gone")
        vs = claims.evaluate([Run(id="x", env={"triton": "3.9.0"}, results=[r])])
        print({v.id: v.verdict for v in vs}["block-ptr-kernel-fails-before-gpu"])
        assert not BLOCKED & set(sys.modules), BLOCKED & set(sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "holds"


def test_command_line(tmp_path, capsys):
    raw = tmp_path / "raw"
    write_raw(
        run("3.9.0", res("block_ptr", "aot", "cuda:90", "removed", "NotImplementedError")),
        raw / "a.json",
    )
    assert C.main([str(raw)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^holds\s+block-ptr-kernel-fails-before-gpu \(matmul\)$", out, re.M), out
    assert "agrees: 3.9.0 aot:cuda:90 block_ptr=removed (NotImplementedError)" in out
    bad = write_claims(tmp_path, "[[claim]\n")
    assert C.main([str(raw), "--claims", str(bad)]) == 2
    assert "expected valid TOML" in capsys.readouterr().err
