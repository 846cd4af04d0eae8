"""Every copy kernel runs on the CPU under kernels/host_emulation.h (g++) and matches numpy,
bit for bit, over random shapes, permutations, slices, offsets, broadcasts and dtypes.

Through the one copy executor (`strided_copy`, the GPU's own), with the host launcher as its
last step: only the launch differs from a GPU run (tests/kernel/test_cuda_copy.py)."""

from __future__ import annotations

import dataclasses
import zlib

import ml_dtypes
import numpy as np
import pytest

from gpu_tensor.kernel import copy as kcopy
from gpu_tensor.kernel import copy_launch, copy_plan, emulate
from gpu_tensor.kernel import variants as V
from gpu_tensor.kernel.copy import EmulatedCopyKernels, HostLauncher, execute, strided_copy

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="host emulation needs g++")

F32 = np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
FP16_REASON = (
    "no complete CUDA include tree (crt/host_defines.h) for g++ to compile "
    "cuda_fp16.h; fp16/bf16 kernels are checked by NVRTC only here"
)

# Every dtype to and from float32, plus the pairs whose conversions take other routes.
CAST_PAIRS = sorted(
    {(d, F32) for d in V.CAST_DTYPES if d != F32}
    | {(F32, s) for s in V.CAST_DTYPES if s != F32}
    | {
        (F16, BF16),
        (BF16, F16),
        (np.dtype(np.complex128), np.dtype(np.complex64)),
        (F16, np.dtype(np.int64)),
        (np.dtype(np.bool_), np.dtype(np.float64)),
        (np.dtype(np.int8), np.dtype(np.complex128)),
        (BF16, np.dtype(np.float64)),
        (np.dtype(np.uint8), np.dtype(np.int8)),
    },
    key=str,
)
ALL_PAIRS = [(d, s) for d in V.CAST_DTYPES for s in V.CAST_DTYPES if d != s]
SAME_DTYPES = [
    np.dtype(n)
    for n in "bool uint8 int16 float16 float32 int64 complex64 complex128 uint32".split()
] + [BF16]


def _needs_fp16(*dtypes) -> bool:
    return any(np.dtype(d) in (F16, BF16) for d in dtypes)


def _skip_without_fp16(*dtypes) -> None:
    if _needs_fp16(*dtypes) and not emulate.have_fp16():
        pytest.skip(FP16_REASON)


@pytest.fixture(scope="module")
def host():
    """One g++ translation unit for every variant these tests reach (cached on disk)."""
    vs = list(V.same_dtype_variants())
    for d, s in CAST_PAIRS:
        vs.extend(V.cast_variants(d, s))
    # The conversion code (common.cuh gt_cast) is shared by every kernel: the nd kernel
    # checks it for every pair; CAST_PAIRS check every kernel's own structure.
    vs += [V.variant("nd", V.c_type(d), V.c_type(s)) for d, s in ALL_PAIRS]
    return HostLauncher(EmulatedCopyKernels(vs))


def _check(host, dst_base, dst_index, src, copy_cases):
    expected = copy_cases.expected_after(dst_base, dst_index, src)
    plan = strided_copy(dst_base[dst_index], src, launcher=host)
    assert copy_cases.same_bits(dst_base, expected), (
        f"{plan.path} {plan.variant} shape={src.shape} src_strides={src.strides} "
        f"dst_strides={dst_base[dst_index].strides}"
    )
    return plan


@pytest.mark.parametrize("dtype", SAME_DTYPES, ids=str)
def test_random_same_dtype(host, dtype, copy_cases):
    _skip_without_fp16(dtype)
    rng = np.random.default_rng(zlib.crc32(str(dtype).encode()))
    paths = set()
    for _ in range(60):
        dst_base, idx, src = copy_cases.random_case(rng, dtype, dtype)
        paths.add(_check(host, dst_base, idx, src, copy_cases).path)
    assert paths & {"nd", "transpose", "vectorized", "memcpy"}


@pytest.mark.parametrize("pair", CAST_PAIRS, ids=lambda p: f"{p[1]}->{p[0]}")
def test_random_casts(host, pair, copy_cases):
    dst_dtype, src_dtype = pair
    _skip_without_fp16(*pair)
    rng = np.random.default_rng(zlib.crc32(f"{dst_dtype}<-{src_dtype}".encode()))
    for _ in range(12):
        dst_base, idx, src = copy_cases.random_case(rng, dst_dtype, src_dtype)
        _check(host, dst_base, idx, src, copy_cases)


@pytest.mark.parametrize("pair", ALL_PAIRS, ids=lambda p: f"{p[1]}->{p[0]}")
def test_every_cast_pair(host, pair, copy_cases):
    """Every (src, dst) conversion the kernels implement, through the generic kernel."""
    dst_dtype, src_dtype = pair
    _skip_without_fp16(*pair)
    rng = np.random.default_rng(zlib.crc32(f"all {dst_dtype}<-{src_dtype}".encode()))
    nonneg = dst_dtype.kind in copy_cases.UNSIGNED
    src = copy_cases.values(src_dtype, (23, 37), rng, nonneg=nonneg)[::2, ::3]
    dst_base = copy_cases.values(dst_dtype, src.shape, rng)
    plan = _check(host, dst_base, (Ellipsis,), src, copy_cases)
    assert plan.path == "nd"


def test_each_path(host, copy_cases, path_case):
    """Each kernel path on purpose (cases in conftest.PATH_CASES, shared with the GPU tests)."""
    name, path, dst_dtype, make = path_case
    src = make()
    _skip_without_fp16(dst_dtype, src.dtype)
    dst_base = copy_cases.values(dst_dtype, src.shape, np.random.default_rng(1))
    plan = _check(host, dst_base, (Ellipsis,), src, copy_cases)
    assert plan.path == path, plan.reason
    if name.startswith("vector"):
        assert plan.variant.kernel == "transpose_vec", plan.reason


def test_misaligned_cast_is_staged(host, copy_cases):
    raw = np.zeros(4 * 64 + 1, np.uint8)
    src = raw[1:].view(np.float32)  # 1-byte aligned float32
    src[:] = copy_cases.values(F32, (64,), np.random.default_rng(3))
    dst = np.zeros(64, np.float64)
    plan = strided_copy(dst, src, launcher=host)
    assert plan.path == "staged"
    assert np.array_equal(dst, src.astype(np.float64))


def test_logical_bfloat16_in_uint16_storage(host, copy_cases):
    """CuPy has no bfloat16: the core keeps its bits in uint16 arrays and names the dtype."""
    if not emulate.have_fp16():
        pytest.skip(FP16_REASON)
    src = copy_cases.values(F32, (40, 36), np.random.default_rng(7)).T
    dst = np.zeros(src.shape, np.uint16)
    strided_copy(dst, src, dst_dtype=BF16, launcher=host)
    assert np.array_equal(dst.view(BF16), src.astype(BF16))
    back = np.zeros(src.shape, F32)
    strided_copy(back, dst.T.T, src_dtype=BF16, launcher=host)
    assert np.array_equal(back, src)
    with pytest.raises(ValueError, match="item sizes"):
        strided_copy(dst, src, dst_dtype=F32, launcher=host)


def test_overlapping_source_is_copied_first(host, copy_cases):
    a = copy_cases.values(F32, (48, 48), np.random.default_rng(4))
    expected = a.T.copy()
    strided_copy(a, a.T, launcher=host)  # x.copy_(x.t()) reads what it overwrites
    assert np.array_equal(a, expected)


@pytest.mark.parametrize(
    "shape,dtype,view",
    [
        ((70, 45), F32, lambda a: a.T),
        ((3, 40, 50), F32, lambda a: a[:, ::2].transpose(0, 2, 1)),
        ((40, 50), np.int16, lambda a: a[::3, ::2]),
    ],
    ids=["transpose", "batched-transpose", "nd"],
)
def test_64bit_index_variants(host, copy_cases, shape, dtype, view):
    """The 64-bit variants (only planned past 2^31 items) run the same cases here."""
    src = view(copy_cases.values(dtype, shape, np.random.default_rng(2)))
    dst = np.zeros(src.shape, src.dtype)
    plan = copy_plan.plan_copy(
        dst.shape, dst.strides, src.strides, dst.dtype, src.dtype, dst.ctypes.data, src.ctypes.data
    )
    assert plan.path in ("transpose", "nd") and not plan.index64
    unit = V.unit_type(plan.unit)
    plan64 = dataclasses.replace(
        plan, index64=True, vec=1, variant=V.variant(plan.path, unit, unit, 1, True)
    )
    assert plan64.variant in host.kernels  # the batched translation unit, not a rebuild
    execute(plan64, dst, src, host)
    assert np.array_equal(dst, src)


def test_thread_mode_matches_serial(host, copy_cases):
    src = copy_cases.values(F32, (40, 50), np.random.default_rng(5))[:, ::2]
    dst = np.zeros(src.shape, F32)
    threaded = HostLauncher(host.kernels, threads=True)
    plan = strided_copy(dst, src, launcher=threaded)
    assert plan.path == "nd" and copy_launch.launch_spec(plan, 0, 0).serial_ok  # would run serially
    assert np.array_equal(dst, src)


def test_syncthreads_in_serial_launch_is_reported(host, copy_cases):
    """The emulator's own guard (below the executor, which never asks for this)."""
    src = copy_cases.values(F32, (40, 40), np.random.default_rng(6)).T
    dst = np.zeros(src.shape, F32)
    plan = copy_plan.plan_copy(
        dst.shape, dst.strides, src.strides, F32, F32, dst.ctypes.data, src.ctypes.data
    )
    spec = copy_launch.launch_spec(plan, dst.ctypes.data, src.ctypes.data)
    assert not spec.serial_ok
    with pytest.raises(emulate.EmulationError, match="__syncthreads"):
        emulate.launch(host.kernels.lib, spec.name, spec.grid, spec.block, spec.args, serial=True)


def test_launchers_refuse_the_other_kind_of_array(host):
    """numpy arrays never reach a GPU launch, nor device arrays the host emulation."""
    a = np.zeros(4, F32)
    with pytest.raises(TypeError, match="numpy arrays"):
        strided_copy(a, a, launcher=kcopy.CudaLauncher(_FakeCupy))
    with pytest.raises(TypeError, match="HostLauncher copies numpy arrays"):
        strided_copy(a, [0.0] * 4, launcher=host)


class _FakeCupy:
    """Only the array type: CudaLauncher.check looks at nothing else."""

    class ndarray:  # noqa: N801 - cupy's name
        pass
