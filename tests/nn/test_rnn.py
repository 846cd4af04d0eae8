"""Recurrent layers without torch: numpy references for a step, gradcheck through the
fused gates, shapes, parameter names, reprs (recorded from torch 2.13) and argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.autograd.gradcheck import gradcheck
from gpu_tensor.nn.functional import recurrent as R

RNG = np.random.default_rng(3)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _weights(gates, i, h):
    return [
        RNG.standard_normal(s) for s in ((gates * h, i), (gates * h, h), (gates * h,), (gates * h,))
    ]


def test_lstm_cell_matches_numpy(device):
    x, h, c = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
    w = _weights(4, 4, 5)
    gates = x @ w[0].T + w[2] + h @ w[1].T + w[3]
    i, f, g, o = np.split(gates, 4, 1)
    c2 = _sig(f) * c + _sig(i) * np.tanh(g)
    h2 = _sig(o) * np.tanh(c2)
    T = [gt.tensor(a, device=device) for a in (x, h, c, *w)]
    gh, gc = R.lstm_cell(T[0], (T[1], T[2]), *T[3:])
    np.testing.assert_allclose(gh.cpu().numpy(), h2, rtol=1e-10)
    np.testing.assert_allclose(gc.cpu().numpy(), c2, rtol=1e-10)


def test_gru_cell_matches_numpy(device):
    x, h = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 5))
    w = _weights(3, 4, 5)
    xi, hh = x @ w[0].T + w[2], h @ w[1].T + w[3]
    r = _sig(xi[:, :5] + hh[:, :5])
    z = _sig(xi[:, 5:10] + hh[:, 5:10])
    n = np.tanh(xi[:, 10:] + r * hh[:, 10:])
    want = (1 - z) * n + z * h
    T = [gt.tensor(a, device=device) for a in (x, h, *w)]
    np.testing.assert_allclose(R.gru_cell(*T).cpu().numpy(), want, rtol=1e-10)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_gradcheck_through_a_layer(mode):
    gt.manual_seed(0)
    layer = getattr(gt.nn, mode)(3, 2, bidirectional=True).double()
    x = gt.tensor(RNG.standard_normal((3, 2, 3)), requires_grad=True)

    def run(inp, w):
        layer.weight_hh_l0_reverse = w
        out = layer(inp)[0]
        return out

    w = gt.nn.Parameter(layer.weight_hh_l0_reverse.detach().clone())
    assert gradcheck(run, (x, w), eps=1e-6, atol=1e-6)


def test_shapes_names_and_init():
    gt.manual_seed(0)
    m = gt.nn.LSTM(10, 20, num_layers=2, batch_first=True, bidirectional=True)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert names[4] == "weight_ih_l0_reverse" and names[-1] == "bias_hh_l1_reverse"
    assert tuple(m.weight_ih_l1.shape) == (80, 40)
    bound = 1 / np.sqrt(20)
    assert all(float(p.abs().max()) <= bound for p in m.parameters())
    out, (h, c) = m(gt.randn(3, 7, 10))
    assert tuple(out.shape) == (3, 7, 40) and tuple(h.shape) == (4, 3, 20) == tuple(c.shape)
    out, h = gt.nn.GRU(10, 20)(gt.randn(7, 10))  # unbatched
    assert tuple(out.shape) == (7, 20) and tuple(h.shape) == (1, 20)
    out, (h, c) = gt.nn.LSTM(10, 20, proj_size=5)(gt.randn(7, 2, 10))
    assert tuple(out.shape) == (7, 2, 5) and tuple(h.shape) == (1, 2, 5)
    assert tuple(c.shape) == (1, 2, 20)


def test_reprs_recorded_from_torch():
    assert (
        repr(gt.nn.LSTM(10, 20, 2, batch_first=True, dropout=0.1, bidirectional=True))
        == "LSTM(10, 20, num_layers=2, batch_first=True, dropout=0.1, bidirectional=True)"
    )
    assert repr(gt.nn.GRU(3, 4, bias=False)) == "GRU(3, 4, bias=False)"
    assert repr(gt.nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4)"
    assert repr(gt.nn.LSTM(3, 4, proj_size=2)) == "LSTM(3, 4, proj_size=2)"
    assert repr(gt.nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert repr(gt.nn.LSTMCell(3, 4, bias=False)) == "LSTMCell(3, 4, bias=False)"


def test_argument_checks():
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        gt.nn.LSTM(3, 4, dropout=2)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        gt.nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        gt.nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        gt.nn.GRU(3, 4, dropout=0.5)
    m = gt.nn.LSTM(3, 4)
    with pytest.raises(
        RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"
    ):
        m(gt.randn(2, 2, 5))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 2, 4\\), got \\[1, 3, 4\\]"):
        m(gt.randn(2, 2, 3), (gt.randn(1, 3, 4), gt.randn(1, 2, 4)))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D"):
        m(gt.randn(1, 2, 2, 3))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D"):
        gt.nn.GRUCell(3, 4)(gt.randn(1, 2, 3))


def test_dropout_between_layers_only_in_training():
    gt.manual_seed(0)
    m = gt.nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = gt.randn(5, 2, 3)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert bool((a == b).all())
    m.train()
    gt.manual_seed(1)
    c = m(x)[0]
    assert not bool((a == c).all())


def test_packed_sequence_matches_running_each_sequence_alone():
    gt.manual_seed(0)
    m = gt.nn.LSTM(3, 4, bidirectional=True)
    lengths = [2, 5, 3]
    seqs = [gt.randn(n, 3) for n in lengths]
    packed = gt.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1, 1]
    out, (h, c) = m(packed)
    padded, lens = gt.nn.utils.rnn.pad_packed_sequence(out)
    assert lens.tolist() == lengths
    for b, s in enumerate(seqs):
        alone, (hb, cb) = m(s)  # unbatched, the sequence by itself
        np.testing.assert_allclose(
            padded[: lengths[b], b].detach().numpy(), alone.detach().numpy(), rtol=1e-5, atol=1e-6
        )
        assert float(padded[lengths[b] :, b].abs().sum()) == 0.0
        np.testing.assert_allclose(
            h[:, b].detach().numpy(), hb.detach().numpy(), rtol=1e-5, atol=1e-6
        )


def test_pad_pack_round_trip_and_pad_sequence():
    seqs = [gt.tensor(RNG.standard_normal((n, 2))) for n in (3, 1, 2)]
    padded = gt.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=-9.0)
    want = np.full((3, 3, 2), -9.0)
    for b, s in enumerate(seqs):
        want[b, : s.shape[0]] = s.numpy()
    np.testing.assert_array_equal(padded.numpy(), want)
    back = gt.nn.utils.rnn.unpack_sequence(gt.nn.utils.rnn.pack_sequence(seqs, False))
    for a, b in zip(back, seqs, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        gt.nn.utils.rnn.pack_padded_sequence(padded, [1, 3, 2], batch_first=True)


def test_clip_grad_norm_matches_numpy():
    p1, p2 = gt.nn.Parameter(gt.zeros(3)), gt.nn.Parameter(gt.zeros(2))
    g1, g2 = np.array([3.0, 4.0, 0.0]), np.array([0.0, 12.0])
    p1.grad, p2.grad = gt.tensor(g1, dtype=gt.float32), gt.tensor(g2, dtype=gt.float32)
    total = gt.nn.utils.clip_grad_norm_([p1, p2], 1.0)
    assert abs(float(total) - 13.0) < 1e-5
    scale = 1.0 / (13.0 + 1e-6)
    np.testing.assert_allclose(p1.grad.numpy(), g1 * scale, rtol=1e-6)
    gt.nn.utils.clip_grad_value_([p2], 0.5)
    assert float(p2.grad.abs().max()) <= 0.5
    v = gt.nn.utils.parameters_to_vector([p1, p2])
    assert tuple(v.shape) == (5,)
