"""Loss functions with torch's arguments, defaults, reductions and error classes.

`size_average` and `reduce` are torch's deprecated spellings of `reduction`; they are
accepted and mapped the way torch maps them.
"""

from __future__ import annotations

import warnings

import gpu_tensor as gt
from gpu_tensor.autograd.composite import composite, with_formula
from gpu_tensor.dtype import SCALAR_TYPE_NAMES
from gpu_tensor.memory import graph_pool as _graph_pool

from .activation import log_softmax
from .nll_host import host_nll_loss, nll_grad

__all__ = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
]

_REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average, reduce, reduction):
    """torch's mapping of the deprecated size_average/reduce to a reduction string."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn(
        "size_average and reduce args will be deprecated, please use "
        "reduction='mean' (or 'sum', 'none') instead.",
        UserWarning,
        stacklevel=3,
    )
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _pointwise(input, target, size_average, reduce, reduction):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return reduction


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _pointwise(input, target, size_average, reduce, reduction)

    def run(x, t):
        d = x - t
        return _reduce(d * d, reduction)

    return composite("MseLossBackward0", run, input, target)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _pointwise(input, target, size_average, reduce, reduction)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta=0: l1_loss)."""
    reduction = _pointwise(input, target, size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")

    def run(x, t):
        d = (x - t).abs()
        if beta == 0:
            return _reduce(d, reduction)
        return _reduce(gt.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)

    return composite("SmoothL1LossBackward0", run, input, target)


def _class_layout(input, target, name):
    """Validate (N, C, d1...) / (C,) input against an index target; returns the class dim."""
    if input.ndim == 0:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if target.dtype not in (gt.int64, gt.uint8):  # torch's two (an int32 target raises)
        raise RuntimeError(
            "expected target dtype to be Long or Byte, but got "
            f"{SCALAR_TYPE_NAMES.get(target.dtype.name, target.dtype.name)}"
        )
    cdim = 0 if input.ndim == 1 else 1
    want = tuple(input.shape[:cdim]) + tuple(input.shape[cdim + 1 :])
    if tuple(target.shape) != want:
        if input.ndim <= 2:
            raise ValueError(
                f"Expected input batch_size ({input.shape[0]}) to match target "
                f"batch_size ({target.shape[0] if target.ndim else 1})."
            )
        raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")
    return cdim


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    """-input[n, target[n]] * weight[target[n]]; 'mean' divides by the summed weights of
    the targets that are not ignore_index."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    cdim = _class_layout(input, target, "nll_loss")
    if weight is None and reduction != "none":  # the cpu and emulated cuda: one result
        loss = host_nll_loss(input, target, ignore_index, reduction)
        if loss is not None:
            return loss
    n_classes = input.shape[cdim]
    labels = target.long()  # (a uint8 target's copy; `target` itself is what torch saves)
    keep = labels != ignore_index
    safe = gt.where(keep, labels, 0)
    # the bounds check reads the targets on the host, which a CUDA graph capture cannot do
    # (torch checks on the device there); a captured step is checked by its warm-up run
    if (
        safe.numel()
        and not _graph_pool.active_captures
        and (int(safe.max()) >= n_classes or int(safe.min()) < 0)
    ):
        bad = int(labels.masked_select(keep & ((labels >= n_classes) | (labels < 0)))[0])
        raise IndexError(f"Target {bad} is out of bounds.")
    if weight is not None:
        w = weight.index_select(0, safe.reshape(-1)).reshape(safe.shape) * keep.to(input.dtype)
    else:
        w = keep.to(input.dtype)
    w = w.detach()  # torch's nll_loss does not differentiate the class weights
    index = safe.unsqueeze(cdim)
    total = w.sum() if reduction == "mean" else None

    def run(x):
        # an ignored row's term is +0.0, as torch skips it (0 * inf would be NaN)
        loss = (-x.gather(cdim, index).squeeze(cdim) * w).where(keep, 0.0)
        if reduction == "none":
            return loss
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / total

    def again(gg):  # this loss over another input (create_graph's second order)
        return nll_loss(gg, target, weight, ignore_index=ignore_index, reduction=reduction)

    def backward(g, need, x):
        return (nll_grad(g, x, w, index, total, reduction, cdim, keep, again),)

    # torch's NllLossBackward0 saves the input and the target
    return with_formula("NllLossBackward0", run, backward, input, saved=(input, target))


def _class_weight(weight, ndim, cdim):
    """weight (C,) shaped to broadcast along the class dim of an ndim-d input."""
    shape = [1] * ndim
    shape[cdim] = weight.shape[0]
    return weight.reshape(shape)


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """log_softmax over the class dim, then nll_loss (class-index target) or the soft-label
    sum (a float target of the input's shape: class probabilities)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    cdim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, cdim)
    n_classes = input.shape[cdim]
    if tuple(target.shape) == tuple(input.shape):  # torch: class probabilities by shape
        if not target.is_floating_point():
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, got "
                f"{SCALAR_TYPE_NAMES.get(target.dtype.name, target.dtype.name)}"
            )
        return _soft_cross_entropy(logp, target, weight, reduction, label_smoothing, cdim)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return nll
    keep = target != ignore_index
    wlogp = logp if weight is None else logp * _class_weight(weight, logp.ndim, cdim)
    smooth = (-wlogp.sum(cdim)).where(keep, 0.0)  # torch's masked_fill: +0.0, never NaN
    if reduction == "mean":
        if weight is None:
            smooth = smooth.sum() / keep.sum()
        else:
            safe = gt.where(keep, target, 0).reshape(-1)
            smooth = smooth.sum() / (weight.index_select(0, safe) * keep.reshape(-1)).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _soft_cross_entropy(logp, target, weight, reduction, label_smoothing, cdim):
    if tuple(target.shape) != tuple(logp.shape):
        raise RuntimeError(f"Expected target size {list(logp.shape)}, got {list(target.shape)}")
    n_classes = logp.shape[cdim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    term = logp * target
    if weight is not None:
        term = term * _class_weight(weight, logp.ndim, cdim)
    if reduction == "mean":  # torch: -(sum) / batch, its division by a number (DivBackward1)
        total = -term.sum()
        count = logp.numel() // n_classes if logp.numel() else 0.0
        return composite("DivBackward1", lambda t: t / count, total)
    return _reduce(-term.sum(cdim), reduction)


def _same_size(input, target, message):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(message)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as torch does."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _same_size(
        input,
        target,
        f"Using a target size ({target.shape}) that is different to "
        f"the input size ({input.shape}) is deprecated. Please ensure they have the "
        "same size.",
    )
    if input.numel() and (bool((input < 0).any()) or bool((input > 1).any())):
        raise RuntimeError("all elements of input should be between 0 and 1")

    def run(x, t):
        loss = -(t * x.log().clamp(min=-100) + (1 - t) * (1 - x).log().clamp(min=-100))
        if weight is not None:
            loss = loss * weight
        return _reduce(loss, reduction)

    return composite("BinaryCrossEntropyBackward0", run, input, target)


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    """torch's stable form: (1 - t) x + lw (log1p(exp(-|x|)) + relu(-x)), with
    lw = 1 + (pos_weight - 1) t."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _same_size(
        input,
        target,
        f"Target size ({target.shape}) must be the same as input size ({input.shape})",
    )

    def run(x, t):
        softplus_neg = (-x.abs()).exp().log1p() + (-x).relu()
        if pos_weight is not None:
            loss = (1 - t) * x + (1 + (pos_weight - 1) * t) * softplus_neg
        else:
            loss = (1 - t) * x + softplus_neg
        if weight is not None:
            loss = loss * weight
        return _reduce(loss, reduction)

    return composite("BinaryCrossEntropyWithLogitsBackward0", run, input, target)
