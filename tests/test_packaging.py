"""The wheel's contents, checked on pyproject.toml: every package of the tree is listed, and
kernels/ travels as gpu_tensor._kernels with every source file it holds."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="Python < 3.11 has no tomllib to read pyproject")

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_of_the_tree_is_listed():
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "gpu_tensor").rglob("__init__.py")
    }
    listed = set(SETUPTOOLS["packages"])
    assert listed == on_disk | {"gpu_tensor._kernels"}, (
        "pyproject.toml [tool.setuptools] packages must list every package "
        f"(missing: {sorted(on_disk - listed)}, stale: {sorted(listed - on_disk - {'gpu_tensor._kernels'})})"
    )


def test_every_kernel_source_ships_in_the_wheel():
    assert SETUPTOOLS["package-dir"]["gpu_tensor._kernels"] == "kernels"
    patterns = SETUPTOOLS["package-data"]["gpu_tensor._kernels"]
    sources = [p.name for p in (ROOT / "kernels").iterdir() if p.is_file()]
    assert sources
    unshipped = [n for n in sources if not any(fnmatch.fnmatch(n, pat) for pat in patterns)]
    assert not unshipped, f"kernels/ files the wheel would leave out: {unshipped}"


def test_cuda_extras_bring_nvrtc_and_headers_and_one_cupy():
    """pip install 'gpu-tensor[cuda12]' (or [cuda13]) works on a GPU machine without a CUDA
    toolkit: NVRTC and the CUDA headers come with it; the test extra adds no cupy of its own
    (make install picks the extra matching an installed cupy)."""
    from pathlib import Path

    import tomllib

    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    c12, c13 = " ".join(extras["cuda12"]), " ".join(extras["cuda13"])
    assert "cupy-cuda12x" in c12 and "nvidia-cuda-nvrtc-cu12" in c12
    assert "nvidia-cuda-runtime-cu12" in c12  # include/cuda_fp16.h, cuda_bf16.h
    assert "cupy-cuda13x" in c13 and "nvrtc" in c13 and "cudart" in c13 and "cu12" not in c13
    assert not any("cupy" in d for d in extras["test"])
