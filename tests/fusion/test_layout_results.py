"""Elementwise results keep their operands' layout as torch's TensorIterator lays it out
(gpu_tensor/_result_strides.py; issue 23's layout gap): a transposed, permuted or
channels_last input gives a result in that layout, on every device; on cuda the generated
kernel writes it directly (one launch, no copy, no cupy routine), on the warm entry and on
apply()'s general path alike. The expected strides were recorded from torch 2.13 (CPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.testing import requires_real_cuda

from .fusion_sim_counts import one_warm_launch

_A = np.arange(24, dtype=np.float32).reshape(4, 6) / 7
_B = np.arange(360, dtype=np.float32).reshape(4, 3, 5, 6) / 11


def _erf(v):
    return np.vectorize(math.erf)(v.astype(np.float64)).astype(v.dtype)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


# name: (gpu_tensor op over (a, b, cl), numpy's values over (a, b), torch 2.13's strides)
_SAME_LAYOUT = {
    "t.exp": (lambda a, b, cl: a.t().exp(), lambda a, b: np.exp(a.T), (1, 6)),
    "t+t": (lambda a, b, cl: a.t() + a.t(), lambda a, b: a.T + a.T, (1, 6)),
    "t*2": (lambda a, b, cl: a.t() * 2.0, lambda a, b: a.T * 2, (1, 6)),
    "-t": (lambda a, b, cl: -a.t(), lambda a, b: -a.T, (1, 6)),
    "t.abs": (lambda a, b, cl: a.t().abs(), lambda a, b: np.abs(a.T), (1, 6)),
    "cl.exp": (lambda a, b, cl: cl.exp(), lambda a, b: np.exp(b), (90, 1, 18, 3)),
    "cl+cl": (lambda a, b, cl: cl + cl, lambda a, b: b + b, (90, 1, 18, 3)),
    "cl.relu": (lambda a, b, cl: gt.relu(cl), lambda a, b: np.maximum(b, 0), (90, 1, 18, 3)),
    "perm.sigmoid": (
        lambda a, b, cl: b.permute(2, 0, 3, 1).sigmoid(),
        lambda a, b: _sigmoid(b.transpose(2, 0, 3, 1)),
        (6, 90, 1, 30),
    ),
    "slice.exp": (lambda a, b, cl: a[:, ::2].exp(), lambda a, b: np.exp(a[:, ::2]), (3, 1)),
    "t.half": (lambda a, b, cl: a.t().half(), lambda a, b: a.T.astype(np.float16), (1, 6)),
    "t>3": (lambda a, b, cl: a.t() > 3, lambda a, b: a.T > 3, (1, 6)),
    "t.i0e": (
        lambda a, b, cl: gt.special.i0e(a.t()),
        lambda a, b: (np.i0(a.T.astype(np.float64)) * np.exp(-a.T)).astype(np.float32),
        (1, 6),
    ),
    "ti.isposinf": (
        lambda a, b, cl: gt.isposinf(a.t().int()),
        lambda a, b: np.zeros((6, 4), bool),
        (1, 6),
    ),
    "t.erf": (lambda a, b, cl: gt.special.erf(a.t()), lambda a, b: _erf(a.T), (1, 6)),
    "cl.gelu": (
        lambda a, b, cl: gt.nn.functional.gelu(cl),
        lambda a, b: (0.5 * b * (1 + _erf(b / np.sqrt(2)))).astype(np.float32),
        (90, 1, 18, 3),
    ),
}
# operands of different layouts: torch asks them in order (numpy's rule differs)
_MIXED = {
    "t+c": (lambda a, b, cl: a.t() + a.t().contiguous(), lambda a, b: a.T + a.T, (1, 6)),
    "c+t": (lambda a, b, cl: a.t().contiguous() + a.t(), lambda a, b: a.T + a.T, (4, 1)),
    "cl+b": (lambda a, b, cl: cl + b, lambda a, b: b + b, (90, 1, 18, 3)),
    "b+cl": (lambda a, b, cl: b + cl, lambda a, b: b + b, (90, 30, 6, 1)),
    "where": (
        lambda a, b, cl: gt.where(a.t() > 3, a.t(), a.t().contiguous()),
        lambda a, b: np.where(a.T > 3, a.T, a.T),
        (1, 6),
    ),
}


def _operands(device):
    a = gt.from_numpy(_A).to(device)
    b = gt.from_numpy(_B).to(device)
    return a, b, b.contiguous(memory_format=gt.channels_last)


def _check(r, want_values, strides):
    assert r.stride() == strides
    got = r.cpu().numpy()
    assert got.dtype == want_values.dtype
    np.testing.assert_allclose(got, want_values, rtol=2e-6)  # (exp, sigmoid: CUDA's own)


@pytest.mark.parametrize("name", sorted(_SAME_LAYOUT))
def test_a_result_keeps_its_operands_layout(device, name):
    op, values, strides = _SAME_LAYOUT[name]
    _check(op(*_operands(device)), values(_A, _B), strides)


@requires_real_cuda
@pytest.mark.parametrize("name", sorted(_MIXED))
def test_mixed_layouts_follow_torchs_order_on_cuda(name):
    """The first operand with a layout decides (torch's reorder_dimensions)."""
    op, values, strides = _MIXED[name]
    _check(op(*_operands("cuda")), values(_A, _B), strides)


@requires_real_cuda
@pytest.mark.parametrize("name", ["t.exp", "t+t", "t*2", "cl.exp", "cl+cl", "perm.sigmoid"])
def test_a_permuted_result_is_one_launch_and_no_copy(name):
    """One launch, no sync, no copy, no cupy routine: the kernel runs over the dims in the
    result's order and writes it C-contiguously there (no transpose, no copy after)."""
    op, values, strides = _SAME_LAYOUT[name]
    ops = _operands("cuda")
    r = one_warm_launch(op, *ops)
    _check(r, values(_A, _B), strides)


@requires_real_cuda
def test_a_mixed_layout_result_is_one_launch():
    a, b, cl = _operands("cuda")
    t, c, cond = a.t(), a.t().contiguous(), a.t() > 3
    for op, values, strides in [
        (lambda: cl + b, _B + _B, (90, 1, 18, 3)),
        (lambda: t + c, _A.T + _A.T, (1, 6)),
        (lambda: gt.where(cond, t, c), _A.T, (1, 6)),
    ]:
        _check(one_warm_launch(op), values, strides)


@requires_real_cuda
def test_the_warm_entry_and_the_general_path_agree_on_permuted_operands():
    """The operator's warm entry (backends/cuda_warm.py) and apply()'s path (eager.
    run_planned and the backend's _result) give the same strides and the same bits, for
    each order an entry is written out for, taken twice (the second from the kept plan)."""
    if not dv.cuda_is_simulated():
        pytest.skip("reads the cuda backend's plan cache through the simulated CuPy")
    from gpu_tensor.ops import _dispatch as d

    a, b, cl = _operands("cuda")
    t, u = a.t(), (a * 3).t()
    cases = [
        (lambda: t + u, ("add", t, u)),
        (lambda: t.exp(), ("exp", t)),
        (lambda: t * 2.0, ("mul", t, 2.0)),
        (lambda: 2.0 - t, ("sub", 2.0, t)),
        (lambda: t + t.contiguous(), ("add", t, t.contiguous())),
        (lambda: cl + b, ("add", cl, b)),
        (lambda: b + cl, ("add", b, cl)),
        (lambda: cl.sigmoid(), ("sigmoid", cl)),
    ]
    for warm, general in cases:
        for _ in range(2):
            want, got = d.apply(*general), warm()
            assert got.stride() == want.stride(), general
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.cpu().numpy(), want.cpu().numpy())


def test_reductions_matmul_and_copies_keep_their_own_layouts(device):
    """Results that are not elementwise: as before (torch 2.13's strides)."""
    a, b, cl = _operands(device)
    assert a.t().sum(0).stride() == (1,)
    assert (a.t() @ a).stride() == (6, 1)
    assert a.t().contiguous().stride() == (4, 1)
    assert a.t().clone().stride() == (1, 6)
    assert cl.sum(1).stride() == (30, 6, 1)
    assert a.t().to(gt.float64).stride() == (1, 6)


@requires_real_cuda
def test_a_warm_permuted_op_takes_the_frames_of_a_contiguous_one():
    """A result in its operands' layout is made by the warm entry as a C-contiguous one is
    (its strides are bound in the entry): outside the allocator, x.t() + y.t(), x.t().exp(),
    x.t() * 2.0 and 2.0 - x.t() run the same gpu_tensor functions as on C-contiguous x."""
    if not dv.cuda_is_simulated():
        pytest.skip("follows the cuda backend's warm path through the simulated CuPy")
    a, b, cl = _operands("cuda")
    x, y, t, u = a, a * 3, a.t(), (a * 3).t()
    pairs = [
        (lambda: x + y, lambda: t + u),
        (lambda: x.exp(), lambda: t.exp()),
        (lambda: x * 2.0, lambda: t * 2.0),
        (lambda: 2.0 - x, lambda: 2.0 - t),
        (lambda: b.sigmoid(), lambda: cl.sigmoid()),
    ]
    for contiguous, permuted in pairs:
        for _ in range(2):  # warm: planned, bound, then taken
            contiguous(), permuted()
        assert _frames(permuted) == _frames(contiguous)
        assert _frames(permuted)[1] == "bind.<locals>.run"
        assert permuted().stride() != contiguous().stride()


def _frames(fn):
    """The gpu_tensor functions `fn()` enters, outside the allocator (memory/: its state,
    not the op, decides its calls), the simulator (testing/) and settings (_env.py)."""
    import os
    import sys

    pkg = os.path.dirname(os.path.abspath(gt.__file__)) + os.sep
    skip = tuple(pkg + d for d in ("memory" + os.sep, "testing" + os.sep, "_env.py"))
    seen = []

    def prof(frame, event, arg):
        f = frame.f_code.co_filename
        if event == "call" and f.startswith(pkg) and not f.startswith(skip):
            seen.append(frame.f_code.co_qualname)

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


@requires_real_cuda
def test_fused_results_are_laid_out_as_eager_ones():
    """@gt.fuse on cuda: a fresh result has the layout the eager ops give (torch's rule over
    the inputs the result reads), in one launch over the dims in that order; same values."""
    a, b, cl = _operands("cuda")

    @gt.fuse
    def f(x, y):
        return (x * y).exp() + 1.0

    @gt.fuse
    def g(x):
        return x.sigmoid() * x

    t, c = a.t(), a.t().contiguous()
    for fused, eager, args in [
        (f, lambda x, y: (x * y).exp() + 1.0, (t, t)),
        (f, lambda x, y: (x * y).exp() + 1.0, (cl, cl)),
        (f, lambda x, y: (x * y).exp() + 1.0, (cl, b)),
        (f, lambda x, y: (x * y).exp() + 1.0, (t, c)),
        (g, lambda x: x.sigmoid() * x, (cl,)),
    ]:
        want = eager(*args)
        got = one_warm_launch(fused, *args) if dv.cuda_is_simulated() else fused(*args)
        assert got.stride() == want.stride() != tuple(c.stride() if len(args[0].shape) == 2 else b.stride())  # fmt: skip
        np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=2e-6)


def test_fused_and_eager_results_have_one_layout_on_every_device(device):
    """@gt.fuse gives the strides the same ops give eagerly on the device (cpu and emulated
    cuda: numpy's ops lay both out; cuda: torch's rule), with no copy of a fresh result."""
    a, b, cl = _operands(device)

    @gt.fuse
    def f(x, y):
        return (x * y).exp() + 1.0

    t, c = a.t(), a.t().contiguous()
    for args in [(t, t), (cl, cl), (cl, b), (b, cl), (t, c), (c, t), (a[:, ::2], a[:, 1::2])]:
        want = (args[0] * args[1]).exp() + 1.0
        got = f(*args)
        assert got.stride() == want.stride(), [x.stride() for x in args]
        np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=2e-6)


@requires_real_cuda
def test_the_recorded_grid_on_cuda():
    """The unary and binary cases of torch's recorded grid (tests/data/
    result_strides_torch.json: transposes, permutations, slices with steps, size-1 dims,
    expanded and overlapping operands, numbers, ranks 0-5), run on cuda: torch's strides,
    and numpy's values of the same views. Compared on the dims of size > 1: the stride of a
    size-1 dim addresses nothing, and the plan cache keys C-contiguous operands of one
    shape alike whatever their size-1 strides (fusion/eager.py run_planned), so such a
    result takes the size-1 strides of the first one planned."""
    import json
    from pathlib import Path

    data = json.loads(
        (Path(__file__).parents[1] / "data" / "result_strides_torch.json").read_text()
    )
    base_np = np.arange(1 << 15, dtype=np.float32) / 4096  # (the widest view spans ~12k)
    base = gt.from_numpy(base_np).to("cuda")
    checked = 0
    for case in data["cases"][::4]:  # (a quarter: each case plans a kernel of its own)
        if case["kind"] == "ternary":
            continue  # (addcmul: gt composes it of two ops; the rule's test checks the grid)
        views, host = [], []
        for o in case["ops"]:
            if o == "num":
                views.append(2.0)
                host.append(np.float32(2.0))
                continue
            views.append(base.as_strided(o[0], o[1]))
            host.append(np.lib.stride_tricks.as_strided(base_np, o[0], [s * 4 for s in o[1]]))
        shape, strides = (tuple(v) for v in case["out"])
        if case["kind"] == "unary":
            r, want = views[0].exp(), np.exp(host[0])
        elif isinstance(views[1], float):
            r, want = views[0] * 2.0, host[0] * np.float32(2.0)
        else:
            r, want = views[0] + views[1], host[0] + host[1]
        assert tuple(r.shape) == shape
        assert _moving(shape, r.stride()) == _moving(shape, strides), case["ops"]
        np.testing.assert_allclose(r.cpu().numpy(), want, rtol=2e-6)
        checked += 1
    assert checked > 230


def _moving(shape, strides):
    """The strides of the dims of size > 1 (an empty result: none, it addresses nothing)."""
    if 0 in shape:
        return ()
    return tuple(s for n, s in zip(shape, strides, strict=True) if n > 1)
