"""Every kernel variant the copy planner can ask for compiles with NVRTC for compute_80 and
compute_90 -- with no GPU and no driver (NVRTC through CuPy's bindings, headers from NVIDIA's
wheels). The list comes from variants.all_variants(), the planner's own naming function."""

from __future__ import annotations

import collections
import re

import pytest

from gpu_tensor.kernel import copy_launch, copy_plan, nvrtc, sources
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
    result = nvrtc.compile_program(
        sources.read_kernel(filename), arch, copy_launch.options_for(names), names
    )
    ptx = result.code.decode()
    assert set(result.lowered_names) == set(names)
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    missing = [n for n in names if result.lowered_names[n] not in entries]
    assert not missing, f"{len(missing)} kernels missing from the PTX, e.g. {missing[:3]}"
    assert f".target sm_{arch.split('_')[1]}" in ptx


def test_kernels_without_16_bit_floats_need_no_cuda_headers(monkeypatch):
    """An int32 or float32 copy compiles with no CUDA include tree (a GPU machine with
    cupy's wheels but no toolkit headers); only the fp16/bf16 kernels ask for them."""
    names = [v.name for v in V.all_variants() if not v.needs_fp16][:4]
    fp16 = [v.name for v in V.all_variants() if v.needs_fp16][:1]
    assert copy_launch.options_for(names) == () and copy_launch.options_for(fp16) == ("-DGT_FP16",)
    monkeypatch.setattr(nvrtc, "cuda_include_dir", lambda: None)
    file = V.all_variants()[0].file
    names = [v.name for v in V.all_variants() if not v.needs_fp16 and v.file == file][:4]
    result = nvrtc.compile_program(sources.read_kernel(file), "compute_90", (), names)
    assert set(result.lowered_names) == set(names)
    with pytest.raises(nvrtc.NvrtcError, match="cuda_fp16"):
        nvrtc.compile_program(sources.read_kernel(file), "compute_90", ("-DGT_FP16",), names)


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
    assert defines["GT_ND_BLOCK"] == copy_launch.ND_BLOCK
    assert defines["GT_ND_ITEMS"] == copy_launch.ND_ITEMS
    assert defines["GT_ND_ITEMS_SLOW"] == copy_launch.ND_ITEMS_SLOW
    assert defines["GT_VEC_BLOCK"] == copy_launch.VEC_BLOCK
    assert defines["GT_VEC_ITEMS"] == copy_launch.VEC_ITEMS
    assert defines["GT_TILE"] == copy_plan.TILE == 32
    assert defines["GT_TILE_ROWS"] == copy_launch.TILE_ROWS


def test_kernel_dir_holds_the_sources():
    kdir = sources.kernel_dir()
    for name in ("common.cuh", "host_emulation.h", "copy_nd.cu"):
        assert (kdir / name).is_file()


def _header_tree(root, cudart_version: int):
    root.mkdir(parents=True)
    (root / "cuda_fp16.h").write_text("// fp16\n")
    (root / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {cudart_version}\n")
    return root


@pytest.fixture
def fake_header_layouts(monkeypatch, tmp_path):
    """nvrtc.cuda_include_dir over a made-up site-packages/nvidia and toolkit root."""
    site = tmp_path / "site" / "nvidia"
    monkeypatch.setattr(sources, "_nvidia_wheel_dirs", lambda: [site])
    monkeypatch.setattr(
        sources, "_toolkit_roots", lambda extra_roots=(): iter([tmp_path / "toolkit"])
    )
    monkeypatch.setattr(nvrtc, "_pathfinder_include", lambda: None)
    nvrtc.cuda_include_dir.cache_clear()
    yield site, tmp_path / "toolkit"
    nvrtc.cuda_include_dir.cache_clear()


def test_cuda13_wheel_layout_wins_over_a_stray_cuda12_wheel(fake_header_layouts, monkeypatch):
    site, _ = fake_header_layouts
    cu12 = _header_tree(site / "cuda_runtime" / "include", 12090)
    cu13 = _header_tree(site / "cu13" / "include", 13000)
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (13, 0))
    assert nvrtc.cuda_include_dir() == cu13
    nvrtc.cuda_include_dir.cache_clear()
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (12, 9))
    assert nvrtc.cuda_include_dir() == cu12


def test_toolkit_headers_when_no_wheel_and_fallback_to_another_major(
    fake_header_layouts, monkeypatch
):
    site, toolkit = fake_header_layouts
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (13, 0))
    assert nvrtc.cuda_include_dir() is None  # nothing anywhere: NVRTC gets only kernels/
    nvrtc.cuda_include_dir.cache_clear()
    cu12 = _header_tree(site / "cuda_runtime" / "include", 12090)
    assert nvrtc.cuda_include_dir() == cu12  # wrong major, but better than none
    nvrtc.cuda_include_dir.cache_clear()
    tk = _header_tree(toolkit / "targets" / "x86_64-linux" / "include", 13010)
    assert nvrtc.cuda_include_dir() == tk  # the toolkit matches NVRTC's major


def test_toolkit_roots_start_with_cuda_path(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    assert next(iter(sources._toolkit_roots(extra_roots=("/elsewhere",)))) == tmp_path


def test_emulation_finds_a_complete_tree_in_a_cuda13_wheel(monkeypatch, tmp_path):
    """g++ needs crt/host_defines.h too; CUDA 13 wheels put headers in nvidia/cu13/include."""
    site = tmp_path / "nvidia"
    monkeypatch.setattr(sources, "_nvidia_wheel_dirs", lambda: [site])
    monkeypatch.setattr(sources, "_toolkit_roots", lambda extra_roots=(): iter([]))
    partial = _header_tree(site / "cuda_runtime" / "include", 12090)  # no crt/: incomplete
    complete = _header_tree(site / "cu13" / "include", 13000)
    (complete / "crt").mkdir()
    (complete / "crt" / "host_defines.h").write_text("// crt\n")
    sources.host_cuda_include_dir.cache_clear()
    try:
        assert sources.host_cuda_include_dir() == complete
        (complete / "crt" / "host_defines.h").unlink()
        sources.host_cuda_include_dir.cache_clear()
        assert sources.host_cuda_include_dir() is None and partial.is_dir()
    finally:
        sources.host_cuda_include_dir.cache_clear()
