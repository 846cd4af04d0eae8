"""Eager ops and @gt.fuse read the same op table (fusion/optable.py): for every unary and
binary op and operand dtype, both give the same result dtype, or both raise the same
exception class."""

from __future__ import annotations

import pytest

import gpu_tensor as gt
from gpu_tensor.fusion.optable import OPS
from gpu_tensor.ops import elementwise as ew

_DTYPES = ["bool", "int64", "float32"]
_VALUES = {"bool": [True, False], "int64": [3, 2], "float32": [1.5, -2.0]}
_CASES = [(k, d) for k, op in sorted(OPS.items()) if op.arity in (1, 2) for d in _DTYPES]


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args).dtype)
    except Exception as exc:  # noqa: BLE001  (the class is what is compared)
        return ("raises", type(exc) if not isinstance(exc, gt.FusionError) else
                type(exc.__cause__ or exc))


@pytest.mark.parametrize("key,dtype", _CASES, ids=[f"{k}-{d}" for k, d in _CASES])
def test_eager_and_fused_agree(key, dtype):
    op = getattr(ew, key)
    args = [gt.tensor(_VALUES[dtype], dtype=getattr(gt, dtype))] * OPS[key].arity
    eager = _outcome(op, *args)
    fused = _outcome(gt.fuse(op), *args)
    assert eager == fused


@pytest.mark.parametrize("expr", ["gelu", "floor_divide", "abs"])
def test_the_three_known_disagreements_now_raise_under_fuse(expr):
    """gelu(int), bool // bool and abs(bool) computed under @gt.fuse but raised eagerly."""
    x = gt.tensor([1, 2]) if expr == "gelu" else gt.tensor([True, False])
    fn = {"gelu": gt.gelu, "floor_divide": lambda a: a // a, "abs": abs}[expr]
    with pytest.raises(NotImplementedError, match="not implemented for"):
        fn(x)
    with pytest.raises(NotImplementedError, match="not implemented for"):
        gt.fuse(fn)(x)


def test_aliases_dunders_and_methods_come_from_the_table():
    """The module functions, Tensor methods and the tracer's Proxy expose every row under
    its name and its aliases; operators follow the `dunder` column."""
    from gpu_tensor.fusion.trace import Proxy
    from gpu_tensor.ops import _dispatch

    for key, op in OPS.items():
        fn = getattr(ew, key)
        for alias in op.aliases:
            assert getattr(ew, alias) is fn and alias in ew.__all__, alias
            assert getattr(gt.Tensor, alias) is getattr(gt.Tensor, key), alias
            assert getattr(Proxy, alias) is getattr(Proxy, key), alias
        if op.dunder and op.arity == 2:
            assert getattr(gt.Tensor, f"__{op.dunder}__") is _dispatch._BINARY[key]
            assert hasattr(Proxy, f"__{op.dunder}__")
        if op.inplace:
            assert hasattr(gt.Tensor, key + "_"), key
