"""The remaining losses (kl_div, huber, margin and embedding losses, Poisson and Gaussian
NLL) and the distances they use (cosine_similarity, pairwise_distance), with torch's
formulas, arguments and reductions."""

from __future__ import annotations

import math
import warnings

import gpu_tensor as gt
from gpu_tensor.autograd.composite import composite

from .loss import _check_reduction, _reduce, legacy_reduction

__all__ = [
    "kl_div",
    "huber_loss",
    "cosine_similarity",
    "pairwise_distance",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
]


def _reduction(size_average, reduce, reduction):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return reduction


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input) (input: log-probabilities); 'batchmean' divides the sum
    by the batch size, 'mean' by every element (with torch's warning)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the "
            "support size.'batchmean' divides only by the batch size, and aligns with "
            "the KL div math definition.'mean' will be changed to behave the same as "
            "'batchmean' in the next major release.",
            UserWarning,
            stacklevel=2,
        )
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = gt.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    _check_reduction(reduction)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")

    def run(x, t):
        d = (x - t).abs()
        loss = gt.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
        if weight is not None:
            loss = loss * weight
        return _reduce(loss, reduction)

    return composite("HuberLossBackward0", run, input, target)


def _relu(t):
    """max(t, 0), recorded as torch's clamp_min(0) (ClampMinBackward0)."""
    return composite("ClampMinBackward0", lambda x: x.clamp(min=0), t)


def _clamped(t, eps):
    """max(t, eps) whose gradient is t's (torch clamps these under no_grad)."""
    return t + (t.clamp(min=eps) - t).detach()


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / max(||x1|| ||x2||, eps) along dim (each norm clamped at eps, as torch)."""
    n1, n2 = (_clamped(x.norm(2, dim, keepdim=True), eps) for x in (x1, x2))
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


def cosine_embedding_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim:
        raise RuntimeError(
            f"cosine_embedding_loss : Inputs must have same dimension, got "
            f"{input1.ndim} and {input2.ndim}"
        )
    eps = 1e-12  # torch's EPSILON for this loss
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = prod / mag.sqrt()
    zeros = gt.zeros_like(cos)
    pos = gt.where(target == 1, 1 - cos, zeros)
    neg = gt.where(target == -1, (cos - margin).clamp(min=0), zeros)
    return _reduce(pos + neg, reduction)


def margin_ranking_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    """max(0, -y (x1 - x2) + margin)."""
    reduction = _reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same "
            f"dimension but got sizes: input1: {input1.shape}, input2: "
            f"{input2.shape}, target: {target.shape} "
        )
    return _reduce(_relu(-target * (input1 - input2) + margin), reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """max(d(a, p) - d(a, n) + margin, 0), d = pairwise_distance; swap: d(a, n) replaced by
    min(d(a, n), d(p, n))."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(
            f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
        )
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have "
            f"the same number of dimensions, but got: anchor {anchor.ndim}D, "
            f"positive {positive.ndim}D, and negative {negative.ndim}D inputs"
        )
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = gt.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(_relu(d_ap - d_an + margin), reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """x where y = 1, max(0, margin - x) where y = -1."""
    reduction = _reduction(size_average, reduce, reduction)
    zeros = gt.zeros_like(input)
    hinge = gt.where(target != 1, (margin - input).clamp(min=0), zeros)
    plain = gt.where(target != -1, input, zeros)
    return _reduce(hinge + plain, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x))."""
    reduction = _reduction(size_average, reduce, reduction)
    z = -target * input
    return _reduce(z.clamp(min=0) + (-z.abs()).exp().log1p(), reduction)


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """exp(input) - target input (log_input) or input - target log(input + eps); full adds
    Stirling's term for target > 1."""
    reduction = _reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + gt.where(target > 1, stirling, gt.zeros_like(stirling))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log max(var, eps) + (input - target)^2 / max(var, eps)) (+ 0.5 log 2 pi)."""
    _check_reduction(reduction)
    if isinstance(var, (int, float)):
        var = gt.full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = _clamped(var, eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
