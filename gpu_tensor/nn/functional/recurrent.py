"""One time step of the recurrent layers (RNN tanh/relu, LSTM, GRU), torch's gate order
and formulas.

The gate arithmetic after the two matmuls is `@gt.fuse`d: on cuda each step is two matmuls
plus one generated kernel per output (LSTM: the cell state, then the hidden state; GRU: the
new hidden state), instead of one launch per sigmoid, tanh, multiply and add; the backward
of each is itself one fused kernel (autograd/fused.py). The same functions run on cpu as one
numpy evaluation each. A fused function has one output here, so its backward stays fused.
"""

from __future__ import annotations

from gpu_tensor.fusion import fuse

__all__ = [
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "lstm_cell",
    "gru_cell",
    "lstm_step",
    "gru_step",
    "lstm_cell_state",
    "lstm_hidden",
    "gru_hidden",
]


@fuse
def lstm_cell_state(i, f, g, c):
    """c' = sigmoid(f) c + sigmoid(i) tanh(g), from the pre-activation gates."""
    return f.sigmoid() * c + i.sigmoid() * g.tanh()


@fuse
def lstm_hidden(o, c):
    """h' = sigmoid(o) tanh(c')."""
    return o.sigmoid() * c.tanh()


@fuse
def gru_hidden(ir, iz, in_, hr, hz, hn, h):
    """r = sigmoid(ir + hr), z = sigmoid(iz + hz), n = tanh(in + r hn), h' = (1 - z) n + z h
    (torch's GRU: the reset gate scales the hidden part of n, bias included)."""
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (h - n)


@fuse
def _tanh_sum(a, b):
    return (a + b).tanh()


@fuse
def _relu_sum(a, b):
    return (a + b).relu()


def _affine(x, w, b):
    out = x.matmul(w.t())
    return out if b is None else out + b


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _tanh_sum(_affine(input, w_ih, b_ih), _affine(hx, w_hh, b_hh))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _relu_sum(_affine(input, w_ih, b_ih), _affine(hx, w_hh, b_hh))


def lstm_step(xw, hx, cx, w_hh, b_hh):
    """One LSTM step from the input's precomputed projection xw = x W_ih^T + b_ih."""
    gates = xw + _affine(hx, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = lstm_cell_state(i, f, g, cx)
    return lstm_hidden(o, c), c


def gru_step(xw, hx, w_hh, b_hh):
    """One GRU step from the input's precomputed projection xw = x W_ih^T + b_ih."""
    ir, iz, in_ = xw.chunk(3, -1)
    hr, hz, hn = _affine(hx, w_hh, b_hh).chunk(3, -1)
    return gru_hidden(ir, iz, in_, hr, hz, hn, hx)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(h', c') from input (N, I) and hx = (h, c), each (N, H)."""
    return lstm_step(_affine(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return gru_step(_affine(input, w_ih, b_ih), hx, w_hh, b_hh)
