"""Eager single elementwise ops through the fused codegen (the cuda backend's path)."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_emu import aligned_copy, run
from fusion_tolerance import assert_close

from gpu_tensor.fusion import eager
from gpu_tensor.fusion.optable import OPS
from gpu_tensor.kernel import emulate
from gpu_tensor.testing import requires_real_cuda

CASES = [
    ("add", (np.arange(24, dtype=np.float32).reshape(4, 6), 2.5), np.float32),
    ("mul", (np.ones((4, 6), np.float32), np.arange(6, dtype=np.float32)), np.float16),
    ("where", (np.arange(6) % 2 == 0, np.ones((3, 6), np.float32), -1.0), np.float32),
    ("clamp", (np.arange(-5, 5, dtype=np.int64), None, 2), np.int64),
    ("gelu", (np.linspace(-3, 3, 50, dtype=np.float32),), np.float32),
]


def test_single_op_graph_is_cached_per_signature():
    a = np.ones(3, np.float32)
    g1 = eager._graph_for("add", [a, 2.0], {})
    assert eager._graph_for("add", [np.zeros(5, np.float32), 7.0], {}) is g1
    assert eager._graph_for("add", [a, 2], {}) is not g1
    assert eager._graph_for("gelu", [a], {"approximate": "tanh"}).outputs[0].param == "tanh"


@pytest.mark.skipif(emulate.compiler() is None, reason="host emulation needs g++")
@pytest.mark.parametrize("key, inputs, out_dtype", CASES)
def test_eager_kernel_under_emulation_matches_the_table(key, inputs, out_dtype):
    graph = eager._graph_for(key, list(inputs), {})
    arrays = [aligned_copy(x) for x in inputs if isinstance(x, np.ndarray)]
    scalars = [x for x in inputs if isinstance(x, (bool, int, float))]
    (out,), _ = run(graph, arrays, scalars, out_dtypes=[np.dtype(out_dtype)])
    expected = OPS[key].numpy(*inputs, out_dtype=out_dtype)
    assert out.shape == expected.shape
    assert_close(out, expected, np.dtype(out_dtype))


@pytest.mark.cuda
@requires_real_cuda
@pytest.mark.parametrize("key, inputs, out_dtype", CASES)
def test_eager_run_on_real_cuda(key, inputs, out_dtype):
    from gpu_tensor.backends._cupy import cupy

    cp = cupy()
    dev_inputs = [cp.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs]
    out = eager.run(key, dev_inputs, np.dtype(out_dtype))
    assert_close(cp.asnumpy(out), OPS[key].numpy(*inputs, out_dtype=out_dtype), np.dtype(out_dtype))


def test_restrict_is_dropped_when_an_output_is_an_input():
    # an in-place update (an optimizer's param.add_ through @gt.fuse out=) must not promise
    # the compiler that the output and the input never alias
    graph = eager._graph_for("mul", [np.ones(8, np.float32), 2.0], {})
    x = np.arange(16, dtype=np.float32)
    fresh, _, _ = eager.prepare(graph, graph.outputs, [x[:8]], [2.0], [np.empty(8, np.float32)])
    assert "__restrict__" in fresh.source
    inplace, _, _ = eager.prepare(graph, graph.outputs, [x[:8]], [2.0], [x[:8]])
    assert "__restrict__" not in inplace.source and inplace.name != fresh.name
    apart, _, _ = eager.prepare(graph, graph.outputs, [x[:8]], [2.0], [x[8:]])
    assert "__restrict__" in apart.source  # same buffer, disjoint bytes: still restrict
    reversed_view = x[7::-1]  # negative stride: its bytes are x[0:8] too
    rev, _, _ = eager.prepare(graph, graph.outputs, [reversed_view], [2.0], [x[:8]])
    assert "__restrict__" not in rev.source
