"""Launch planning: vector/strided choice, coalescing, alignment, index width (pure)."""

from __future__ import annotations

import pytest
from fusion_variants import contiguous, transposed

from gpu_tensor.fusion.layout import Operand, Plan, broadcast_shapes, launch_config, plan


def test_contiguous_mixed_dtypes_keep_16_byte_vectors():
    p = plan((1024,), [contiguous((1024,), "float16"), contiguous((1024,), "float32"),
                       contiguous((1024,), "float16")])  # fmt: skip
    assert p.mode == "vector" and p.vec == 8  # fp16 moves 16 B, fp32 two 16 B chunks
    assert p.index == "int"


def test_row_and_column_broadcasts_stay_vectorized():
    ops = [contiguous((32, 64), "float16"), contiguous((64,), "float32"),
           contiguous((32, 1), "float32"), contiguous((32, 64), "float16")]  # fmt: skip
    p = plan((32, 64), ops)
    assert p.mode == "vector" and p.classes == ("c", "row", "col", "c")
    assert p.sizes == (32, 64) and p.strides[2] == 1


def test_dims_coalesce_when_every_operand_allows():
    p = plan((4, 8, 16), [contiguous((4, 8, 16), "float32")] * 2)
    assert p.sizes == (1, 512)
    p = plan((4, 8, 16), [contiguous((4, 8, 16), "float32"), contiguous((16,), "float32"),
                          contiguous((4, 8, 16), "float32")])  # fmt: skip
    assert p.sizes == (32, 16) and p.classes == ("c", "row", "c")


def test_transposed_operand_goes_strided():
    p = plan((16, 64), [transposed((16, 64), "float32"), contiguous((16, 64), "float32")])
    assert p.mode == "strided" and p.classes == ("s", "c")
    assert p.strides[0] == (1, 16)


def test_misaligned_pointer_narrows_or_drops_the_vector():
    p = plan((1024,), [contiguous((1024,), "float32", ptr=4096 + 8)] * 2)
    assert p.mode == "vector" and p.vec == 2  # 8-byte aligned: two floats per access
    p = plan((1024,), [contiguous((1024,), "float32", ptr=4096 + 4)] * 2)
    assert p.mode == "strided"


def test_row_length_not_a_multiple_of_the_vector_narrows_it():
    ops = [
        contiguous((8, 6), "float32"),
        contiguous((6,), "float32"),
        contiguous((8, 6), "float32"),
    ]
    p = plan((8, 6), ops)
    assert p.mode == "vector" and p.vec == 2


def test_large_spans_use_64_bit_indices():
    big = Operand((2**31,), (1,), 1, 0)
    assert plan((2**31,), [big, big]).index == "long long"
    neg = Operand((1000,), (-(2**30) * 3,), 4, 0)
    assert plan((1000,), [neg, contiguous((1000,), "float32")]).index == "long long"


def test_broadcast_shapes_and_error():
    assert broadcast_shapes((3, 1), (4,), ()) == (3, 4)
    with pytest.raises(ValueError, match=r"\(3, 2\) and \(4,\)"):
        broadcast_shapes((3, 2), (4,))


def test_launch_config_caps_the_grid_by_sm_count():
    p = Plan("vector", 4, "int", 10**8, (1, 10**8), ("c", "c"), (0, 0))
    grid, block = launch_config(p, sm_count=132)
    assert block == 256 and grid == 132 * 8
    small = Plan("vector", 4, "int", 1000, (1, 1000), ("c", "c"), (0, 0))
    assert launch_config(small, sm_count=132)[0] == 1
