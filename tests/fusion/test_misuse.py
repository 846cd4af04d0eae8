"""What a fused function cannot do with a traced tensor is said plainly (fusion/misuse.py):
the op, why, and the fix; never the tracer's internal class name (issue 24, item 10)."""

from __future__ import annotations

import inspect
import math
import operator
import warnings

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.fusion.trace import FusionError
from tests.autograd import grad_walk


def _fused_error(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            gt.fuse(fn)(*args)
        except Exception as exc:  # noqa: BLE001 - every error is inspected below
            return exc
    return None


def test_matmul_names_the_op_and_the_fix():
    x = gt.ones(2, 2)
    for fn in (lambda a: a @ a, lambda a: gt.matmul(a, a), lambda a: a.matmul(a)):
        exc = _fused_error(fn, x)
        assert isinstance(exc, FusionError), exc
        msg = str(exc)
        assert "matmul" in msg and "outside the fused function" in msg, msg
        assert "Proxy" not in msg


# Python's protocols on a traced tensor (each raises; none may name the tracer class)
_PROTOCOLS = {
    "@": lambda a: a @ a,
    "@=": lambda a: operator.imatmul(a, a),
    "rmatmul": lambda a: np.ones((2, 2), np.float32) @ a,
    "getitem": lambda a: a[0],
    "setitem": lambda a: a.__setitem__(0, 1.0),
    "len": lambda a: len(a),
    "iter": lambda a: list(a),
    "in": lambda a: 1.0 in a,
    "reversed": lambda a: reversed(a),
    "float": lambda a: float(a),
    "int": lambda a: int(a),
    "index": lambda a: [1, 2][a],
    "complex": lambda a: complex(a),
    "round": lambda a: round(a),
    "trunc": lambda a: math.trunc(a),
    "floor": lambda a: math.floor(a),
    "divmod": lambda a: divmod(a, a),
    "<<": lambda a: a << 1,
    "call": lambda a: a(),
    "format": lambda a: f"{a:.3f}",
    "bool": lambda a: a if a else a,
    "sum": lambda a: a.sum(),
    "hash": lambda a: {a: 1},
}


@pytest.mark.parametrize("name", sorted(_PROTOCOLS))
def test_python_protocols_never_name_the_tracer_class(name):
    exc = _fused_error(_PROTOCOLS[name], gt.ones(2, 2))
    assert exc is not None, name
    assert "Proxy" not in str(exc), str(exc)


def _public_ops():
    for n in sorted(set(gt.__all__)):
        f = getattr(gt, n)
        if (
            callable(f)
            and not inspect.isclass(f)
            and n not in ("fuse", "manual_seed", "seed")
            and n not in grad_walk.STATEFUL
        ):  # they would leave autocast on for later tests
            yield n, f
    for n in sorted(k for k in dir(gt.linalg) if not k.startswith("_")):
        f = getattr(gt.linalg, n)
        if callable(f) and not inspect.isclass(f):
            yield "linalg." + n, f


def test_no_public_op_names_the_tracer_class():
    """Every public function called on traced tensors (one, two, with a dim, as a list)
    either fuses or raises an error free of the internal class name."""
    x = gt.ones(2, 2)
    leaks = {}
    for name, f in _public_ops():
        for call in (
            lambda a, f=f: f(a),
            lambda a, f=f: f(a, a),
            lambda a, f=f: f(a, 1),
            lambda a, f=f: f([a, a]),
        ):
            exc = _fused_error(call, x)
            if exc is not None and "Proxy" in f"{type(exc).__name__}: {exc}":
                leaks[name] = str(exc)[:120]
    assert not leaks, leaks
