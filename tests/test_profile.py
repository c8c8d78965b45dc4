"""The usage profile and the gate that decides on it, on the committed results in reports/raw.

The team kernels under tests/fixtures/team_kernels/ are small and written for these tests
(their README says what each one does); the gate runs as a team runs it, with ``--scan``.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from matrix.analyze.profile import MAY_AFFECT, NOT_USED, USED, Matcher
from matrix.analyze.profile.declaration import Declaration
from matrix.gate.usage import build_profile
from matrix.gate.verdict import main
from matrix.results import Run

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "reports" / "raw"
TEAM = ROOT / "tests" / "fixtures" / "team_kernels"

pytestmark = pytest.mark.skipif(not RAW.is_dir(), reason="no committed results in reports/raw")


def gate(tmp_path: Path, baseline: str, candidate: str, *extra: str) -> tuple[int, str, dict]:
    out = tmp_path / f"gate-{baseline}-{candidate}"
    code = main(
        [
            "--results", str(RAW), "--baseline", baseline, "--candidate", candidate,
            "--out", str(out), *extra,
        ]
    )  # fmt: skip
    return code, (out / "gate.md").read_text(), json.loads((out / "gate.json").read_text())


def blocking_groups(doc: dict) -> set[str]:
    unsafe = {"breaking-api", "regression", "behaviour-change"}
    return {f["probe"].split("[")[0] for f in doc["findings"] if f["kind"] in unsafe}


@pytest.mark.parametrize(("baseline", "candidate"), [("3.8.0", "3.9.0"), ("3.1.0", "3.2.0")])
def test_a_clean_fp16_matmul_is_safe(tmp_path, monkeypatch, baseline, candidate):
    monkeypatch.chdir(ROOT)
    code, md, doc = gate(tmp_path, baseline, candidate, "--scan", str(TEAM / "matmul_fp16"))
    assert code == 0, md
    assert doc["findings"] == [] or not blocking_groups(doc)
    # what changed is still listed, apart, and the kernel was read with its dtypes
    assert "### Changed, not used by your code" in md
    assert doc["not_used"], "the upgrade changes fingerprint cells: they must be listed"
    dots = [u for u in doc["profile"]["uses"] if u["op"] == "dot"]
    assert dots and all(u["operands"] == [["float16"]] for u in dots)


def test_bf16_maximum_blocks_3_8_to_3_9_naming_the_change_and_line(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, md, doc = gate(tmp_path, "3.8.0", "3.9.0", "--scan", str(TEAM / "bf16_maximum"))
    assert code == 1, md
    # the project's acknowledgement of fp.binary_fn.m*imum* (written for kernels/) is not used;
    # 3.9.0's interpreter also computes bf16 maximum wrong (the fp.values groups), and relu.py:11
    # casts a load of an untyped pointer to bf16 (fp.values.cast_float_dtypes: may affect)
    assert "fp.binary_fn.maximum" in blocking_groups(doc)
    assert blocking_groups(doc) <= {
        "fp.binary_fn.maximum",
        "fp.values.maximum",
        "fp.values.maximum_nan_all",
        "fp.values.cast_float_dtypes",
    }
    entries = [
        ln
        for ln in md.split("## Details")[1].split("### Your code")[0].splitlines()
        if ln.startswith("- **")
    ]
    assert len(entries) <= 10, entries
    assert "fp.binary_fn.maximum" in md and "bfloat16,lit_float" in md
    assert "tests/fixtures/team_kernels/bf16_maximum/relu.py:12 in relu_bf16_kernel" in md
    assert "accepted-change" not in {f["kind"] for f in doc["findings"]}


def test_uint8_bitcast_minus_constexpr_blocks_3_1_to_3_2_precisely(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, md, doc = gate(tmp_path, "3.1.0", "3.2.0", "--scan", str(TEAM / "uint8_dequant"))
    assert code == 1, md
    assert "fp.binary.sub" in blocking_groups(doc)
    sub = [f for f in doc["findings"] if f["probe"] == "fp.binary.sub[uint8,cx_int]"]
    assert sub and all("dequant.py:15 in dequant_kernel" in " ".join(f["uses"]) for f in sub)
    head = md.split("## Details")[1].split("### Your code")[0]
    entries = [ln for ln in head.splitlines() if ln.startswith("- **")]
    assert 1 <= len(entries) <= 10, entries
    assert "dequant.py:15" in head


def test_without_team_code_the_project_verdict_is_its_own_kernels(tmp_path, monkeypatch):
    """No --scan: the project's own verdict reads kernels/ alone (its profile, the targets its
    kernels/triton-compat.toml declares); compat/'s intentional feature trials are not in it."""
    monkeypatch.chdir(ROOT)
    code, md, doc = gate(tmp_path, "3.8.0", "3.9.0")
    assert code in (0, 1), md
    assert doc["profile"] is not None, md
    assert doc["profile"]["kernels"], md
    assert all(v.startswith("kernels/") for v in doc["profile"]["kernels"].values()), md
    assert "kernels/triton-compat.toml" in md
    assert "compat/" not in json.dumps(doc["findings"])


def _ack(path: Path, extra: str) -> Path:
    path.write_text(
        textwrap.dedent(
            """\
            [[change]]
            probe = "fp.binary_fn.maximum[bfloat16,lit_float]"
            from = "fp32"
            to = "bf16"
            reason = "our ReLU keeps bfloat16 on purpose"
            """
        )
        + extra
    )
    return path


def test_a_team_acknowledgement_applies_only_to_the_code_it_names(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    scan = ["--scan", str(TEAM / "bf16_maximum")]
    mine = _ack(tmp_path / "mine.toml", 'paths = ["tests/fixtures/team_kernels/bf16_maximum/*"]\n')
    code, md, doc = gate(tmp_path, "3.8.0", "3.9.0", *scan, "--accepted", str(mine))
    # the acknowledged cell no longer blocks (3.9.0's wrong bf16 maximum values still do: a
    # regression is never acknowledged)
    assert "fp.binary_fn.maximum" not in blocking_groups(doc), md
    assert any(f["kind"] == "accepted-change" and f["probe"].startswith("fp.binary_fn.maximum")
               for f in doc["findings"])  # fmt: skip
    other = _ack(tmp_path / "other.toml", 'kernels = ["some_other_kernel"]\n')
    code, md, doc = gate(tmp_path, "3.8.0", "3.9.0", *scan, "--accepted", str(other))
    assert code == 1 and "fp.binary_fn.maximum" in blocking_groups(doc), md
    # an entry that names no code is refused, loudly (exit 2), never applied everywhere
    bare = _ack(tmp_path / "bare.toml", "")
    code, md, _ = gate(tmp_path, "3.8.0", "3.9.0", *scan, "--accepted", str(bare))
    assert code == 2 and "paths = [...] or kernels = [...]" in md


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_re_exported_tl_and_literal_kinds_are_read(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "tri.py", "import triton\nimport triton.language as tl\n")
    write(
        tmp_path / "pkg" / "k.py",
        """\
        from .tri import triton, tl

        @triton.jit
        def k(x_ptr, n, K: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, 16)).to(tl.float16)
            y = tl.where(x > 0, x, 0.5)
            z = tl.clamp(y.to(tl.int8), -K, 3)
            tl.atomic_add(x_ptr, z.to(tl.float32), sem="relaxed")
        """,
    )
    profile = build_profile([str(tmp_path / "pkg")], [], [])
    m = Matcher(profile)
    assert m.cell("where", "float16,lit_float").status == USED
    assert m.cell("where", "bfloat16,lit_float").status == NOT_USED
    assert m.cell("cast.to", "float16->int8").status == USED
    # unary minus on a constexpr with no default: int or float, so the clamp bound may be
    assert m.cell("clamp", "int8,cx_int").status == MAY_AFFECT
    # an atomic on a pointer of unknown element type: any dtype may be affected
    assert m.cell("atomic.add", "float32,sem=relaxed,scope=default").status == MAY_AFFECT
    assert m.cell("atomic.add", "float32,sem=acquire,scope=default").status == NOT_USED
    line = next(u for u in profile.uses if u.op == "where")
    assert line.line == 6 and line.kernel == "k" and line.path.endswith("k.py")


def test_a_captured_launch_types_a_kernel_defined_in_a_test(tmp_path):
    suite = tmp_path / "suite"
    write(
        suite / "test_local.py",
        """\
        import triton
        import triton.language as tl

        def test_sub():
            @triton.jit
            def local(q_ptr, ZERO: tl.constexpr):
                q = tl.load(q_ptr + tl.arange(0, 16))
                tl.store(q_ptr + tl.arange(0, 16), q - ZERO)
        """,
    )
    launch = {
        "key": "k1", "kernel": "test_local:local", "name": "local", "file": "test_local.py",
        "signature": {"q_ptr": "*u8"}, "constexprs": {"ZERO": 128},
        "test": "test_local.py::test_sub",
    }  # fmt: skip
    run = Run("r", extra={"suite": {"path": str(suite)}, "launches": [launch]})
    profile = build_profile([], [str(suite)], [run])
    m = Matcher(profile)
    hit = m.cell("binary.sub", "uint8,cx_int")
    assert hit.status == USED
    assert hit.uses[0].test == "test_local.py::test_sub" and hit.uses[0].line == 8
    assert m.cell("binary.sub", "int8,cx_int").status == NOT_USED
    # read from source alone (no launch), q_ptr is what tensors carry (fp16/bf16/fp32): a uint8
    # element needs evidence, as a declared "*" (or the file naming tl.uint8) gives
    alone = Matcher(build_profile([str(suite)], [], []))
    assert alone.cell("binary.sub", "uint8,cx_int").status == NOT_USED
    assert alone.cell("binary.sub", "bfloat16,cx_int").status == MAY_AFFECT
    wide = Declaration.parse({"dtypes": {"*": ["*"]}}, "test")
    alone = Matcher(build_profile([str(suite)], [], [], wide))
    assert alone.cell("binary.sub", "uint8,cx_int").status == MAY_AFFECT


def test_probe_rows_and_project_rows_map_by_the_data_table(tmp_path):
    write(
        tmp_path / "bp.py",
        """\
        import triton
        import triton.language as tl

        @triton.jit
        def k(p, n, B: tl.constexpr):
            bp = tl.make_block_ptr(p, (n,), (1,), (0,), (B,), (0,))
            x = tl.load(bp, boundary_check=(0,))
        """,
    )
    m = Matcher(build_profile([str(tmp_path)], [], []))
    assert m.probe("block_ptr").status == USED
    assert m.probe("boundary_check").status == USED
    assert m.probe("atomic_add_bf16").status == NOT_USED
    assert m.probe("splitk").status == NOT_USED  # this project's own kernel


def test_environment_hooks_and_warnings_map_to_the_code_that_names_them(tmp_path):
    """fp.env_values and warnings compiled under a variable block only code that names the
    variable; a warning every compile gives (plain_kernel) never blocks by itself; a runtime
    rule maps through the names that set the hook (usage_map.toml)."""
    write(
        tmp_path / "conf.py",
        """\
        import os
        import triton

        os.environ["TRITON_DEFAULT_FP_FUSION"] = "0"

        def setup():
            triton.set_allocator(lambda size, align, stream: None)
        """,
    )
    m = Matcher(build_profile([str(tmp_path)], [], []))
    used = m.cell("env_values", "TRITON_DEFAULT_FP_FUSION=0")
    assert used.status == USED and used.uses[0].line == 4
    assert m.cell("env_values", "TRITON_FORCE_DISABLE_FP_FUSION=1").status == NOT_USED
    assert m.cell("warnings", "plain_kernel|none").status == NOT_USED
    # the code sets it to "0": compiles under it with "1" are not what it runs
    assert m.cell("warnings", "plain_kernel|TRITON_DEFAULT_FP_FUSION=0").status == USED
    assert m.cell("warnings", "plain_kernel|TRITON_DEFAULT_FP_FUSION=1").status == NOT_USED
    assert m.cell("warnings", "plain_kernel|TRITON_DEBUG=1").status == NOT_USED
    assert m.cell("warnings", "block_ptr|TRITON_DEFAULT_FP_FUSION=1").status == NOT_USED
    assert m.cell("runtime_semantics", "allocator.other_thread").status == USED
    assert m.cell("runtime_semantics", "knobs.scope_restores").status == NOT_USED
    assert m.cell("runtime_semantics", "nothing.known").status == MAY_AFFECT


def test_a_variable_the_code_sets_is_never_run_unset_there(tmp_path):
    """A release's default for a variable (its ``(unset)`` cell) is not what code that sets
    the variable runs with (tritonbench sets AMDGCN_USE_BUFFER_OPS around its matmul, whose
    default 3.6.0 turned on); code that only reads it, or sets it to a value it does not spell,
    may still run with any spelling, and a read may run with it unset."""
    write(
        tmp_path / "bench.py",
        """\
        import os
        from contextlib import contextmanager

        @contextmanager
        def set_env_variable(name, value):
            old = os.environ.get(name)
            os.environ[name] = value
            yield
            if old is not None:
                os.environ[name] = old

        def run(fast, level):
            with set_env_variable("AMDGCN_USE_BUFFER_OPS", "1" if fast else "0"):
                pass
            os.environ.setdefault("TRITON_DEBUG", level)
            return os.environ.get("TRITON_ALWAYS_COMPILE")
        """,
    )
    m = Matcher(build_profile([str(tmp_path)], [], []))
    assert m.cell("env_values", "AMDGCN_USE_BUFFER_OPS=(unset)").status == NOT_USED
    assert m.cell("env_values", "AMDGCN_USE_BUFFER_OPS=yes").status == NOT_USED
    assert m.cell("env_values", "AMDGCN_USE_BUFFER_OPS=0").status == USED
    assert m.cell("env_values", "AMDGCN_USE_BUFFER_OPS=1").status == USED
    assert m.cell("env_values", "TRITON_DEBUG=(unset)").status == NOT_USED
    assert m.cell("env_values", "TRITON_DEBUG=yes").status == USED
    assert m.cell("env_values", "TRITON_ALWAYS_COMPILE=(unset)").status == USED


def test_the_upgrade_page_shows_the_gates_verdict_on_the_team_code(tmp_path, monkeypatch):
    """The fixture library's real run (tests/fixtures/teamlib_raw): the page's "Your code"
    section is the gate's own verdict with --tests, kernel by kernel with the lines."""
    from matrix.report import build

    monkeypatch.chdir(ROOT)
    raw = ROOT / "tests" / "fixtures" / "teamlib_raw"
    out = tmp_path / "gate"
    code = main(
        ["--results", str(raw), "--baseline", "3.8.0", "--candidate", "3.9.0",
         "--tests", "tests/fixtures/teamlib/tests", "--out", str(out)]
    )  # fmt: skip
    doc = json.loads((out / "gate.json").read_text())
    assert code == 1
    build(raw, tmp_path / "site")
    html = (tmp_path / "site" / "upgrades" / "3.8.0-to-3.9.0.html").read_text()
    section = html.split('id="your-code"', 1)[1].split('id="not-measured"', 1)[0]
    assert "UNSAFE" in section and "(exit 1)" in section
    assert doc["coverage"] and doc["coverage"].split(";")[0] in section
    rows = re.findall(r'data-kernel="(\w+)" data-probe="([^"]+)"', section)
    gate_tied = {
        f["probe"] for f in doc["findings"] if f["relevance"] and not f["probe"].startswith("test ")
    }
    assert {p for _, p in rows} == gate_tied - {p for p in gate_tied if p.startswith("kernel ")}
    assert ("matmul_block_ptr_kernel", "block_ptr") in rows
    assert "kernels.py:51" in section and "Changed, not used by your code" in section
    # gate.md's grouping: one entry per change x kernel, the same as gate.json's "blocking"
    assert f"<strong>{doc['counts']['blocking']}</strong> blocking" in section
    entries = re.findall(r'<li data-kernel="(\w*)" data-group="([^"]+)"', section)
    assert entries and sorted(entries) == sorted((e["kernel"], e["group"]) for e in doc["blocking"])


def test_nox_gate_session_runs_the_team_suite_in_the_cells(monkeypatch):
    """``nox -s gate -- --tests DIR`` with no --results: the cells it runs take the suite, so
    the gate's --tests has captured launches to read; the gate gets --tests unchanged."""
    import matrix.measure.orchestrate as orchestrate
    from matrix.gate import session
    from matrix.gate.verdict import parser

    calls = []
    monkeypatch.setattr(orchestrate, "main", lambda argv: calls.append(argv) or 0)
    argv = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--tests", "t/"]
    args = session.resolve(parser(session=True).parse_args(argv))
    assert calls == [["--releases", "3.8.0,3.9.0", "--no-report", "--tests", "t/"]]
    assert args.tests == ["t/"] and args.results


# Variants written after the first three: (folder, baseline, candidate, exit code, the blocking
# groups, a "file:line in kernel" every blocking entry names). Each expectation was read off
# the committed data (the fingerprint changes on each pair) before the gate was run on it.
VARIANTS = [
    # tl.clamp of bfloat16 by runtime floats: fp32 -> bf16 on 3.9.0's interpreter
    # 3.9.0's interpreter also computes bf16 clamp wrong (fp.values.clamp: right -> wrong)
    (
        "bf16_clamp",
        "3.8.0",
        "3.9.0",
        1,
        {"fp.clamp", "fp.values.clamp"},
        "clamp.py:13 in clamp_bf16_kernel",
    ),
    ("bf16_clamp", "3.1.0", "3.2.0", 0, set(), ""),
    # int16 minus a constexpr: int32 on 3.1.0, int16 from 3.2.0 (like the uint8 one)
    ("int16_offset", "3.1.0", "3.2.0", 1, {"fp.binary.sub"}, "offset.py:12 in offset_kernel"),
    ("int16_offset", "3.8.0", "3.9.0", 0, set(), ""),
    # float32 % with operands of either sign: 3.2.0 fixes the values (listed as fixed)
    ("float_mod", "3.1.0", "3.2.0", 0, set(), ""),
    ("float_mod", "3.8.0", "3.9.0", 0, set(), ""),
    # float16 * a runtime scalar, then to float8e5: the product is fp32 on 3.1.0's
    # interpreter, fp16 on 3.2.0's; the scalar may be an int or a float: "may affect"
    ("fp8_cast", "3.1.0", "3.2.0", 1, {"fp.binary.mul"}, "quant.py:13 in quant_fp8_kernel"),
    ("fp8_cast", "3.8.0", "3.9.0", 0, set(), ""),
    # tl.cumsum of bfloat16: accumulated in fp32 on 3.8.0, in bf16 on 3.9.0
    ("bf16_cumsum", "3.8.0", "3.9.0", 1, {"fp.reduce.cumsum"}, "cumsum.py:12 in cumsum_bf16"),
    ("bf16_cumsum", "3.1.0", "3.2.0", 0, set(), ""),
    # block pointers and boundary_check: removed in 3.9.0; the fingerprint's block_ptr layout
    # and warning rows and the census's advance/boundary_check at the same lines follow from
    # those removals (matrix.gate.roots: listed under them, one reason per root)
    ("block_ptr", "3.8.0", "3.9.0", 1, {"block_ptr", "boundary_check"}, "copy.py:"),
    # 3.2.0's interpreter refuses a block shape that is not a power of two (fp.layout): the
    # kernel's block is a constexpr the source does not fix, so every block pointer may hit it
    ("block_ptr", "3.1.0", "3.2.0", 1, {"fp.layout"}, "copy.py:"),
    # a generic kernel reading x through a helper; its test launches it on bfloat16 (the host
    # code in the tree types the pointer, the helper's return is followed)
    (
        "generic_helper",
        "3.8.0",
        "3.9.0",
        1,
        {"fp.binary_fn.maximum", "fp.values.maximum", "fp.values.maximum_nan_all"},
        "act.py:19 in leaky_floor",
    ),
    ("generic_helper", "3.1.0", "3.2.0", 0, set(), ""),
]


@pytest.mark.parametrize(("folder", "baseline", "candidate", "exit", "groups", "where"), VARIANTS)
def test_team_kernel_variants(
    tmp_path, monkeypatch, folder, baseline, candidate, exit, groups, where
):
    monkeypatch.chdir(ROOT)
    code, md, doc = gate(tmp_path, baseline, candidate, "--scan", str(TEAM / folder))
    assert code == exit, md
    assert blocking_groups(doc) == groups, md
    head = md.split("## Details")[1].split("### Your code")[0]
    entries = [ln for ln in head.splitlines() if ln.startswith("- **")]
    assert len(entries) <= 10, entries
    unsafe = {"breaking-api", "regression", "behaviour-change"}
    for f in doc["findings"]:
        if f["kind"] in unsafe:  # every blocking entry names the line of the team's code
            assert f["uses"] and all(where in u for u in f["uses"]), f
