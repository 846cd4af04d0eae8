"""kernels/amp_unscale.cu, GradScaler's multi-tensor check-and-unscale, against numpy: run on
the CPU under the host emulation (g++), and compiled by NVRTC for the GPU targets. The
expected values are numpy's: g * float32(1 / float64(scale)) computed in float32 (float64 for
float64 grads) and rounded to the grad's dtype; found_inf and the flag stamps by hand."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from gpu_tensor.backends import cuda_amp
from gpu_tensor.kernel import emulate, nvrtc, sources

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "float16": np.dtype(np.float16),
    "bfloat16": BF16,
}
NAMES = [f"gt_amp_unscale<{t}>" for t in cuda_amp.KERNEL_TYPES.values()] + ["gt_amp_write_table"]
needs_gxx = pytest.mark.skipif(emulate.compiler() is None, reason="host emulation needs g++")


@pytest.fixture(scope="module")
def lib():
    return emulate.build(sources.read_kernel(cuda_amp.FILE), NAMES)


def _grads(dtype, sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(n) * 100).astype(dtype) for n in sizes]


def _run(lib, dtype_name, grads, factor, mode, stamp=5, grid=3, flags_in=None):
    """Launch the kernel over `grads` (numpy arrays, changed in place); returns
    (found_inf, the flag bank that launch wrote)."""
    n = len(grads)
    table = cuda_amp.table([g.ctypes.data for g in grads], [g.size for g in grads])
    bank = cuda_amp.flags_offset(n, stamp)
    if flags_in is not None:
        table[bank : bank + n] = flags_in
    found = np.zeros((), np.float32)
    name = f"gt_amp_unscale<{cuda_amp.KERNEL_TYPES[dtype_name]}>"
    emulate.launch(
        lib,
        name,
        grid,
        cuda_amp.BLOCK,
        [
            table,
            np.uint64(table.ctypes.data + 8 * bank),
            np.int32(n),
            found,
            np.array(factor, np.float32),
            np.int32(cuda_amp.MODES[mode]),
            np.int64(stamp),
        ],
        serial=True,
    )
    return float(found), table[bank : bank + n].copy()


def _expected(g, inv):
    op = np.float64 if g.dtype == np.float64 else np.float32
    with np.errstate(over="ignore", invalid="ignore"):  # inf * x and rounding to inf
        return (g.astype(op) * op(inv)).astype(g.dtype)


@needs_gxx
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_unscales_every_tensor_and_flags_the_bad_ones(lib, dtype_name):
    dt = DTYPES[dtype_name]
    # sizes: one element, a chunk plus a tail, exactly one chunk, several chunks
    sizes = [1, cuda_amp.CHUNK + 7, cuda_amp.CHUNK, 3 * cuda_amp.CHUNK + 100]
    grads = _grads(dt, sizes)
    grads[1][cuda_amp.CHUNK + 3] = np.inf  # in the tail chunk
    grads[3][2 * cuda_amp.CHUNK + 1] = np.nan  # in a middle chunk
    scale = np.float32(3.0)  # 1/3 is inexact: the rounding of the inverse shows
    inv = np.float32(1.0 / np.float64(scale))
    want = [_expected(g, inv) for g in grads]
    found, flags = _run(lib, dtype_name, grads, scale, "reciprocal", stamp=9, flags_in=[4, 4, 4, 4])
    assert found == 1.0
    assert flags.tolist() == [4, 9, 4, 9]  # stamped where bad, left alone elsewhere
    for got, exp in zip(grads, want, strict=True):
        np.testing.assert_array_equal(
            got.view(np.uint8) if dt != np.float64 else got,
            exp.view(np.uint8) if dt != np.float64 else exp,
        )


@needs_gxx
@pytest.mark.parametrize("grid", [1, 2, 64])
def test_any_grid_covers_every_chunk(lib, grid):
    grads = _grads(np.float32, [5 * cuda_amp.CHUNK + 1, 10, 2 * cuda_amp.CHUNK], seed=grid)
    want = [_expected(g, np.float32(0.25)) for g in grads]
    found, flags = _run(lib, "float32", grads, 0.25, "multiply", grid=grid)
    assert found == 0.0 and flags.tolist() == [0, 0, 0]
    for got, exp in zip(grads, want, strict=True):
        np.testing.assert_array_equal(got, exp)


@needs_gxx
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_check_mode_and_a_factor_of_one_write_nothing(lib, dtype_name):
    dt = DTYPES[dtype_name]
    grads = _grads(dt, [100, 2000])
    grads[0][7] = -np.inf
    before = [g.copy() for g in grads]
    found, flags = _run(lib, dtype_name, grads, 2.0**20, "check", stamp=2)
    assert found == 1.0 and flags.tolist() == [2, 0]
    # torch: inv_scale == 1 leaves the grad as it is (a NaN keeps its payload bits)
    grads[1][3] = np.nan
    payload = grads[1].view(np.uint8).copy()
    for mode in ("multiply", "reciprocal"):
        found, _ = _run(lib, dtype_name, grads, 1.0, mode)
        assert found == 1.0
    np.testing.assert_array_equal(grads[1].view(np.uint8), payload)
    np.testing.assert_array_equal(grads[0].view(np.uint8), before[0].view(np.uint8))


@needs_gxx
def test_16_bit_rounding_subnormals_and_overflow(lib):
    """The kernel's own half and bfloat16 conversions against ml_dtypes/numpy, at the edges:
    ties, subnormals, values that round to inf, and NaN."""
    for dtype_name, dt in (("float16", np.float16), ("bfloat16", BF16)):
        info = ml_dtypes.finfo(dt)
        g = np.array(
            [
                1.0,
                3.0,
                float(info.tiny),
                float(info.smallest_subnormal),
                float(info.max),
                -float(info.max),
                5.0e-5,
                0.0,
                -0.0,
                1.5,
            ],
            dt,
        )
        for factor in (3.0, 0.5, 2.0**-10, 1.999):
            x = g.copy()
            _run(lib, dtype_name, [x], factor, "multiply")
            np.testing.assert_array_equal(
                x.view(np.uint16), _expected(g, np.float32(factor)).view(np.uint16)
            )


@needs_gxx
def test_write_table_copies_its_arguments_into_the_table(lib):
    """The graph-capture upload: TABLE_WORDS int64s per launch, carried by the argument."""
    want = np.random.default_rng(1).integers(-(2**62), 2**62, 2 * cuda_amp.TABLE_WORDS + 17)
    out = np.full(want.size + 3, -1, np.int64)
    for start in range(0, want.size, cuda_amp.TABLE_WORDS):
        part = want[start : start + cuda_amp.TABLE_WORDS]
        rec = np.zeros((), cuda_amp._WORDS)
        rec["count"], rec["offset"] = part.size, start
        rec["words"][: part.size] = part
        emulate.launch(lib, "gt_amp_write_table", 1, cuda_amp.BLOCK, [out, rec[()]], serial=True)
    np.testing.assert_array_equal(out[: want.size], want)
    assert (out[want.size :] == -1).all()  # nothing past the table


def test_table_layout():
    t = cuda_amp.table([0x1000, 0x2000, 0x3000], [1, cuda_amp.CHUNK, cuda_amp.CHUNK + 1])
    assert t.dtype == np.int64 and t.size == 5 * 3 + 1
    assert t[:3].tolist() == [0x1000, 0x2000, 0x3000]
    assert t[3:6].tolist() == [1, cuda_amp.CHUNK, cuda_amp.CHUNK + 1]
    assert t[6:10].tolist() == [0, 1, 2, 4]  # first chunk of each, then the total
    assert cuda_amp.total_chunks(t, 3) == 4
    assert not t[10:].any()  # both flag banks start clear
    assert {cuda_amp.flags_offset(3, s) for s in (1, 2)} == {10, 13}


def test_launch_shape_matches_the_source():
    src = sources.read_kernel(cuda_amp.FILE)
    block = int(re.search(r"#define GT_AMP_BLOCK (\d+)", src).group(1))
    per_thread = int(re.search(r"#define GT_AMP_CHUNK \(GT_AMP_BLOCK \* (\d+)\)", src).group(1))
    assert (cuda_amp.BLOCK, cuda_amp.CHUNK) == (block, block * per_thread)
    words = int(re.search(r"#define GT_AMP_TABLE_WORDS (\d+)", src).group(1))
    assert cuda_amp.TABLE_WORDS == words and cuda_amp._WORDS.itemsize == 8 * (words + 2)


def _nvrtc_missing() -> str | None:
    try:
        nvrtc.nvrtc_version()
    except Exception as exc:
        return f"NVRTC unavailable: {exc}"
    return None


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
@pytest.mark.parametrize("arch", ["compute_80", "compute_90"])
def test_compiles_with_nvrtc_without_cuda_headers(arch, monkeypatch):
    monkeypatch.setattr(nvrtc, "cuda_include_dir", lambda: None)  # 16-bit floats as bits
    result = nvrtc.compile_program(sources.read_kernel(cuda_amp.FILE), arch, (), NAMES)
    ptx = result.code.decode()
    assert set(result.lowered_names) == set(NAMES)
    assert all(result.lowered_names[n] in ptx for n in NAMES)
