"""matrix.gate.shapes: a cell that measures one shape of a call is tied only to that shape."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matrix.analyze.profile import Use
from matrix.gate.shapes import Sites, needed_shape

SOURCE = textwrap.dedent(
    """
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor


    @triton.jit
    def k(x_ptr, y_ptr, n, cond_arg, S: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        a = tl.where(x < y, x, y)
        b = tl.where(mask, x, 0.0)
        lt = y >= x
        c = tl.where(lt, y, x)
        d = tl.where(cond_arg, x, y)
        e = tl.where(x == y, x, y)
        d1 = tl.make_tensor_descriptor(x_ptr, [n, n], [S, 1], [BLOCK, BLOCK])
        d2 = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [BLOCK, BLOCK])


    def host(t):
        return TensorDescriptor.from_tensor(t, [16, 16])
    """
)


def _line(text: str) -> int:
    return next(i for i, s in enumerate(SOURCE.splitlines(), 1) if text in s)


def _sites(tmp_path: Path) -> Sites:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "k.py").write_text(SOURCE)
    return Sites([tmp_path / "pkg"])


def test_where_cells_concern_only_a_select_of_a_comparison_of_its_operands(tmp_path):
    sites = _sites(tmp_path)
    shape = needed_shape("values.where", "int32")
    assert shape == "select_of_compare"

    def has(text: str) -> bool | None:
        return sites.has_shape(Use("where", path="pkg/k.py", line=_line(text)), shape)

    assert has("a = tl.where") is True
    assert has("b = tl.where") is False  # a mask
    assert has("c = tl.where") is True  # through a local comparison, operands swapped
    assert has("d = tl.where") is None  # a parameter: cannot tell, stays tied
    assert has("e = tl.where") is False  # an equality is no min/max


def test_constexpr_stride_cases_need_an_in_kernel_descriptor_with_one(tmp_path):
    sites = _sites(tmp_path)
    shape = needed_shape("layout", "descriptor.stride_constexpr_not_16B")
    # the unaligned case: constexpr strides, less those provably a multiple of 16 elements
    assert shape == "constexpr_strides_not_16B"
    assert needed_shape("layout", "descriptor.strides_constexpr") == "constexpr_strides"
    assert needed_shape("layout", "descriptor.ok") is None

    def has(text: str, name: str) -> bool | None:
        use = Use("name", attrs=(("name", name),), path="pkg/k.py", line=_line(text))
        return sites.has_shape(use, shape)

    mk = "triton.language.make_tensor_descriptor"
    host = "triton.tools.tensor_descriptor.TensorDescriptor"
    assert has("d1 = ", mk) is True
    assert has("d2 = ", mk) is False  # runtime strides
    assert has("TensorDescriptor.from_tensor", host) is False
    assert has("from triton.tools", host) is False  # the import builds nothing


def test_a_global_read_is_tied_to_the_rule_case_of_its_binding(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "g.py").write_text(
        "import triton\nimport triton.language as tl\n"
        "PLAIN = 3\nCX = tl.constexpr(3)\nANN: tl.constexpr = 3\n"
        "from pkg.other import FAR\n"
    )
    sites = Sites([tmp_path / "pkg"])

    def has(name: str, case: str) -> bool | None:
        use = Use("rule.global_read", attrs=(("name", name),), path="pkg/g.py", line=9)
        return sites.has_shape(use, needed_shape("rules", case) or "")

    assert has("CX", "global_constexpr") is True
    assert has("CX", "global_annotated") is False
    assert has("ANN", "global_annotated") is True
    assert has("PLAIN", "global_plain") is True and has("PLAIN", "global_constexpr") is False
    assert has("FAR", "global_annotated") is None  # bound elsewhere: stays tied
