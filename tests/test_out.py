"""torch's `out=` contract (gpu_tensor/_out.py): the result lands in `out`, `out` is
returned, a mis-shaped `out` is resized (with torch's warning when it had elements), and
dtype, device, autograd and type errors are torch's classes."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import gpu_tensor as gt

# (name, call(gt_module, out) -> result): every family that takes out=
CASES = [
    ("add", lambda t, o: t.add(t.tensor([1.0, 2.0]), t.tensor([3.0, 4.0]), out=o)),
    ("add_alpha", lambda t, o: t.add(t.tensor([1.0, 2.0]), t.tensor([3.0, 4.0]), alpha=2, out=o)),
    ("sub", lambda t, o: t.sub(t.tensor([1.0, 2.0]), 1.5, out=o)),
    ("mul", lambda t, o: t.mul(t.tensor([1.0, 2.0]), t.tensor([3.0, 4.0]), out=o)),
    ("div", lambda t, o: t.div(t.tensor([1.0, 2.0]), t.tensor([4.0, 8.0]), out=o)),
    ("pow", lambda t, o: t.pow(t.tensor([1.0, 2.0]), 2, out=o)),
    ("maximum", lambda t, o: t.maximum(t.tensor([1.0, 5.0]), t.tensor([3.0, 4.0]), out=o)),
    ("exp", lambda t, o: t.exp(t.tensor([0.0, 1.0]), out=o)),
    ("sin", lambda t, o: t.sin(t.tensor([0.0, 1.0]), out=o)),
    ("neg", lambda t, o: t.neg(t.tensor([0.0, 1.0]), out=o)),
    ("asin", lambda t, o: t.asin(t.tensor([0.0, 0.5]), out=o)),
    ("log2", lambda t, o: t.log2(t.tensor([1.0, 8.0]), out=o)),
    ("clamp", lambda t, o: t.clamp(t.tensor([-1.0, 3.0]), 0.0, 1.0, out=o)),
    (
        "where",
        lambda t, o: t.where(
            t.tensor([True, False]), t.tensor([1.0, 2.0]), t.tensor([3.0, 4.0]), out=o
        ),
    ),
    ("matmul", lambda t, o: t.matmul(t.ones(2, 3), t.ones(3, 2), out=o)),
    ("mm", lambda t, o: t.mm(t.ones(2, 3), t.ones(3, 4), out=o)),
    ("bmm", lambda t, o: t.bmm(t.ones(2, 2, 3), t.ones(2, 3, 1), out=o)),
    ("sum", lambda t, o: t.sum(t.ones(2, 3), 1, out=o)),
    ("mean", lambda t, o: t.mean(t.ones(2, 3), 0, out=o)),
    ("prod", lambda t, o: t.prod(t.full((2, 3), 2.0), 1, out=o)),
    ("amax", lambda t, o: t.amax(t.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, out=o)),
    ("amin", lambda t, o: t.amin(t.tensor([[1.0, 5.0], [7.0, 2.0]]), 0, out=o)),
    ("cumsum", lambda t, o: t.cumsum(t.tensor([1.0, 2.0, 3.0]), 0, out=o)),
    ("cat", lambda t, o: t.cat([t.ones(2), t.zeros(3)], out=o)),
    ("stack", lambda t, o: t.stack([t.ones(2), t.zeros(2)], 1, out=o)),
    ("zeros", lambda t, o: t.zeros(2, 3, out=o)),
    ("ones", lambda t, o: t.ones(4, out=o)),
    ("full", lambda t, o: t.full((2,), 7.0, out=o)),
    ("arange", lambda t, o: t.arange(5, out=o)),
    ("linspace", lambda t, o: t.linspace(0, 1, 5, out=o)),
]


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_result_lands_in_out_and_out_is_returned(name, fn, device):
    want = fn(gt, None)
    out = gt.empty(0, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized without a warning
        r = _call_on(fn, device, out)
    assert r is out
    # factories make out's dtype (float32 here); the others cast their result into it
    assert out.shape == want.shape and out.dtype is gt.float32
    assert out.device.type == device
    np.testing.assert_allclose(_np(out), _np(want), rtol=1e-6)


def _call_on(fn, device, out):
    """fn with every factory defaulting to `device` (so the inputs live with `out`)."""
    with gt.device(device):
        return fn(gt, out)


_RESIZED = ("add", "add_alpha", "sub", "matmul", "mm", "sum", "exp", "cat")


@pytest.mark.parametrize(
    "name,fn", [c for c in CASES if c[0] in _RESIZED], ids=[c[0] for c in CASES if c[0] in _RESIZED]
)
def test_out_with_elements_resizes_with_torch_warning(name, fn):
    out = gt.empty(7)
    with pytest.warns(
        UserWarning,
        match=r"An output with one or more elements was resized "
        r"since it had shape \[7\]",
    ):
        r = fn(gt, out)
    assert r is out and out.shape == fn(gt, None).shape


def test_same_shape_out_is_written_in_place_and_may_alias_an_input(device):
    x = gt.arange(4.0, device=device)
    data = x._data
    assert gt.add(x, x, out=x) is x
    assert x._data is data  # no reallocation
    np.testing.assert_array_equal(_np(x), [0.0, 2.0, 4.0, 6.0])


def test_view_out_writes_through_to_its_base(device):
    base = gt.zeros(2, 3, device=device)
    gt.mul(gt.ones(3, device=device), 5.0, out=base[1])
    np.testing.assert_array_equal(_np(base), [[0, 0, 0], [5, 5, 5]])


def test_result_casts_into_a_wider_out():
    out = gt.empty(2, dtype=gt.float64)
    gt.add(gt.tensor([1, 2]), 1, out=out)
    assert out.dtype is gt.float64
    np.testing.assert_array_equal(_np(out), [2.0, 3.0])
    z = gt.empty(2, dtype=gt.complex64)
    gt.exp(gt.zeros(2), out=z)
    np.testing.assert_array_equal(_np(z), [1.0, 1.0])


@pytest.mark.parametrize(
    "result,out_dtype,words",
    [
        (
            lambda o: gt.add(gt.ones(2), gt.ones(2), out=o),
            gt.int64,
            "Float can't be cast to the desired output type Long",
        ),
        (
            lambda o: gt.add(gt.tensor([1, 2]), 1, out=o),
            gt.bool,
            "Long can't be cast to the desired output type Bool",
        ),
        (
            lambda o: gt.add(gt.ones(2), 1j, out=o),
            gt.float32,
            "ComplexFloat can't be cast to the desired output type Float",
        ),
    ],
    ids=["float-into-long", "long-into-bool", "complex-into-float"],
)
def test_can_cast_rule(result, out_dtype, words):
    with pytest.raises(RuntimeError, match=words):
        result(gt.empty(2, dtype=out_dtype))


def test_ops_wanting_the_exact_dtype():
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        gt.matmul(gt.ones(2, 2), gt.ones(2, 2), out=gt.empty(2, 2, dtype=gt.float64))
    with pytest.raises(RuntimeError, match="Found dtype Long but expected Float"):
        gt.amax(gt.ones(2, 2), 0, out=gt.empty(2, dtype=gt.int64))
    with pytest.raises(TypeError, match="can't be cast to the desired output type Int"):
        gt.cat([gt.ones(2)], out=gt.empty(2, dtype=gt.int32))


def test_reductions_accumulate_in_out_dtype():
    out = gt.empty(0, dtype=gt.int64)
    gt.cumsum(gt.tensor([1.5, 2.5]), 0, out=out)  # torch: computed in int64
    assert out.dtype is gt.int64
    np.testing.assert_array_equal(_np(out), [1, 3])
    m = gt.empty(0, dtype=gt.float64)
    gt.mean(gt.tensor([[1.0, 2.0]]), 1, out=m)
    assert m.dtype is gt.float64 and _np(m).tolist() == [1.5]


def test_max_with_dim_takes_a_tuple_out(device):
    x = gt.tensor([[1.0, 5.0], [7.0, 2.0]], device=device)
    v, i = gt.empty(0, device=device), gt.empty(0, dtype=gt.int64, device=device)
    r = gt.max(x, 1, out=(v, i))
    assert r.values is v and r.indices is i and r[0] is v
    assert _np(v).tolist() == [5.0, 7.0] and _np(i).tolist() == [1, 0]
    with pytest.warns(UserWarning, match="resized"):  # they had 2 elements, now [1, 2]
        r = gt.min(x, 0, keepdim=True, out=(v, i))
    assert r.values is v
    assert _np(v).tolist() == [[1.0, 2.0]] and _np(i).tolist() == [[0, 1]]
    with pytest.raises(TypeError, match="tuple of 2 Tensors"):
        gt.max(x, 1, out=v)


def test_creation_defaults_to_out_dtype_and_device(device):
    out = gt.empty(0, dtype=gt.int64, device=device)
    assert gt.zeros(2, 3, out=out) is out
    assert out.dtype is gt.int64 and out.shape == (2, 3) and out.device.type == device
    assert gt.arange(4, out=gt.empty(0, device=device)).dtype is gt.float32
    r = gt.rand(3, out=gt.empty(0, device=device))
    assert r.shape == (3,) and r.device.type == device and (0 <= _np(r)).all()
    assert gt.randn(2, 2, out=gt.empty(0, device=device)).shape == (2, 2)
    assert gt.empty(5, out=gt.empty(0, device=device)).shape == (5,)
    with pytest.raises(
        RuntimeError,
        match=r"dtype Double does not match dtype of out "
        r"parameter \(Long\)",
    ):
        gt.zeros(2, dtype=gt.float64, out=gt.empty(0, dtype=gt.int64))


def test_out_on_another_device_names_both():
    with pytest.raises(RuntimeError, match="cpu.*cuda:0"):
        gt.add(gt.ones(2), gt.ones(2), out=gt.empty(2, device="cuda"))


@pytest.mark.parametrize(
    "call",
    [
        lambda x, o: gt.add(x, 1.0, out=o),
        lambda x, o: gt.mul(x, x, out=o),
        lambda x, o: gt.exp(x, out=o),
        lambda x, o: gt.sum(x, 0, out=o),
        lambda x, o: gt.matmul(x[None], x[:, None], out=o),
        lambda x, o: gt.cat([x], out=o),
    ],
    ids=["add", "mul", "exp", "sum", "matmul", "cat"],
)
def test_out_refuses_autograd(call):
    x = gt.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"out=\.\.\. arguments don't support automatic "
        r"differentiation, but one of the arguments "
        r"requires grad",
    ):
        call(x, gt.empty(0))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        call(gt.ones(2), gt.empty(0, requires_grad=True))
    with gt.no_grad():
        out = gt.empty(0)
        assert call(x, out) is out and not out.requires_grad


@pytest.mark.parametrize("op", [gt.add, gt.mul, gt.exp, gt.sum, gt.matmul])
def test_non_tensor_out_is_a_type_error(op):
    args = (gt.ones(2, 2),) if op in (gt.exp, gt.sum) else (gt.ones(2, 2), gt.ones(2, 2))
    with pytest.raises(
        TypeError,
        match=rf"^{op.__name__}\(\): argument 'out' must be Tensor, "
        r"not list",
    ):
        op(*args, out=[1])


def test_unknown_keyword_names_the_public_function():
    x = gt.ones(2)
    for op, args in (
        (gt.mul, (x, x)),
        (gt.add, (x, x)),
        (gt.exp, (x,)),
        (gt.matmul, (x, x)),
        (gt.sum, (x,)),
    ):
        with pytest.raises(
            TypeError,
            match=rf"^{op.__name__}\(\) got an unexpected keyword "
            r"argument 'foo'",
        ):
            op(*args, foo=1)
    with pytest.raises(TypeError, match=r"^float\(\) got an unexpected keyword"):
        x.float(foo=1)


def test_no_public_function_has_an_internal_name():
    """Python's own TypeErrors print __qualname__: no `_b.<locals>.f` may reach users."""
    bad = []
    for owner, label in (
        (gt, "gt"),
        (gt.Tensor, "Tensor"),
        (gt.linalg, "gt.linalg"),
        (gt.nn.functional, "gt.nn.functional"),
    ):
        for name in dir(owner):
            f = getattr(owner, name, None)
            if inspect.isfunction(f) and "<locals>" in f.__qualname__:
                bad.append(f"{label}.{name}: {f.__qualname__}")
    assert not bad


def test_signatures_show_out_as_keyword_only():
    for op in (gt.mul, gt.exp, gt.matmul, gt.mm, gt.add, gt.sum, gt.cat, gt.zeros):
        p = inspect.signature(op).parameters["out"]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is None


# -- parity with torch ------------------------------------------------------------------


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("out_dtype", ["float64", "int64", "float32"])
def test_matches_torch(name, fn, out_dtype):
    torch = pytest.importorskip("torch")
    results = []
    for mod in (torch, gt):
        out = mod.empty(0, dtype=getattr(mod, out_dtype))
        try:
            r = fn(mod, out)
        except (RuntimeError, TypeError) as exc:
            results.append(type(exc))
        else:
            assert r is out
            results.append(
                (
                    str(out.dtype).split(".")[-1],
                    tuple(out.shape),
                    out.detach().cpu().numpy().tolist(),
                )
            )
    assert (
        results[1] == results[0]
        if not isinstance(results[0], tuple)
        else (
            results[1][:2] == results[0][:2]
            and np.allclose(results[1][2], results[0][2], rtol=1e-5)
        )
    ), results


def test_resize_warning_matches_torch():
    torch = pytest.importorskip("torch")
    msgs = []
    for mod in (torch, gt):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            mod.add(mod.ones(3), mod.ones(3), out=mod.empty(2, 2))
        msgs.append(str(w[0].message).split(" (Triggered internally")[0])
    assert msgs[0] == msgs[1]


def test_autograd_error_matches_torch():
    torch = pytest.importorskip("torch")
    msgs = []
    for mod in (torch, gt):
        with pytest.raises(RuntimeError) as info:
            mod.mul(mod.ones(2, requires_grad=True), 2.0, out=mod.empty(2))
        msgs.append(str(info.value))
    assert msgs[1].startswith(msgs[0])
