"""matrix.backends (aot, lld): target parsing, ASTSource spelling detection, ld.lld search.

The spelling tests use stand-in classes shaped like each release's ``ASTSource`` and
``AttrsDescriptor`` (3.0/3.1, 3.2, 3.3+), so they run without Triton. One test compiles a real
kernel for every aot target, in a child process without TRITON_INTERPRET (an interpreted
function cannot be compiled); it needs Triton installed.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from matrix.backends import aot, lld
from matrix.catalog import AOT_TARGETS
from tests.support import compile_in_child

REPO = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- targets


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("cuda:80", ("cuda", 80, 32)),
        ("cuda:90", ("cuda", 90, 32)),
        ("cuda:120", ("cuda", 120, 32)),
        ("hip:gfx942", ("hip", "gfx942", 64)),
        ("hip:gfx90a", ("hip", "gfx90a", 64)),
    ],
)
def test_split_target_accepts_known_forms(target, expected):
    assert aot.split_target(target) == expected


@pytest.mark.parametrize(
    "bad", ["", "cuda", "cuda:", "cuda:sm90", "cuda:9", "rocm:gfx942", "hip:942", "hip:", ":90", 90]
)
def test_split_target_rejects_bad_input_naming_it(bad):
    with pytest.raises(ValueError) as info:
        aot.split_target(bad)
    assert repr(bad) in str(info.value)


def test_every_catalog_target_parses():
    for target in AOT_TARGETS:
        aot.split_target(target)


def test_make_gpu_target_passes_warp_size_only_where_taken():
    @dataclass(frozen=True)
    class WithWarp:
        backend: str
        arch: int | str
        warp_size: int

    @dataclass(frozen=True)
    class WithoutWarp:
        backend: str
        arch: int | str

    assert aot.make_gpu_target(WithWarp, "hip", "gfx942", 64) == WithWarp("hip", "gfx942", 64)
    assert aot.make_gpu_target(WithoutWarp, "cuda", 90, 32) == WithoutWarp("cuda", 90)


# ---------------------------------------------------------------- spelling stand-ins


class FakeFn:
    __name__ = "kernel"
    arg_names = ("a_ptr", "n", "BLOCK")


class Source30:
    """3.0/3.1: constants=, int keys accepted silently."""

    def __init__(self, fn, signature, constants=None, attrs=None):
        self.signature, self.constants, self.attrs = signature, constants, attrs


class Source32:
    """3.2: constants=, keys must be names (TypeError otherwise)."""

    def __init__(self, fn, signature, constants=None, attrs=None):
        if any(not isinstance(k, str) for k in signature):
            raise TypeError("Signature keys must be string")
        self.signature, self.constants, self.attrs = signature, constants, attrs


class Source33:
    """3.3 on: constexprs=, every argument in the signature."""

    def __init__(self, fn, signature, constexprs=None, attrs=None):
        self.signature, self.constexprs, self.attrs = signature, constexprs, attrs


class SourceUnknown:
    def __init__(self, fn, sig, consts=None):
        pass


class Attrs30:
    def __init__(self, divisible_by_16=None, equal_to_1=None):
        self.divisible_by_16, self.equal_to_1 = divisible_by_16, equal_to_1


class Attrs32:
    def __init__(self, params=None, values=None):
        self.hints = None

    @classmethod
    def from_hints(cls, hints):
        made = cls()
        made.hints = hints
        return made


SIG = {"a_ptr": "*fp32", "n": "i32"}
CONSTS = {"BLOCK": 16}


def test_detects_30_spelling():
    spelling = aot.detect_spelling(Source30, FakeFn(), Attrs30)
    assert spelling == aot.SourceSpelling("constants", "index", False, "sets")
    kwargs = aot.build_source_kwargs(FakeFn.arg_names, SIG, CONSTS, spelling, Attrs30)
    assert kwargs["signature"] == {0: "*fp32", 1: "i32"}
    assert kwargs["constants"] == {2: 16}
    assert kwargs["attrs"].divisible_by_16 == {0}
    assert kwargs["attrs"].equal_to_1 == set()


def test_detects_32_spelling():
    spelling = aot.detect_spelling(Source32, FakeFn(), Attrs32)
    assert spelling == aot.SourceSpelling("constants", "name", False, "hints")
    kwargs = aot.build_source_kwargs(FakeFn.arg_names, SIG, CONSTS, spelling, Attrs32)
    assert kwargs["signature"] == {"a_ptr": "*fp32", "n": "i32"}
    assert kwargs["constants"] == {"BLOCK": 16}
    assert kwargs["attrs"].hints == {0: 16}


def test_detects_33_spelling():
    spelling = aot.detect_spelling(Source33, FakeFn(), None)
    assert spelling == aot.SourceSpelling("constexprs", "name", True, "path-dict")
    kwargs = aot.build_source_kwargs(FakeFn.arg_names, SIG, CONSTS, spelling, None)
    assert kwargs["signature"] == {"a_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    assert list(kwargs["signature"]) == ["a_ptr", "n", "BLOCK"]  # argument order
    assert kwargs["constexprs"] == {"BLOCK": 16}
    assert kwargs["attrs"] == {(0,): [["tt.divisibility", 16]]}


def test_a_tuple_argument_is_stated_in_the_33_spelling_and_refused_before():
    """A tuple's type goes into the signature as a tuple, its constant elements into the
    constexprs by path; the spellings before 3.3's have no way to say it."""
    sig = {"a_ptr": ("*fp32", ("i32", "constexpr")), "n": "i32"}
    consts = {"BLOCK": 16, (0, 1, 1): 1}
    spelling = aot.detect_spelling(Source33, FakeFn(), None)
    kwargs = aot.build_source_kwargs(FakeFn.arg_names, sig, consts, spelling, None)
    assert kwargs["signature"]["a_ptr"] == ("*fp32", ("i32", "constexpr"))
    assert kwargs["constexprs"] == {"BLOCK": 16, (0, 1, 1): 1}
    assert kwargs["attrs"] == {}  # a pointer inside a tuple gets no hint
    old = aot.detect_spelling(Source32, FakeFn(), Attrs32)
    with pytest.raises(aot.TupleArgumentsNotSpelled, match=r"\['a_ptr'\].*states no tuple"):
        aot.build_source_kwargs(FakeFn.arg_names, sig, consts, old, Attrs32)
    with pytest.raises(ValueError, match=r"paths \[\(1, 0\)\] name no element"):
        aot.build_source_kwargs(FakeFn.arg_names, sig, {"BLOCK": 16, (1, 0): 1}, spelling, None)
    with pytest.raises(ValueError, match="signature types must be"):
        aot.build_source_kwargs(FakeFn.arg_names, {"a_ptr": ("*fp32", ""), "n": "i32"}, consts,
                                spelling, None)  # fmt: skip


def test_signature_order_follows_the_kernel_not_the_caller():
    spelling = aot.detect_spelling(Source33, FakeFn(), None)
    kwargs = aot.build_source_kwargs(
        FakeFn.arg_names, {"n": "i32", "a_ptr": "*fp16"}, CONSTS, spelling, None
    )
    assert list(kwargs["signature"].items()) == [
        ("a_ptr", "*fp16"),
        ("n", "i32"),
        ("BLOCK", "constexpr"),
    ]


def test_unknown_spelling_is_an_error_naming_the_parameters():
    with pytest.raises(aot.SpellingNotRecognised, match="sig"):
        aot.detect_spelling(SourceUnknown, FakeFn(), None)


def test_unknown_attrs_descriptor_is_an_error():
    class Odd:
        def __init__(self, x=None):
            pass

    with pytest.raises(aot.SpellingNotRecognised, match="from_hints"):
        aot.detect_spelling(Source30, FakeFn(), Odd)


@pytest.mark.parametrize(
    ("signature", "constexprs", "message"),
    [
        ({"a_ptr": "*fp32", "n": "i32"}, {}, r"\['BLOCK'\] are in neither"),
        ({"a_ptr": "*fp32", "n": "i32", "BLOCK": "i32"}, {"BLOCK": 16}, "in both"),
        ({"a_ptr": "*fp32", "n": "i32", "x": "i32"}, {"BLOCK": 16}, r"signature names \['x'\]"),
        ({"a_ptr": "*fp32", "n": "i32"}, {"BLOCK": 16, "Y": 1}, r"constexprs names \['Y'\]"),
        ({"a_ptr": "*fp32", "n": 5}, {"BLOCK": 16}, "type strings"),
    ],
)
def test_check_arguments_names_the_problem(signature, constexprs, message):
    with pytest.raises(ValueError, match=message):
        aot.check_arguments(FakeFn.arg_names, signature, constexprs)


# ---------------------------------------------------------------- lld search


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def test_first_existing_takes_the_first_file(tmp_path):
    second = _touch(tmp_path / "b" / "ld.lld")
    third = _touch(tmp_path / "c" / "ld.lld")
    found = lld.first_existing(
        [("one", tmp_path / "a" / "ld.lld"), ("two", second), ("three", third)]
    )
    assert found == second


def test_first_existing_lists_every_place_when_none(tmp_path):
    missing = tmp_path / "nowhere" / "ld.lld"
    with pytest.raises(lld.LldNotFound) as info:
        lld.first_existing([("why-label", missing)])
    text = str(info.value)
    assert str(missing) in text and "why-label" in text and lld.LLD_ENV in text


def test_env_var_comes_first_then_the_wheel(tmp_path, monkeypatch):
    env_lld = _touch(tmp_path / "env" / "ld.lld")
    wheel_dir = tmp_path / "amd"
    _touch(wheel_dir / "llvm" / "bin" / "ld.lld")
    monkeypatch.setenv(lld.LLD_ENV, str(env_lld))
    candidates = lld.candidate_paths(wheel_dir)
    assert candidates[0] == (f"${lld.LLD_ENV}", env_lld)
    assert candidates[1] == ("shipped with triton", wheel_dir / "llvm" / "bin" / "ld.lld")
    assert lld.find_lld(wheel_dir) == env_lld
    monkeypatch.delenv(lld.LLD_ENV)
    assert lld.find_lld(wheel_dir) == wheel_dir / "llvm" / "bin" / "ld.lld"


def test_versioned_llvm_sorted_newest_first():
    paths = [Path("/usr/lib/llvm-9/bin/ld.lld"), Path("/usr/lib/llvm-19/bin/ld.lld")]
    assert sorted(paths, key=lld._llvm_major, reverse=True)[0].parts[3] == "llvm-19"


# ---------------------------------------------------------------- a real compile

RUNNER = textwrap.dedent(
    """
    import json, sys
    sys.path[:0] = [sys.argv[1]]
    from matrix.backends.aot import AotUnavailable, compile_for_target
    # A float32 tl.dot of two square tiles: the default-precision probes' own kernel.
    from matrix.probes.support.dot_precision import f32_dot_default
    try:
        sig = {"a": "*fp32", "b": "*fp32", "c": "*fp32"}
        art = compile_for_target(f32_dot_default, sig, {"BLOCK": 16}, sys.argv[2])
    except AotUnavailable as exc:
        print(json.dumps({"unavailable": str(exc)}))
    else:
        print(json.dumps({"ir": art.ir, "binaries": list(art.binaries), "target": art.target}))
    """
)

# What a float32 tl.dot must lower to in the final assembly of each target family.
DOT_INSTRUCTION = {"cuda": ("ptx", ("mma", "fma.rn.f32")), "hip": ("amdgcn", ("v_mfma",))}


@pytest.mark.slow
@pytest.mark.parametrize("target", AOT_TARGETS)
def test_real_compile_for_each_target(target, tmp_path):
    pytest.importorskip("triton")
    out = compile_in_child(RUNNER, str(REPO), target, timeout=300)
    if "unavailable" in out:
        pytest.skip(out["unavailable"])
    assert out["target"] == target
    assert "tt.dot" in out["ir"]["ttir"]
    stage, instructions = DOT_INSTRUCTION[target.split(":")[0]]
    assert any(i in out["ir"][stage] for i in instructions), out["ir"][stage][:2000]
    assert out["binaries"], "no cubin/hsaco came back"


def test_compile_rejects_an_interpreted_function():
    pytest.importorskip("triton")

    class NotJit:
        arg_names = ("x",)

    with pytest.raises(TypeError, match="JITFunction"):
        aot.compile_for_target(NotJit(), {"x": "i32"}, {}, "cuda:80")
