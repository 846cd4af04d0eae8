"""Generated kernels RUN on the CPU under kernels/host_emulation.h and match numpy.

The same source NVRTC compiles is built with g++; every variant (vector with row/column
broadcasts, strided/transposed, mixed dtypes, several outputs) and every op of the table is
launched on real data and compared with the graph's numpy evaluation.
"""

from __future__ import annotations

import numpy as np
import pytest
from fusion_emu import EMU_BLOCK, EMU_SMS, aligned_copy, aligned_empty, run
from fusion_tolerance import assert_close
from fusion_variants import op_variants

from gpu_tensor.fusion.dtypes import BFLOAT16
from gpu_tensor.fusion.eager import prepare
from gpu_tensor.fusion.expr import evaluate
from gpu_tensor.fusion.layout import launch_config
from gpu_tensor.fusion.trace import apply, trace
from gpu_tensor.kernel import emulate

if emulate.compiler() is None:
    pytest.skip("host emulation needs g++", allow_module_level=True)

RNG = np.random.default_rng(6)


def _data(shape, dtype, lo=-3.0, hi=3.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return aligned_copy(RNG.random(shape) < 0.5)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else lo
        return aligned_copy(RNG.integers(int(lo) * 3, int(hi) * 3 + 1, size=shape).astype(dtype))
    return aligned_copy(RNG.uniform(lo, hi, size=shape).astype(dtype))


def _check(graph, arrays, scalars=()):
    outs, plan = run(graph, arrays, scalars)
    refs = evaluate(graph, arrays, scalars)
    for out, ref, root in zip(outs, refs, graph.outputs, strict=True):
        shape = out.shape
        with np.errstate(all="ignore"):
            assert_close(out, np.broadcast_to(ref, shape).astype(root.dtype), root.dtype)
    return plan


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16, np.float32, np.float64])
def test_gelu_chain_vector_and_transposed(dtype):
    g, _ = trace(lambda x, a, b: (a * x + b).gelu(), [("tensor", dtype, 2), ("scalar", float),
                                                       ("scalar", float)])  # fmt: skip
    x = _data((12, 40), dtype)
    assert _check(g, [x], [1.5, -0.25]).mode == "vector"
    xt = _data((40, 12), dtype).T
    assert _check(g, [xt], [1.5, -0.25]).mode == "strided"


def test_normalisation_with_row_and_column_vectors_fp16_in_fp16_out():
    specs = [("tensor", np.float16, 2), ("tensor", np.float32, 2), ("tensor", np.float32, 2),
             ("tensor", np.float32, 1), ("tensor", np.float32, 1)]  # fmt: skip
    g, _ = trace(lambda x, m, s, gm, b: ((x - m) / s * gm + b).half(), specs)
    x = _data((10, 48), np.float16)
    mean, std = _data((10, 1), np.float32), _data((10, 1), np.float32, 0.5, 2.0)
    gamma, beta = _data((48,), np.float32), _data((48,), np.float32)
    plan = _check(g, [x, mean, std, gamma, beta])
    assert plan.mode == "vector" and plan.classes[1:5] == ("col", "col", "row", "row")


def test_mixed_dtypes_several_outputs_and_odd_tail():
    def fn(i, h, b):
        s = i * h + b
        return s.sigmoid(), s > 0, (i // 3) % 5

    g, _ = trace(fn, [("tensor", np.int32, 1), ("tensor", np.float16, 1), ("tensor", BFLOAT16, 1)])
    n = 1001  # not a multiple of the vector width: the tail loop runs too
    plan = _check(g, [_data((n,), np.int32), _data((n,), np.float16), _data((n,), BFLOAT16)])
    assert plan.mode == "vector"


def test_general_broadcast_3d_and_zero_dim_operand():
    g, _ = trace(
        lambda x, y, z: apply("where", x > y, x * z, y - z),
        [("tensor", np.float32, 3), ("tensor", np.float64, 2), ("tensor", np.float32, 0)],
    )
    x = _data((3, 1, 7), np.float32)
    y = _data((5, 7), np.float64)[:, ::1]
    z = aligned_copy(np.array(0.75, np.float32))
    assert _check(g, [x, y, z]).mode == "strided"


def test_casts_round_like_numpy():
    g, _ = trace(
        lambda x: (x * 3.3).half().float() + x.to("bfloat16") - x.int(), [("tensor", np.float32, 1)]
    )
    _check(g, [_data((77,), np.float32, -100, 100)])


def test_every_op_of_the_table_runs_and_matches_numpy():
    """One g++ build for all single-op kernels (g++ is the slow part)."""
    cases = []
    for name, graph, _plan in op_variants():
        specs = [n.dtype for n in graph.inputs]
        arrays = [_data((64,), dt) for dt in specs]
        if graph.outputs[0].key in ("log", "sqrt", "rsqrt", "log1p", "pow"):
            arrays = [np.abs(a) + (a.dtype != np.bool_) for a in arrays]  # stay in the domain
        arrays = [aligned_copy(a) for a in arrays]
        out = aligned_empty((64,), graph.outputs[0].dtype)
        ksrc, plan, args = prepare(graph, graph.outputs, arrays, [], [out])
        cases.append((name, graph, arrays, out, ksrc, plan, args))
    preamble_len = cases[0][4].source.index("\n// v0")
    source = cases[0][4].source[:preamble_len] + "".join(c[4].source[preamble_len:] for c in cases)
    lib = emulate.build(source, [c[4].name for c in cases])
    for name, graph, arrays, out, ksrc, plan, args in cases:
        grid, block = launch_config(plan, EMU_SMS, block=EMU_BLOCK)
        emulate.launch(lib, ksrc.name, grid, block, args, serial=True)
        ref = evaluate(graph, arrays)[0]
        with np.errstate(all="ignore"):
            expected = ref.astype(graph.outputs[0].dtype)
        try:
            assert_close(out, expected, graph.outputs[0].dtype)
        except AssertionError as exc:
            raise AssertionError(f"{name}: emulated kernel differs from numpy\n{exc}") from None
