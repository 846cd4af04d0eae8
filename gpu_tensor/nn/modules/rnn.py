"""RNN, LSTM and GRU (multi-layer, bidirectional, batch_first, dropout between layers; LSTM
also proj_size) and their single-step cells, with torch's parameter names, shapes, default
init (every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in registration order)
and argument checks.

A layer projects the whole input sequence through W_ih in one matmul, then steps through
time with one matmul by W_hh plus the fused gate kernel(s) of functional/recurrent.py.
A PackedSequence input is padded back (sorted order) and each step past a sequence's length
is masked (the state is carried through unchanged), so h_n is each sequence's own last state
and the reverse direction starts at each sequence's own end; the output is packed again.
"""

from __future__ import annotations

import math
import numbers
import warnings

import gpu_tensor as gt

from .. import functional as F
from .. import init
from ..functional import recurrent as R
from ..module import Module
from ..parameter import Parameter
from ..utils import rnn as rnn_utils

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _check_sizes(input_size, hidden_size, bias):
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(input_size, int):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")


def _reset_uniform(self) -> None:
    """torch's RNN and cell init: every parameter from U(-1/sqrt(hidden_size), same)."""
    stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
    for weight in self.parameters():
        init.uniform_(weight, -stdv, stdv)


class RNNBase(Module):
    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the "
                "probability of an element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so "
                "non-zero dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(batch_first, bool):
            raise TypeError(
                f"batch_first should be of type bool, got: {type(batch_first).__name__}"
            )
        _check_sizes(input_size, hidden_size, bias)
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        gate = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        for layer in range(num_layers):
            for suffix in ("", "_reverse") if bidirectional else ("",):
                width = input_size if layer == 0 else real_hidden * self.num_directions
                shapes = [("weight_ih", (gate, width)), ("weight_hh", (gate, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for stem, shape in shapes:
                    name = f"{stem}_l{layer}{suffix}"
                    setattr(self, name, Parameter(gt.empty(shape, **kw)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def all_weights(self):
        per = len(self._flat_weights_names) // (self.num_layers * self.num_directions)
        ws = [getattr(self, n) for n in self._flat_weights_names]
        return [ws[k : k + per] for k in range(0, len(ws), per)]

    reset_parameters = _reset_uniform

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ---------------------------------------------------------------------------
    def _check_input(self, input):
        if not isinstance(input, gt.Tensor):
            raise TypeError(
                f"{type(self).__name__}: expected a Tensor or a PackedSequence "
                f"input, got {type(input).__name__}"
            )
        if input.ndim not in (2, 3):
            raise ValueError(
                f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                f"{input.ndim}D tensor instead"
            )
        w = getattr(self, self._flat_weights_names[0])
        if input.dtype != w.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype "
                f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                f"model: model.to({input.dtype})"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.shape[-1]}"
            )

    def _batch_hidden(self, hx, batched, batch):
        """hx made 3-D, checked against (layers * directions, batch, hidden)."""
        if hx is None:
            return None
        if batched and hx.ndim != 3:
            raise RuntimeError(
                f"For batched 3-D input, hx should also be 3-D but got {hx.ndim}-D tensor"
            )
        if not batched:
            if hx.ndim != 2:
                raise RuntimeError(
                    f"For unbatched 2-D input, hx should also be 2-D but got {hx.ndim}-D tensor"
                )
            hx = hx.unsqueeze(1)
        return hx

    def _check_hidden(self, hx, width, batch, what="Expected hidden size {}, got {}"):
        want = (self.num_layers * self.num_directions, batch, width)
        if tuple(hx.shape) != want:
            raise RuntimeError(what.format(want, list(hx.shape)))

    def forward(self, input, hx=None):
        packed = input if isinstance(input, rnn_utils.PackedSequence) else None
        mask = None
        if packed is not None:
            x, lengths = rnn_utils.padded_sorted(packed)
            self._check_input(x)
            steps = gt.arange(x.shape[0], device=x.device).reshape(-1, 1, 1)
            mask = steps < gt.tensor(lengths, device=x.device).reshape(1, -1, 1)
            if hx is not None and packed.sorted_indices is not None:
                idx = packed.sorted_indices
                hx = (
                    (hx[0].index_select(1, idx), hx[1].index_select(1, idx))
                    if isinstance(hx, tuple)
                    else hx.index_select(1, idx)
                )
            batched = True
        else:
            self._check_input(input)
            batched = input.ndim == 3
            x = input if batched else input.unsqueeze(1 if not self.batch_first else 0)
            if self.batch_first:
                x = x.transpose(0, 1)
        batch = x.shape[1]
        lstm = self.mode == "LSTM"
        h_width = self.proj_size or self.hidden_size
        kw = {"dtype": x.dtype, "device": x.device}
        if lstm:
            if hx is None:
                h0 = gt.zeros((self.num_layers * self.num_directions, batch, h_width), **kw)
                c0 = gt.zeros(
                    (self.num_layers * self.num_directions, batch, self.hidden_size), **kw
                )
            else:
                h0 = self._batch_hidden(hx[0], batched, batch)
                c0 = self._batch_hidden(hx[1], batched, batch)
                self._check_hidden(h0, h_width, batch)
                self._check_hidden(
                    c0, self.hidden_size, batch, "Expected hidden[1] size {}, got {}"
                )
        else:
            if hx is None:
                h0 = gt.zeros((self.num_layers * self.num_directions, batch, h_width), **kw)
            else:
                h0 = self._batch_hidden(hx, batched, batch)
                self._check_hidden(h0, h_width, batch)
            c0 = None
        out, h_n, c_n = self._run(x, h0, c0, mask)
        if packed is not None:
            unsort = packed.unsorted_indices
            if unsort is not None:
                h_n = h_n.index_select(1, unsort)
                c_n = c_n.index_select(1, unsort) if c_n is not None else None
            out = rnn_utils.repack(out, packed)
            return (out, (h_n, c_n)) if lstm else (out, h_n)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1 if not self.batch_first else 0)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def _run(self, x, h0, c0, mask=None):
        weights = self.all_weights
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.num_directions):
                k = layer * self.num_directions + d
                w = dict(zip(("w_ih", "w_hh"), weights[k][:2], strict=True))
                rest = weights[k][2:]
                w["b_ih"], w["b_hh"] = (rest[0], rest[1]) if self.bias else (None, None)
                w["w_hr"] = rest[-1] if self.proj_size else None
                seq, h, c = self._direction(
                    x, h0[k], None if c0 is None else c0[k], w, reverse=d == 1, mask=mask
                )
                outs.append(seq)
                hs.append(h)
                cs.append(c)
            x = outs[0] if len(outs) == 1 else gt.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, gt.stack(hs, 0), (gt.stack(cs, 0) if c0 is not None else None)

    def _direction(self, x, h, c, w, reverse, mask=None):
        """One layer in one direction over the whole (L, N, I) sequence; `mask` (L, N, 1):
        where False, the step keeps the previous state (packed sequences)."""
        xw = x.matmul(w["w_ih"].t())
        if w["b_ih"] is not None:
            xw = xw + w["b_ih"]
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        outs = []
        for t in steps:
            h_prev, c_prev = h, c
            if self.mode == "LSTM":
                h, c = R.lstm_step(xw[t], h, c, w["w_hh"], w["b_hh"])
                if w["w_hr"] is not None:
                    h = h.matmul(w["w_hr"].t())
            elif self.mode == "GRU":
                h = R.gru_step(xw[t], h, w["w_hh"], w["b_hh"])
            else:
                hw = R._affine(h, w["w_hh"], w["b_hh"])
                h = R._tanh_sum(xw[t], hw) if self.mode == "RNN_TANH" else R._relu_sum(xw[t], hw)
            if mask is not None:
                h = gt.where(mask[t], h, h_prev)
                c = gt.where(mask[t], c, c_prev) if c is not None else None
            outs.append(h)
        if reverse:
            outs.reverse()
        if not outs:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        return gt.stack(outs, 0), h, c


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if self.nonlinearity not in modes:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(modes[self.nonlinearity], *args, **kwargs)


class LSTM(RNNBase):
    """Gates i, f, g, o (in that order in the weights); returns (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gates r, z, n (in that order in the weights); returns (output, h_n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# -- cells -------------------------------------------------------------------------------
class RNNCellBase(Module):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(gt.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(gt.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(gt.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(gt.empty(num_chunks * hidden_size, **kw))
        else:
            self.bias_ih = self.bias_hh = None
        self.reset_parameters()

    reset_parameters = _reset_uniform

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx, n_hidden):
        """(batched input, hx list or None, was-batched)."""
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}"
            )
        if hx is None:
            zeros = gt.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
            return x, [zeros] * n_hidden, batched
        parts = list(hx) if n_hidden > 1 else [hx]
        for k, h in enumerate(parts):
            if h.ndim not in (1, 2):
                what = f"hx[{k}]" if n_hidden > 1 else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {h.ndim}D instead")
        parts = [h if batched else h.unsqueeze(0) for h in parts]
        for h in parts:
            if h.shape[0] != x.shape[0]:
                raise RuntimeError(
                    f"Input batch size {x.shape[0]} doesn't match hidden0 batch size {h.shape[0]}"
                )
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden0 has inconsistent hidden_size: got {h.shape[1]}, "
                    f"expected {self.hidden_size}"
                )
        return x, parts, batched

    def _weights(self):
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh


class RNNCell(RNNCellBase):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        if self.nonlinearity == "tanh":
            out = R.rnn_tanh_cell(x, h, *self._weights())
        elif self.nonlinearity == "relu":
            out = R.rnn_relu_cell(x, h, *self._weights())
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c = R.lstm_cell(x, (h, c), *self._weights())
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        out = R.gru_cell(x, h, *self._weights())
        return out if batched else out.squeeze(0)
