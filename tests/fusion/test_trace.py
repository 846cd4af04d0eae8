"""Tracing: PyTorch type promotion in the graph, clear errors, numpy evaluation (pure)."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_tolerance import assert_close
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_tensor.fusion.dtypes import BFLOAT16
from gpu_tensor.fusion.expr import evaluate
from gpu_tensor.fusion.optable import OPS
from gpu_tensor.fusion.trace import FusionError, apply, trace

DTYPES = [np.bool_, np.uint8, np.int32, np.int64, np.float16, BFLOAT16, np.float32, np.float64]


def _tensor(dt, ndim=1):
    return ("tensor", np.dtype(dt), ndim)


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_traced_dtypes_match_the_eager_table(a, b):
    for key in ("add", "div", "lt", "maximum"):
        try:
            g, _ = trace(lambda x, y, key=key: apply(key, x, y), [_tensor(a), _tensor(b)])
        except FusionError:
            with pytest.raises(TypeError):
                OPS[key].numpy(np.ones(2, a), np.ones(2, b))
            continue
        assert g.outputs[0].dtype == OPS[key].numpy(np.ones(2, a), np.ones(2, b)).dtype


def test_scalars_are_weak_and_zero_dim_tensors_rank_below_tensors():
    g, _ = trace(lambda x, s: x * s + 1, [_tensor(np.int32), ("scalar", float)])
    assert g.outputs[0].dtype == np.float32
    g, _ = trace(lambda x, s: x * s, [_tensor(np.float16), ("scalar", float)])
    assert g.outputs[0].dtype == np.float16
    g, _ = trace(lambda x, z: x + z, [_tensor(np.int8), _tensor(np.int64, ndim=0)])
    assert g.outputs[0].dtype == np.int8
    g, _ = trace(lambda x, z: x + z, [_tensor(np.int8), _tensor(np.float64, ndim=0)])
    assert g.outputs[0].dtype == np.float64


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda x: x.sum(), "Tensor.sum cannot be used inside a fused function"),
        (lambda x: x if x > 0 else -x, "cannot be used in `if`"),
        (lambda x: x + np.ones(3), "cannot be fused"),
        (lambda x: x.to("cuda"), "only takes a dtype"),
        (lambda x: np.sort(x), "converted to a numpy array"),
        (lambda x: -(x > 0), "Negation"),
        (lambda x: x.float() & 1, "bitwise_and"),
        (lambda x: 3, "not a tensor computed from a tensor argument"),
    ],
)
def test_unfusable_code_raises_naming_it(fn, match):
    with pytest.raises((FusionError, TypeError, RuntimeError), match=match):
        trace(fn, [_tensor(np.float32)])


def test_graph_description_is_canonical():
    g, _ = trace(lambda x, a: (x * a).sigmoid(), [_tensor(np.float32), ("scalar", float)])
    assert g.describe().splitlines()[-2:] == [
        "v3: float32 = sigmoid(v2) as (float32)",
        "return v3",
    ]


def _eager_chain(x, y, s):
    """The same chain op by op with the eager table (rounding between ops)."""
    t = OPS["mul"].numpy(x, s)
    t = OPS["add"].numpy(t, y)
    t = OPS["tanh"].numpy(t)
    return OPS["where"].numpy(OPS["gt"].numpy(x, 0.0), t, OPS["neg"].numpy(y))


@settings(max_examples=25, deadline=None)
@given(
    dt=st.sampled_from([np.float16, BFLOAT16, np.float32, np.float64]),
    rows=st.integers(1, 6),
    cols=st.integers(1, 9),
    s=st.floats(-4, 4),
)
def test_numpy_evaluation_matches_op_by_op_numpy(dt, rows, cols, s):
    rng = np.random.default_rng(rows * 31 + cols)
    x = rng.uniform(-2, 2, (rows, cols)).astype(dt)
    y = rng.uniform(-2, 2, (cols,)).astype(dt)
    g, _ = trace(lambda a, b, c: apply("where", a > 0.0, (a * c + b).tanh(), -b),
                 [_tensor(dt, 2), _tensor(dt, 1), ("scalar", float)])  # fmt: skip
    got = evaluate(g, [x, y], [s])[0].astype(dt)
    assert got.shape == (rows, cols) and got.dtype == np.dtype(dt)
    assert_close(got, _eager_chain(x, y, s), np.dtype(dt))


def test_top_level_functions_can_dispatch_to_proxies():
    """The hook gt.exp/gt.where/... use when handed a traced tensor."""
    g, _ = trace(
        lambda c, x: c.__gt_elementwise__("where", c, x.exp(), 0.0),
        [_tensor(np.bool_), _tensor(np.float16)],
    )
    assert g.outputs[0].key == "where" and g.outputs[0].dtype == np.float16
