"""Kernel variants shared by the fusion tests: a name -> (graph, plan, out dtypes) table.

Each variant is a traced function plus a launch plan; tests generate its source (golden),
compile it with NVRTC, and run it under host emulation.
"""

from __future__ import annotations

import numpy as np

from gpu_tensor.fusion.dtypes import BFLOAT16
from gpu_tensor.fusion.layout import Operand, plan
from gpu_tensor.fusion.optable import OPS
from gpu_tensor.fusion.trace import apply, trace

F16, F32, F64, I32, I64, U8, B = (np.dtype(d) for d in
                                  (np.float16, np.float32, np.float64, np.int32, np.int64,
                                   np.uint8, np.bool_))  # fmt: skip


def contiguous(shape, dtype, ptr=4096):
    strides, acc = [], 1
    for size in reversed(shape):
        strides.insert(0, acc)
        acc *= size
    return Operand(tuple(shape), tuple(strides), np.dtype(dtype).itemsize, ptr)


def transposed(shape, dtype, ptr=4096):
    """A (rows, cols) view of a contiguous (cols, rows) array."""
    rows, cols = shape
    return Operand((rows, cols), (1, rows), np.dtype(dtype).itemsize, ptr)


def _axpb(x, a, b):
    return a * x + b


def _gelu_axpb(x, a, b):
    return (a * x + b).gelu()


def _norm(x, mean, std, gamma, beta):
    return ((x - mean) / std * gamma + beta).half()


def _two_outputs(x, y):
    s = x + y
    return s.sigmoid(), s > 0


def _mixed(i, h):
    return (i * h).relu().clamp(-1.0, 1.0)


def _where(c, x, y):
    return apply("where", c, x.tanh(), y * 0.5)


def variants():
    """name -> (graph, plan, out_dtypes). Shapes are small so host emulation is quick."""
    v = {}
    g, _ = trace(_axpb, [("tensor", F32, 1), ("scalar", float), ("scalar", float)])
    v["axpb_f32_vector"] = (g, plan((1003,), [contiguous((1003,), F32)] * 2), [F32])
    g, _ = trace(_gelu_axpb, [("tensor", F16, 2), ("scalar", float), ("scalar", float)])
    v["gelu_f16_vector"] = (g, plan((16, 64), [contiguous((16, 64), F16)] * 2), [F16])
    g, _ = trace(_gelu_axpb, [("tensor", F16, 2), ("scalar", float), ("scalar", float)])
    v["gelu_f16_transposed"] = (g, plan((16, 64), [transposed((16, 64), F16),
                                                  contiguous((16, 64), F16)]), [F16])  # fmt: skip
    specs = [("tensor", F16, 2), ("tensor", F32, 2), ("tensor", F32, 2), ("tensor", F32, 1),
             ("tensor", F32, 1)]  # fmt: skip
    g, _ = trace(_norm, specs)
    ops = [contiguous((16, 64), F16), contiguous((16, 1), F32), contiguous((16, 1), F32),
           contiguous((64,), F32), contiguous((64,), F32), contiguous((16, 64), F16)]  # fmt: skip
    v["norm_rowcol_vector"] = (g, plan((16, 64), ops), [F16])
    g, _ = trace(_two_outputs, [("tensor", BFLOAT16, 2), ("tensor", F32, 1)])
    ops = [contiguous((8, 32), BFLOAT16), contiguous((32,), F32), contiguous((8, 32), BFLOAT16),
           contiguous((8, 32), B)]  # fmt: skip
    v["two_outputs_bf16"] = (g, plan((8, 32), ops, n_outputs=2), [BFLOAT16, B])
    g, _ = trace(_mixed, [("tensor", I32, 3), ("tensor", F16, 3)])
    ops = [Operand((4, 5, 6), (30, 1, 5), 4, 0), contiguous((4, 5, 6), F16),
           contiguous((4, 5, 6), F16)]  # fmt: skip
    v["mixed_strided_3d"] = (g, plan((4, 5, 6), ops), [F16])
    g, _ = trace(_where, [("tensor", B, 1), ("tensor", F64, 1), ("tensor", F32, 1)])
    ops = [contiguous((257,), B), contiguous((257,), F64), contiguous((257,), F32),
           contiguous((257,), F64)]  # fmt: skip
    v["where_f64_vector"] = (g, plan((257,), ops), [F64])
    g, _ = trace(_axpb, [("tensor", I64, 1), ("scalar", int), ("scalar", int)])
    big = Operand((2**31 + 5,), (1,), 8, 8)  # 64-bit indexing (planned only, never run)
    v["axpb_i64_index64"] = (g, plan((2**31 + 5,), [big, big]), [I64])
    return v


def op_variants(dtypes=(B, U8, I32, I64, F16, BFLOAT16, F32, F64)):
    """One single-op graph per (op, dtype) the op accepts: (name, graph, plan)."""
    out = []
    for key, op in OPS.items():
        for dt in dtypes:
            specs = [("tensor", dt, 1)] * op.arity
            if key == "where":
                specs[0] = ("tensor", B, 1)
            try:
                g, _ = trace(lambda *a, key=key: apply(key, *a), specs)
            except (TypeError, RuntimeError):
                continue  # refused dtype (bitwise on floats, neg/sub on bool, gelu on ints)
            ops = [contiguous((64,), s[1]) for s in specs] + [contiguous((64,), g.outputs[0].dtype)]
            out.append((f"{key}_{dt}", g, plan((64,), ops)))
    return out
