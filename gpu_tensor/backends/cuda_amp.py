"""GradScaler's multi-tensor kernel on cuda: kernels/amp_unscale.cu, one launch per (device,
dtype) group of gradients (torch's `_amp_foreach_non_finite_check_and_unscale_`).

The kernel reads a device table of the group's tensors (address, numel, first chunk; see the
.cu header), so any number of tensors costs one launch. Building that table on the host
(`table`) and uploading it (gpu_tensor.amp, from pinned memory, asynchronously) is the
caller's; this module packs the launch and runs it on the current stream. Under CUDA graph
capture `write_table` builds the table on the device instead, from kernel arguments (which
the graph keeps). It takes cupy arrays (a GPU, or the simulated CuPy under
GPU_TENSOR_FALLBACK=sim).
"""

from __future__ import annotations

import numpy as np

from ..kernel import compile as kcompile
from ..kernel import sources
from ._cupy import cupy

__all__ = [
    "BLOCK",
    "CHUNK",
    "KERNEL_TYPES",
    "TABLE_WORDS",
    "table",
    "flags_offset",
    "launch",
    "write_table",
]

FILE = "amp_unscale.cu"
BLOCK = 256  # amp_unscale.cu GT_AMP_BLOCK
CHUNK = BLOCK * 16  # amp_unscale.cu GT_AMP_CHUNK
BLOCKS_PER_SM = 8  # 2048 resident threads per SM / 256: a full wave, then blocks loop
# The kernel's element type per stored dtype name (16-bit floats are their bits).
KERNEL_TYPES = {
    "float32": "float",
    "float64": "double",
    "float16": "gt_amp_half",
    "bfloat16": "gt_amp_bf16",
}
TABLE_WORDS = 240  # amp_unscale.cu GT_AMP_TABLE_WORDS
_WORDS = np.dtype([("count", "<i8"), ("offset", "<i8"), ("words", "<i8", (TABLE_WORDS,))])
# one module for every kernel of the file: the table writer is loaded with the rest
_NAMES = tuple(f"gt_amp_unscale<{t}>" for t in KERNEL_TYPES.values()) + ("gt_amp_write_table",)
MODES = {"check": 0, "multiply": 1, "reciprocal": 2}
_sms: dict = {}


def table(addresses, numels) -> np.ndarray:
    """The int64 table the kernel reads (3n + 1 entries) followed by 2n zeroed flag slots
    (two banks: consecutive launches write alternate banks, so the last launch's flags stay
    readable while the next one runs). Every numel must be > 0."""
    numels = np.asarray(numels, np.int64)
    n = len(numels)
    out = np.zeros(5 * n + 1, np.int64)
    out[:n] = np.asarray(addresses, np.uint64).view(np.int64)
    out[n : 2 * n] = numels
    np.cumsum(-(-numels // CHUNK), out=out[2 * n + 1 : 3 * n + 1])
    return out


def flags_offset(n: int, stamp: int) -> int:
    """Index in `table(...)` of the flag bank that the launch stamped `stamp` writes."""
    return 3 * n + 1 + (stamp & 1) * n


def total_chunks(host_table: np.ndarray, n: int) -> int:
    return int(host_table[3 * n])


def _sm_count(cp) -> int:
    dev = cp.cuda.Device()
    sms = _sms.get(dev.id)
    if sms is None:
        sms = _sms[dev.id] = int(dev.attributes["MultiProcessorCount"])
    return sms


def launch(
    device_table, n: int, chunks: int, dtype_name: str, found_inf, factor, mode: str, stamp: int
) -> None:
    """One launch over the n tensors described by `device_table` (a cupy int64 array made
    from `table`), on its device's current stream: sets `found_inf` (float32, 0-dim) to 1 on
    any inf/NaN, stamps their flags with `stamp`, and multiplies in place by `factor` (a
    float32 0-dim array) per `mode`: 'check', 'multiply' or 'reciprocal' (by
    float32(1 / float64(factor)))."""
    cp = cupy()
    name = f"gt_amp_unscale<{KERNEL_TYPES[dtype_name]}>"
    with cp.cuda.Device(device_table.device.id):  # modules load, and launch, per device
        fn = kcompile.get_function(sources.read_kernel(FILE), name, (), _NAMES)
        grid = (max(1, min(chunks, _sm_count(cp) * BLOCKS_PER_SM)), 1, 1)
        flags = np.uint64(device_table.data.ptr + 8 * flags_offset(n, stamp))
        fn(
            grid,
            (BLOCK, 1, 1),
            (
                device_table,
                flags,
                np.int32(n),
                found_inf,
                factor,
                np.int32(MODES[mode]),
                np.int64(stamp),
            ),
            stream=cp.cuda.get_current_stream(),
        )


def write_table(device_table, host_table: np.ndarray) -> None:
    """device_table[:] = host_table, by launches of gt_amp_write_table whose arguments carry
    the values (TABLE_WORDS a launch): the graph-capture-safe upload."""
    cp = cupy()
    with cp.cuda.Device(device_table.device.id):
        fn = kcompile.get_function(sources.read_kernel(FILE), "gt_amp_write_table", (), _NAMES)
        stream = cp.cuda.get_current_stream()
        for start in range(0, len(host_table), TABLE_WORDS):
            part = host_table[start : start + TABLE_WORDS]
            rec = np.zeros((), _WORDS)
            rec["count"], rec["offset"] = len(part), start
            rec["words"][: len(part)] = part
            fn((1, 1, 1), (BLOCK, 1, 1), (device_table, np.array(rec)), stream=stream)
