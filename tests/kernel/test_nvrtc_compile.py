"""Every kernel variant the copy planner can ask for compiles with NVRTC for compute_80 and
compute_90 -- with no GPU and no driver (NVRTC through CuPy's bindings, headers from NVIDIA's
wheels). The list comes from variants.all_variants(), the planner's own naming function."""

from __future__ import annotations

import collections
import re

import pytest

from gpu_tensor.kernel import compile as kcompile
from gpu_tensor.kernel import nvrtc, sources
from gpu_tensor.kernel import variants as V


def _nvrtc_missing() -> str | None:
    try:
        nvrtc.nvrtc_version()
    except Exception as exc:  # no cupy, or no libnvrtc: say which
        return f"NVRTC unavailable: {exc}"
    return None


pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))

ARCHS = ("compute_80", "compute_90")
BY_FILE = collections.defaultdict(list)
for _v in V.all_variants():
    BY_FILE[_v.file].append(_v.name)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("filename", sorted(BY_FILE))
def test_every_variant_compiles(filename, arch):
    names = BY_FILE[filename]
    result = nvrtc.compile_program(sources.read_kernel(filename), arch, (), names)
    ptx = result.code.decode()
    assert set(result.lowered_names) == set(names)
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    missing = [n for n in names if result.lowered_names[n] not in entries]
    assert not missing, f"{len(missing)} kernels missing from the PTX, e.g. {missing[:3]}"
    assert f".target sm_{arch.split('_')[1]}" in ptx


def test_variant_list_covers_every_kernel_and_dtype():
    kernels = {v.kernel for v in V.all_variants()}
    assert kernels == {"flat", "rows", "transpose", "transpose_vec", "nd"}
    names = " ".join(v.name for v in V.all_variants())
    for dtype in V.CAST_DTYPES:
        assert V.c_type(dtype) in names
    for unit in V.UNIT_SIZES:
        assert f"gt_bytes{unit}," in names
    assert ", long long>" in names and ", int>" in names


def test_compile_ptx_and_errors():
    ptx = nvrtc.compile_ptx('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.f; }')
    assert ".entry k" in ptx
    with pytest.raises(nvrtc.NvrtcError) as err:
        nvrtc.compile_ptx("__global__ void k() { undeclared_thing(); }")
    assert "undeclared_thing" in err.value.log
    with pytest.raises(ValueError, match="virtual arch"):
        nvrtc.compile_ptx("", arch="sm_90")


def test_cubin_for_a_real_arch():
    result = nvrtc.compile_program('extern "C" __global__ void k() {}', "sm_90")
    assert result.code[:4] == b"\x7fELF"


@pytest.mark.parametrize("filename", ["copy_contiguous.cu", "copy_transpose.cu", "copy_nd.cu"])
def test_kernel_files_open_with_signature_launch_shape_and_numpy_equivalent(filename):
    head = sources.read_kernel(filename)[:2500]
    for label in ("Signature", "Launch shape", "numpy equivalent"):
        assert label in head, f"{filename} does not say its {label} at the top"


def test_launch_constants_match_the_kernel_sources():
    defines = {}
    for name in ("copy_nd.cu", "copy_contiguous.cu", "copy_transpose.cu"):
        for key, value in re.findall(r"#define (GT_\w+) (\d+)", sources.read_kernel(name)):
            defines[key] = int(value)
    assert defines["GT_ND_BLOCK"] == kcompile.ND_BLOCK
    assert defines["GT_ND_ITEMS"] == kcompile.ND_ITEMS
    assert defines["GT_ND_ITEMS_SLOW"] == kcompile.ND_ITEMS_SLOW
    assert defines["GT_VEC_BLOCK"] == kcompile.VEC_BLOCK
    assert defines["GT_VEC_ITEMS"] == kcompile.VEC_ITEMS
    assert defines["GT_TILE"] == kcompile.TILE == 32
    assert defines["GT_TILE_ROWS"] == kcompile.TILE_ROWS


def test_kernel_dir_holds_the_sources():
    kdir = sources.kernel_dir()
    for name in ("common.cuh", "host_emulation.h", "copy_nd.cu"):
        assert (kdir / name).is_file()
