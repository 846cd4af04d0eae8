"""The copy planner (pure Python): coalescing, path choice, 32/64-bit choice, alignment."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_tensor.kernel import copy_plan as P
from gpu_tensor.kernel import sources
from gpu_tensor.kernel import variants as V

F32, F16, F64 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)
BASE = 1 << 20  # a 256-byte aligned fake address, like CuPy's allocations


def plan_of(dst, src, dst_addr=BASE, src_addr=BASE * 64):
    """Plan dst[...] = src for numpy arrays (only their shapes/strides/dtypes are used)."""
    from gpu_tensor.kernel.copy import broadcast_strides

    return P.plan_copy(
        dst.shape,
        dst.strides,
        broadcast_strides(src.shape, src.strides, dst.shape),
        dst.dtype,
        src.dtype,
        dst_addr,
        src_addr,
    )


class Layout:
    """Shape/strides/dtype of an array that is never allocated (plans only read these)."""

    def __init__(self, shape, strides, dtype):
        self.shape, self.strides, self.dtype = tuple(shape), tuple(strides), np.dtype(dtype)

    @property
    def T(self):
        return self.transpose(*range(len(self.shape) - 1, -1, -1))

    def transpose(self, *axes):
        return Layout([self.shape[a] for a in axes], [self.strides[a] for a in axes], self.dtype)

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        if index and index[0] is Ellipsis:
            index = (slice(None),) * (len(self.shape) - len(index) + 1) + index[1:]
        shape, strides = list(self.shape), list(self.strides)
        for k, sl in enumerate(index):
            start, stop, step = sl.indices(shape[k])
            shape[k] = len(range(start, stop, step))
            strides[k] *= step
        return Layout(shape, strides, self.dtype)

    def broadcast_to(self, shape):
        strides = [
            0 if n == 1 and m != 1 else s
            for n, m, s in zip(self.shape, shape, self.strides, strict=True)
        ]
        return Layout(shape, strides, self.dtype)


def view(shape, dtype=F32):
    """A contiguous layout of `shape`."""
    dtype = np.dtype(dtype)
    strides, acc = [], dtype.itemsize
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return Layout(shape, strides[::-1], dtype)


def test_contiguous_same_dtype_is_memcpy_after_dropping_size1_dims():
    p = plan_of(view((4, 1, 8, 1, 16)), view((4, 1, 8, 1, 16)))
    assert p.path == "memcpy" and p.nbytes == 4 * 8 * 16 * 4 and p.variant is None


def test_coalescing_merges_dims_contiguous_on_both_sides():
    src = view((6, 10, 12, 20)).transpose(0, 3, 1, 2)  # 10 and 12 stay adjacent, contiguous
    p = plan_of(view(src.shape), src)
    assert p.path == "transpose"
    assert p.shape == (6, 20, 120)  # (10, 12) -> 120


def test_dims_are_ordered_by_destination_stride():
    dst = view((8, 40, 50)).transpose(2, 0, 1)  # dst walks its own memory out of order
    same_order = plan_of(dst, view((8, 40, 50)).transpose(2, 0, 1))
    assert same_order.path == "memcpy"  # identical memory order once sorted by dst stride
    p = plan_of(dst, view((50, 8, 40)))
    assert list(p.dst_strides) == sorted(p.dst_strides, reverse=True)
    assert p.path == "transpose" and p.dst_strides[-1] == 1


@pytest.mark.parametrize(
    "make,tile_shape",
    [
        (lambda: view((64, 96)).T, (96, 64)),
        (lambda: view((5, 64, 96)).transpose(0, 2, 1), (96, 64)),
        (lambda: view((8, 64, 28, 28)).transpose(0, 2, 3, 1), (784, 64)),  # NCHW -> NHWC
        (lambda: view((8, 28, 28, 64)).transpose(0, 3, 1, 2), (64, 784)),  # NHWC -> NCHW
        (lambda: view((30, 40, 3, 50)).transpose(2, 3, 0, 1), (150, 1200)),  # coalesces to 2-d
        (lambda: view((20, 30, 40, 50)).transpose(1, 3, 0, 2), (50, 40)),  # general 4-d
    ],
)
def test_transpose_path_tiles_the_two_swapped_dims(make, tile_shape):
    """tile_shape = (source-contiguous dim, destination-contiguous dim) after coalescing."""
    src = make()
    p = plan_of(view(src.shape), src)
    assert p.path == "transpose" and p.variant.kernel in ("transpose", "transpose_vec")
    i, j = p.tile
    assert (p.shape[i], p.shape[j]) == tile_shape
    assert abs(p.src_strides[i]) < abs(p.src_strides[j]) and p.dst_strides[j] == 1


@pytest.mark.parametrize(
    "src",
    [
        view((4096, 4)).T,  # skinny: one side shorter than a tile
        view((64, 1)).broadcast_to((64, 64)),  # expanded column: reads one value per row
        view((64, 64))[:, ::2],  # step slice: inner dim strided on the source only
    ],
    ids=["skinny", "expanded-column", "step"],
)
def test_generic_path(src):
    assert plan_of(view(src.shape), src).path == "nd"


def test_vectorized_same_dtype_picks_the_widest_aligned_unit():
    src = view((64, 128))[:, :64]  # rows of 256 B at a 512 B pitch
    p = plan_of(view(src.shape), src)
    assert p.path == "vectorized" and p.unit == 16 and p.shape == (64, 16)
    p8 = plan_of(view(src.shape), src, src_addr=BASE + 8)  # 8-byte aligned source
    assert p8.path == "vectorized" and p8.unit == 8
    p4 = plan_of(view(src.shape), src, src_addr=BASE + 4)
    assert p4.path == "nd" and p4.unit == 4


def test_vectorized_cast_needs_aligned_rows():
    src = view((64, 128))[:, 8:72]
    p = plan_of(view(src.shape, F16), src)
    assert p.path == "vectorized" and p.vec == 4 and p.variant.kernel == "rows"
    odd = view((64, 127))[:, :64]  # 127-element pitch: rows start misaligned
    assert plan_of(view(odd.shape, F16), odd).path == "nd"


def test_flat_cast_and_its_misaligned_fallback():
    assert plan_of(view((1000,), F16), view((1000,))).path == "flat"
    assert plan_of(view((1000,), F16), view((1000,)), src_addr=BASE + 4).path == "nd"


def test_broadcast_row_is_vectorized_and_counts_source_once():
    src = view((1, 256)).broadcast_to((512, 256))
    p = plan_of(view(src.shape), src)
    assert p.path == "vectorized"
    assert p.bytes_moved == 512 * 256 * 4 + 256 * 4


def test_vector_transpose_needs_same_dtype_alignment_and_even_sides():
    p = plan_of(view((64, 96)), view((96, 64)).T)
    assert p.variant.kernel == "transpose_vec" and p.vec == 2  # fp32: 8-byte accesses
    assert plan_of(view((64, 96), F16), view((96, 64), F16).T).vec == 4
    assert plan_of(view((64, 96), np.int8), view((96, 64), np.int8).T).vec == 4
    odd = plan_of(view((63, 96)), view((96, 63)).T)  # 63 rows: the vectors would straddle
    assert odd.variant.kernel == "transpose" and odd.vec == 1
    shifted = plan_of(view((64, 96)), view((96, 64)).T, src_addr=BASE + 4)
    assert shifted.variant.kernel == "transpose"
    cast = plan_of(view((64, 96), F16), view((96, 64)).T)
    assert cast.variant.kernel == "transpose"  # casts tile element by element
    f64 = plan_of(view((64, 96), F64), view((96, 64), F64).T)
    assert f64.variant.kernel == "transpose"  # 8-byte elements are wide enough already


def test_32_bit_index_when_sizes_allow_else_64():
    small = plan_of(view((4096, 4096)), view((4096, 4096)).T)
    assert small.path == "transpose" and not small.index64 and small.variant.name.endswith("int>")
    big = plan_of(view((65536, 40000)), view((40000, 65536)).T)  # 2.6e9 elements
    assert big.path == "transpose" and big.index64 and big.variant.name.endswith("long long>")
    # few elements, but offsets beyond 2^31 (a huge pitch) also need 64-bit math
    far = Layout((4, 64), (2**33, 8), F32)
    assert plan_of(view((4, 64)), far).index64
    # a cast past 2^31 cannot use the (32-bit only) tiled/vector cast kernels: generic 64-bit
    cast = plan_of(view((65536, 40000), F16), view((40000, 65536)).T)
    assert cast.path == "nd" and cast.index64


def test_misaligned_cast_is_staged_and_odd_casts_fall_back():
    src = Layout((16,), (6,), F32)
    assert plan_of(view((16,), F64), src).path == "staged"
    assert plan_of(view((16,), np.uint32), view((16,), np.int64)).path == "fallback"


def test_same_dtype_misaligned_is_split_into_smaller_units():
    p = plan_of(view((64, 33)), view((33, 64)).T, src_addr=BASE + 2)
    assert p.unit == 2  # float32 moved as two 2-byte halves
    assert p.variant.name.startswith(("gt_copy_nd<gt_bytes2", "gt_copy_transpose<gt_bytes2"))


def test_negative_strides_are_flipped_into_offsets():
    dst = view((10, 20))[::-1]
    p = plan_of(dst, view((10, 20)))
    assert all(s > 0 for s in p.dst_strides)
    assert p.dst_offset == -9 * 20 * 4 and p.src_offset == 9 * 20 * 4


def test_errors():
    with pytest.raises(ValueError, match="more than one element"):
        P.plan_copy((4, 4), (0, 4), (16, 4), F32, F32)
    with pytest.raises(ValueError, match="rank"):
        P.plan_copy((4, 4), (16, 4), (4,), F32, F32)
    assert P.plan_copy((0, 4), (16, 4), (16, 4), F32, F32).path == "empty"


def test_deep_problems_loop_on_the_host():
    src = view((2,) * 11).transpose(*range(10, -1, -1))
    p = plan_of(view(src.shape), src)
    assert len(p.loops) == 11 - P.MAX_DIMS and len(p.shape) == P.MAX_DIMS


@given(st.integers(1, 2**31 - 1), st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=20))
@settings(max_examples=300, deadline=None)
def test_magic_division_matches_integer_division(d, ns):
    magic, shift = P.magic_divisor(d)
    assert 0 < magic < 2**32
    for n in ns + [d - 1, d, d + 1, 2**31 - 1]:
        if 0 <= n < 2**31:
            assert ((((n * magic) >> 32) + n) >> shift) == n // d


def test_params_record_matches_the_cuda_struct():
    text = sources.read_kernel("common.cuh")
    body = text[text.index("struct GtCopyParams {") : text.index("};", text.index("GtCopyParams"))]
    fields = 0
    for decl in re.findall(r"long long ([^;]+);", body):
        for name in decl.split(","):
            m = re.search(r"\[(\w+)\]", name)
            fields += P.MAX_DIMS if m else 1
    assert P.PARAMS_DTYPE.itemsize == 8 * fields
    assert f"#define GT_MAX_DIMS {P.MAX_DIMS}" in text


_DTYPES = [
    np.dtype(n) for n in "bool uint8 int16 float16 float32 int64 complex128 uint32".split()
] + [np.dtype(ml_dtypes.bfloat16)]


@given(st.data())
@settings(max_examples=300, deadline=None)
def test_every_planned_variant_is_in_the_compiled_set(data):
    ndim = data.draw(st.integers(1, 5))
    shape = tuple(data.draw(st.lists(st.integers(1, 80), min_size=ndim, max_size=ndim)))
    perm = data.draw(st.permutations(range(ndim)))
    src_dt, dst_dt = data.draw(st.sampled_from(_DTYPES)), data.draw(st.sampled_from(_DTYPES))
    src = view([shape[p] for p in perm], src_dt).transpose(*np.argsort(perm))
    if data.draw(st.booleans()):
        src = src[..., ::2]
    dst = view(src.shape, dst_dt)
    off = data.draw(st.sampled_from([0, 2, 4, 8, 16]))
    p = plan_of(dst, src, src_addr=BASE + off)
    if p.variant is not None:
        assert p.variant in _ALL
    assert p.path in ("memcpy", "flat", "vectorized", "transpose", "nd", "staged", "fallback")


_ALL = frozenset(V.all_variants())
