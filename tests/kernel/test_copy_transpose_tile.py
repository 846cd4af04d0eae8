"""The vector transpose's shared-memory tile (kernels/copy_transpose.cu, gt_vec_tile_at):
every element has its own slot, and each warp access of both phases takes the fewest
shared-memory wavefronts its bytes allow (32 banks of 4 bytes). The layout function runs
under host emulation; the warp access patterns below are the kernel's."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_tensor.kernel import emulate, sources
from gpu_tensor.kernel import variants as V

pytestmark = pytest.mark.skipif(emulate.compiler() is None, reason="host emulation needs g++")

UNIT = {1: "unsigned char", 2: "gt_bytes2", 4: "gt_bytes4"}
# the kernel file's text (not an #include): the build cache is keyed by the source it is given
SOURCE = sources.read_kernel("copy_transpose.cu") + "".join(
    f"""
__global__ void tile_map_{t}(int* out) {{
    const int n = GT_TILE * {v};
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) out[r * n + c] = gt_vec_tile_at<{UNIT[t]}, {v}>(r, c);
}}
"""
    for t, v in V.TRANSPOSE_VEC.items()
)


def _wavefronts(element_offsets, size: int) -> int:
    """Shared-memory wavefronts for one warp access: the most distinct 4-byte words that
    fall in one bank (the same word read by many threads is one access)."""
    banks: dict[int, set] = {}
    for e in element_offsets:
        word = e * size // 4
        banks.setdefault(word % 32, set()).add(word)
    return max(len(words) for words in banks.values())


@pytest.fixture(scope="module")
def lib():
    return emulate.build(SOURCE, [f"tile_map_{t}" for t in V.TRANSPOSE_VEC])


@pytest.mark.parametrize("size", sorted(V.TRANSPOSE_VEC))
def test_vector_transpose_tile_is_a_permutation_without_bank_conflicts(lib, size):
    v = V.TRANSPOSE_VEC[size]
    n = 32 * v
    at = np.zeros(n * n, dtype=np.int32)
    emulate.launch(lib, f"tile_map_{size}", 1, 1, [at], serial=True)
    at = at.reshape(n, n)
    assert sorted(at.ravel().tolist()) == list(range(n * n))  # each element its own slot
    fewest = max(1, 32 * size // 128)  # a warp's 32 elements of `size` bytes
    worst = 0
    for lane in range(v):
        for fixed in range(n):
            fill = [at[fixed, v * tx + lane] for tx in range(32)]  # thread tx, its lane: a row
            drain = [at[v * tx + lane, fixed] for tx in range(32)]  # ... and a column
            worst = max(worst, _wavefronts(fill, size), _wavefronts(drain, size))
    assert worst == fewest, f"{size}-byte units: {worst} wavefronts per access, not {fewest}"
