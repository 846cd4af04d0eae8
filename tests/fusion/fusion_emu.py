"""Run generated fusion kernels on the CPU under host emulation (test helper)."""

from __future__ import annotations

import numpy as np

from gpu_tensor.fusion.eager import prepare
from gpu_tensor.fusion.layout import launch_config
from gpu_tensor.kernel import emulate

EMU_SMS = 2  # a small grid: the emulator runs blocks one after another
EMU_BLOCK = 64


def aligned_empty(shape, dtype, align=64):
    """An empty array whose data is `align`-byte aligned (vector paths need 16)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(n + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + n].view(dtype).reshape(shape)


def aligned_copy(a):
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


def run(graph, arrays, scalars=(), roots=None, out_dtypes=None, shape=None):
    """Launch the graph's kernel under emulation; returns the output arrays."""
    roots = tuple(graph.outputs if roots is None else roots)
    out_dtypes = [r.dtype for r in roots] if out_dtypes is None else list(out_dtypes)
    if shape is None:
        used = graph.used_inputs(roots)
        shape = np.broadcast_shapes(*(arrays[n.index].shape for n in used))
    outs = [aligned_empty(shape, d) for d in out_dtypes]
    ksrc, plan, args = prepare(graph, roots, arrays, list(scalars), outs, out_dtypes)
    lib = emulate.build(ksrc.source, [ksrc.name])
    grid, block = launch_config(plan, EMU_SMS, block=EMU_BLOCK)
    emulate.launch(lib, ksrc.name, grid, block, args, serial=True)
    return outs, plan
