"""How a copy plan runs: its launch shape (grid, block) and packed arguments, a `LaunchSpec`
that CuPy and the host emulation both take, and `launch` on a GPU through the kernel loader
(kernel/compile.py). The planner that decides the path is kernel/copy_plan.py; the executor
that walks a plan's host loops and calls a launcher is kernel/copy.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import sources
from .compile import get_function
from .copy_plan import TILE, params_record

__all__ = ["LaunchSpec", "launch_spec", "cupy_args", "options_for", "launch"]

# Launch shapes; each must match the #defines of its .cu file (tests check the sources).
ND_BLOCK, ND_ITEMS, ND_ITEMS_SLOW = 256, 4, 2  # copy_nd.cu GT_ND_BLOCK / _ITEMS / _ITEMS_SLOW
VEC_BLOCK, VEC_ITEMS = 256, 4  # copy_contiguous.cu GT_VEC_BLOCK / GT_VEC_ITEMS
TILE_ROWS = 8  # copy_transpose.cu GT_TILE_ROWS (its GT_TILE is copy_plan.TILE)
MAX_GRID_X = 2**31 - 1  # CUDA's grid.x limit; the kernels loop over anything beyond it


@dataclasses.dataclass(frozen=True)
class LaunchSpec:
    variant: object  # variants.KernelVariant: the instantiation to run
    grid: tuple
    block: tuple
    args: tuple  # np.uint64 pointers and a structured np.void: valid for CuPy and emulation
    serial_ok: bool  # no __syncthreads: the emulator may run threads serially

    @property
    def file(self) -> str:  # kernels/<file>
        return self.variant.file

    @property
    def name(self) -> str:  # NVRTC name expression
        return self.variant.name


def _grid(items: int, per_block: int) -> tuple:
    return (max(1, min(MAX_GRID_X, -(-items // per_block))), 1, 1)


def launch_spec(plan, dst_addr: int, src_addr: int) -> LaunchSpec:
    """Kernel launch for a CopyPlan whose bases (after plan offsets) are dst_addr/src_addr."""
    var = plan.variant
    dst, src = np.uint64(dst_addr + plan.dst_offset), np.uint64(src_addr + plan.src_offset)
    if plan.path == "flat":
        n = plan.shape[0]
        grid = _grid(n // plan.vec, VEC_BLOCK * VEC_ITEMS)
        return LaunchSpec(var, grid, (VEC_BLOCK, 1, 1), (dst, src, np.uint64(n)), True)
    params = params_record(plan)
    if plan.path == "transpose":
        ntiles = int(params["tiles_i"]) * int(params["tiles_j"]) * int(params["numel"])
        return LaunchSpec(
            var, (min(MAX_GRID_X, ntiles), 1, 1), (TILE, TILE_ROWS, 1), (dst, src, params), False
        )
    if var.kernel == "rows":
        grid = _grid(int(params["numel"]), VEC_BLOCK * VEC_ITEMS)
        return LaunchSpec(var, grid, (VEC_BLOCK, 1, 1), (dst, src, params), True)
    # copy_nd.cu: 4 items per thread for same-dtype 32-bit problems, 2 otherwise
    items = ND_ITEMS if (plan.unit and not plan.index64) else ND_ITEMS_SLOW
    grid = _grid(int(params["numel"]), ND_BLOCK * items)
    return LaunchSpec(var, grid, (ND_BLOCK, 1, 1), (dst, src, params), True)


def cupy_args(args) -> tuple:
    """LaunchSpec args in CuPy's convention: a struct goes by value as a size-1 numpy array
    (CuPy copies its bytes into the parameter); numpy scalars go by value as they are."""
    return tuple(np.array(a) if isinstance(a, np.void) else a for a in args)


def options_for(name_expressions) -> tuple:
    """NVRTC options a copy-kernel instantiation needs: GT_FP16 (common.cuh then includes
    cuda_fp16.h / cuda_bf16.h) only for the 16-bit float types, so every other kernel
    compiles without a CUDA include tree."""
    fp16 = any("__half" in n or "__nv_bfloat16" in n for n in name_expressions)
    return ("-DGT_FP16",) if fp16 else ()


def launch(spec: LaunchSpec, stream=None) -> None:
    """Run a LaunchSpec on the current CUDA device (asynchronously, on ``stream``)."""
    fn = get_function(sources.read_kernel(spec.file), spec.name, options_for((spec.name,)))
    fn(spec.grid, spec.block, cupy_args(spec.args), stream=stream)
