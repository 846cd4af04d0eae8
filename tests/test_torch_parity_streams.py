"""Seeded random streams against torch's cpu, bit for bit: many seeds, sizes around the
16-wide normal kernel and the sampler's pieces, every float dtype, integer ranges on both
sides of the 32/64-bit word switch, and the generator state after each call."""

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends.base import PIECE

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the PyTorch parity tests need it as the reference"
)

SEEDS = [0, 1, 7, 42, 2**33 + 17, 987654321]
SIZES = [1, 2, 3, 15, 16, 17, 31, 32, 33, 100, 1001]
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _same(t, g):
    a = t.detach().to(torch.float64).numpy()
    b = g.detach().to(gt.float64).numpy()
    return np.array_equal(a, b, equal_nan=True)


def _state_same():
    return torch.get_rng_state().numpy().tobytes() == gt.get_rng_state().numpy().tobytes()


@pytest.mark.parametrize("seed", SEEDS)
def test_float_samplers(seed):
    torch.manual_seed(seed)
    gt.manual_seed(seed)
    for n in SIZES:
        for name in FLOATS:
            td, gd = getattr(torch, name), getattr(gt, name)
            assert _same(torch.rand(n, dtype=td), gt.rand(n, dtype=gd)), (n, name)
            assert _same(
                torch.empty(n, dtype=td).uniform_(-1.5, 2.25),
                gt.empty(n, dtype=gd).uniform_(-1.5, 2.25),
            ), (n, name)
            assert _same(torch.randn(n, dtype=td), gt.randn(n, dtype=gd)), (n, name)
            assert _same(
                torch.empty(n, dtype=td).normal_(0.5, 3.0), gt.empty(n, dtype=gd).normal_(0.5, 3.0)
            ), (n, name)
            assert _same(
                torch.empty(n, dtype=td).exponential_(1.7), gt.empty(n, dtype=gd).exponential_(1.7)
            ), (n, name)
            assert _same(
                torch.empty(n, dtype=td).bernoulli_(0.3), gt.empty(n, dtype=gd).bernoulli_(0.3)
            ), (n, name)
            assert _state_same(), (n, name)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_integer_samplers_and_randperm(seed):
    torch.manual_seed(seed)
    gt.manual_seed(seed)
    ranges = [
        (0, 10, "int64"),
        (-7, 3, "int8"),
        (0, 255, "uint8"),
        (-5, 2**28 - 6, "int32"),
        (0, 2**28, "int32"),
        (-(2**40), 5, "int64"),
        (0, 100, "float32"),
        (0, 2**30, "float64"),
        (0, 2, "bool"),
    ]
    for n in SIZES:
        for lo, hi, name in ranges:
            a = torch.randint(lo, hi, (n,), dtype=getattr(torch, name))
            b = gt.randint(lo, hi, (n,), dtype=getattr(gt, name))
            assert _same(a, b), (n, lo, hi, name)
        assert _same(torch.randperm(n), gt.randperm(n)), n
        p, gp = torch.rand(n), gt.rand(n)
        assert _same(torch.bernoulli(p), gt.bernoulli(gp)), n
        p64, gp64 = torch.rand(n, dtype=torch.float64), gt.rand(n, dtype=gt.float64)
        assert _same(torch.bernoulli(p64), gt.bernoulli(gp64)), n
        assert _state_same(), n


def test_large_sizes_across_pieces():
    for n in (PIECE - 3, PIECE + 16, 2 * PIECE + 7):
        torch.manual_seed(n)
        gt.manual_seed(n)
        assert _same(torch.randn(n), gt.randn(n))
        assert _same(torch.randn(n, dtype=torch.float64), gt.randn(n, dtype=gt.float64))
        assert _same(torch.rand(n), gt.rand(n))
        assert _same(torch.randperm(n), gt.randperm(n))
        assert _state_same()


def test_strided_tensors_draw_in_memory_order():
    torch.manual_seed(3)
    gt.manual_seed(3)
    assert _same(torch.empty(5, 7).t().normal_(), gt.empty(5, 7).t().normal_())
    assert _same(torch.empty(6, 8).t().uniform_(), gt.empty(6, 8).t().uniform_())
    assert _same(torch.empty(4, 9)[:, ::2].bernoulli_(0.5), gt.empty(4, 9)[:, ::2].bernoulli_(0.5))
    assert _state_same()


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_dropout_and_init(seed):
    torch.manual_seed(seed)
    gt.manual_seed(seed)
    tnn, gnn = torch.nn, gt.nn
    assert _same(
        tnn.functional.dropout(torch.ones(37, 5), 0.3), gnn.functional.dropout(gt.ones(37, 5), 0.3)
    )
    assert _same(tnn.Dropout(0.5)(torch.ones(3, 9)), gnn.Dropout(0.5)(gt.ones(3, 9)))
    for shape in [(5, 3), (17, 33), (4, 3, 3, 3)]:
        for fn in (
            "uniform_",
            "normal_",
            "xavier_uniform_",
            "xavier_normal_",
            "kaiming_uniform_",
            "kaiming_normal_",
            "trunc_normal_",
        ):
            a = getattr(tnn.init, fn)(torch.empty(shape))
            b = getattr(gnn.init, fn)(gt.empty(shape))
            assert _same(a, b), (fn, shape)
        a = tnn.init.trunc_normal_(torch.empty(shape), 0.0, 0.02, -0.04, 0.04)
        b = gnn.init.trunc_normal_(gt.empty(shape), 0.0, 0.02, -0.04, 0.04)
        assert _same(a, b), shape
        a = tnn.init.trunc_normal_(torch.empty(shape), 0.3, 1.0, -0.1, 0.2)  # rejection path
        b = gnn.init.trunc_normal_(gt.empty(shape), 0.3, 1.0, -0.1, 0.2)
        assert _same(a, b), shape
    for tm, gm in [
        (tnn.Linear(7, 5), gnn.Linear(7, 5)),
        (tnn.Conv2d(3, 4, 3), gnn.Conv2d(3, 4, 3)),
    ]:
        assert _same(tm.weight, gm.weight) and _same(tm.bias, gm.bias)
    assert _state_same()


def test_generators_and_states_cross_over():
    tg, gg = torch.Generator().manual_seed(5), gt.Generator().manual_seed(5)
    assert _same(torch.rand(10, generator=tg), gt.rand(10, generator=gg))
    assert _same(
        torch.randn(3, generator=tg, dtype=torch.float64),
        gt.randn(3, generator=gg, dtype=gt.float64),
    )
    assert tg.get_state().numpy().tobytes() == gg.get_state().numpy().tobytes()
    state = torch.get_rng_state()
    gt.set_rng_state(gt.tensor(state.numpy()))
    assert _same(torch.randn(5), gt.randn(5))
    torch.set_rng_state(torch.from_numpy(gt.get_rng_state().numpy().copy()))
    assert _same(torch.rand(8), gt.rand(8))
    assert torch.initial_seed() == gt.initial_seed()
