"""linear, dropout, layer_norm, embedding, one_hot, pad and normalize."""

from __future__ import annotations

import numpy as np

import gpu_tensor as gt
from gpu_tensor import dtype as _dt
from gpu_tensor._grad import STATE
from gpu_tensor._modes import ACTIVE
from gpu_tensor._tensor import Tensor
from gpu_tensor.autograd.composite import composite, with_formula
from gpu_tensor.backends import get_backend
from gpu_tensor.device import CPU
from gpu_tensor.ops import _dispatch

__all__ = ["linear", "dropout", "layer_norm", "embedding", "one_hot", "pad", "normalize"]


def _addmm(bias, x, wt):
    out = _mm(x, wt)
    # the cpu and emulated cuda add the bias into the product's own memory: one result,
    # as torch's addmm makes (the same numpy add per element: the bits of `out + bias`)
    if _dispatch.host_bias_add(out, bias):
        return out
    return out + bias


def _addmm_backward(g, need, bias, x, wt):
    # torch's mm_mat1/mm_mat2_backward, as MmBackward0's formula: an operand that is a
    # transposed view (wt is weight.t()) gets its gradient computed transposed, so after
    # TBackward0 the weight's gradient is dense and becomes .grad without a copy, and BLAS
    # runs the row-major product (x.t() @ g was 2.6x slower for a 64x784 input). Each
    # element is the same sum over the batch, in the same order, but BLAS may round the two
    # orientations differently (1 ulp apart with numpy 2.4.6's OpenBLAS 0.3.31 on an AMD
    # EPYC; tests/nn/test_linear_grads.py).
    return (
        g if need[0] else None,
        (_mm(wt, g.t()).t() if _transposed(x) else _mm(g, wt.t())) if need[1] else None,
        (_mm(g.t(), x).t() if _transposed(wt) else _mm(x.t(), g)) if need[2] else None,
    )


def _transposed(t) -> bool:
    """t is a 2-D transposed view of a row-major matrix (column-major): not contiguous
    while t.t() is, read off the array's flags as Tensor.is_contiguous reads them (a
    tensor with no elements is contiguous)."""
    d = t._data
    if d.ndim != 2 or not d.size:
        return False
    flags = d.flags
    return not flags.c_contiguous and bool(flags.f_contiguous)


_HOST_MM = (_dt.float32, _dt.float64)


def _mm(a, b):
    """a @ b, a product of Linear's forward or backward. Two non-empty float32/float64
    matrices (Tensors, not subclasses) on the cpu or emulated cuda, with nothing recording
    or watching (no mode): numpy's matmul as linalg makes it (emulated: into a C-order
    allocator block, the layout numpy gives a 2-D product), without matmul's dispatch, so
    the same bits. Otherwise a.matmul(b) (its checks, its errors, the profiler's
    aten::matmul)."""
    x, y = a._data, b._data
    dev, dt = a.device, a.dtype
    if (
        not ACTIVE[0]
        and type(a) is Tensor  # (a subclass's own matmul runs)
        and type(b) is Tensor
        and dt in _HOST_MM
        and b.dtype is dt
        and b.device is dev
        and x.ndim == 2
        and y.ndim == 2
        and x.shape[1] == y.shape[0]
        and x.size
        and y.size
        and not (STATE.enabled and (a._requires_grad or b._requires_grad))
    ):
        if dev is CPU:
            try:
                return Tensor._make(np.matmul(x, y), CPU, dt)
            except MemoryError as exc:
                raise get_backend(CPU).host_memory_error(exc, "a product") from None
        backend = dev._backend
        if backend is not None and backend.host_arrays:
            out, st = backend.empty((x.shape[0], y.shape[1]), x.dtype)
            np.matmul(x, y, out=out)
            return Tensor._make(out, dev, dt, st)
    return a.matmul(b)


def linear(input, weight, bias=None):
    """input @ weight.T + bias (weight: (out_features, in_features)). Recorded as torch
    records it: with a bias, one AddmmBackward0 over (bias, input rows, weight.t()), viewed
    back to the input's leading dims when the input is not 2-D."""
    if bias is None:
        return input.matmul(weight.t())
    if input.ndim == 0:
        return input.matmul(weight.t()) + bias
    rows = input if input.ndim == 2 else input.reshape(-1, input.shape[-1])
    wt = weight.t()
    # torch's AddmmBackward0 saves mat1 when mat2 needs a gradient, and mat2 when mat1 does
    saved = (rows,) * wt._requires_grad + (wt,) * rows._requires_grad
    out = with_formula("AddmmBackward0", _addmm, _addmm_backward, bias, rows, wt, saved=saved)
    return out if input.ndim == 2 else out.view(*input.shape[:-1], weight.shape[0])


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only).
    The mask is torch's cpu one: bernoulli_(1 - p) on a tensor like input, divided by
    1 - p, from the generator `gt.manual_seed` seeds (so torch's numbers after a seed)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        noise = gt.empty(tuple(input.shape), dtype=input.dtype, device=input.device)
        noise.bernoulli_(1.0 - p)
        out = input * noise.div_(1.0 - p)
    return input.copy_(out) if inplace else out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing `normalized_shape` dims with the biased variance."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(input.shape[input.ndim - k :]) != shape or input.ndim < k:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size"
            f"{list(input.shape)}"
        )
    dims = tuple(range(input.ndim - k, input.ndim))

    def run(x, w, b):
        mean = x.mean(dims, keepdim=True)
        centred = x - mean
        var = (centred * centred).mean(dims, keepdim=True)
        out = centred * (var + eps).rsqrt()
        if w is not None:
            out = out * w
        return out if b is None else out + b

    return composite("NativeLayerNormBackward0", run, input, weight, bias)


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of `weight` picked by the integer `input`. The padding_idx row gets no
    gradient (its forward value is kept, as in torch)."""
    if input.dtype not in (gt.int64, gt.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.dtype.name} instead (while checking arguments "
            "for embedding)"
        )
    if sparse or scale_grad_by_freq or max_norm is not None:
        raise NotImplementedError(
            "embedding: max_norm, scale_grad_by_freq and sparse are not supported in "
            "gpu_tensor yet; renormalise the weight yourself under gt.no_grad()"
        )
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    flat = input.reshape(-1)
    if flat.numel() and (int(flat.max()) >= n or int(flat.min()) < 0):
        raise IndexError("index out of range in self")

    def run(w):
        rows = w.index_select(0, flat)
        if padding_idx is not None and w.requires_grad:
            keep = (flat != padding_idx).unsqueeze(1)
            rows = gt.where(keep, rows, rows.detach())
        return rows.reshape(*input.shape, w.shape[1])

    return composite("EmbeddingBackward0", run, weight)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot vectors along a new last dim."""
    if tensor.dtype is not gt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel() and int(tensor.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if tensor.numel() and int(tensor.max()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = gt.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


def _pad_index(n, lo, hi, mode):
    """Source positions for one padded dim of size n (reflect/replicate/circular)."""
    pos = gt.arange(-lo, n + hi, device="cpu")  # index math on the host; moved by the caller
    if mode == "replicate":
        return pos.clamp(0, n - 1)
    if mode == "circular":
        return pos.remainder(n)
    if lo >= n or hi >= n:
        raise RuntimeError(
            f"Argument #4: Padding size should be less than the corresponding input dimension, "
            f"but got: padding ({lo}, {hi}) at dimension of input size {n}"
        )
    period = 2 * (n - 1) if n > 1 else 1
    r = pos.abs().remainder(period)
    return gt.where(r < n, r, period - r)


def pad(input, pad, mode="constant", value=None):  # noqa: A002  (torch's name)
    """Pad the last len(pad)//2 dims: pad = (last_lo, last_hi, 2nd_last_lo, ...). Negative
    constant padding crops."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension"
        )
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value is not None:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if mode == "constant":
        return composite("ConstantPadNdBackward0", lambda x: _pad_dims(x, pad, mode, value), input)
    return _pad_dims(input, pad, mode, value)


def _pad_dims(input, pad, mode, value):  # noqa: A002  (torch's name)
    out = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        lo, hi = int(pad[2 * i]), int(pad[2 * i + 1])
        if lo == hi == 0:
            continue
        if mode == "constant":
            out = _pad_constant(out, dim, lo, hi, 0.0 if value is None else value)
        else:
            idx = _pad_index(out.shape[dim], lo, hi, mode).to(out.device)
            out = out.index_select(dim, idx)
    return out


def _pad_constant(x, dim, lo, hi, value):
    n = x.shape[dim]
    x = x.narrow(dim, max(-lo, 0), max(n + min(lo, 0) + min(hi, 0), 0))
    parts = []
    for width in (lo, None, hi):
        if width is None:
            parts.append(x)
        elif width > 0:
            shape = list(x.shape)
            shape[dim] = width
            parts.append(gt.full(shape, value, dtype=x.dtype, device=x.device))
    return gt.cat(parts, dim) if len(parts) > 1 else x


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    result = input / denom
    return result if out is None else out.copy_(result)
