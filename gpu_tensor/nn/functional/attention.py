"""scaled_dot_product_attention, and the masked softmax it (and MultiheadAttention) share.

The softmax over the attention scores runs as generated kernels on cuda: one fused kernel
scales the scores and adds the mask, a row max (a reduction), one fused kernel takes
exp(logit - max), a row sum, and one fused kernel divides (and zeroes the rows that are
masked out entirely, as torch 2.13's CPU kernel does). Each fused piece has a fused backward.
"""

from __future__ import annotations

import math

import gpu_tensor as gt
from gpu_tensor.fusion import fuse

from .basic import dropout as _dropout

__all__ = ["scaled_dot_product_attention", "attention_softmax", "mask_to_bias"]


@fuse
def _logits(scores, bias, scale):
    return scores * scale + bias


@fuse
def _scaled(scores, scale):
    return scores * scale


@fuse
def _shifted_exp(logits, row_max):
    # a row with nothing allowed has max -inf: shift it by 0 (its exps are all 0)
    return (logits - gt.where(row_max == -math.inf, 0.0, row_max)).exp()


@fuse
def _divide(e, total):
    return e / total


@fuse
def _normalise(e, total):
    # a fully masked row has total 0: its weights are 0, not 0/0
    return e / (total + (total == 0))


def mask_to_bias(mask, dtype, allowed_when_true=True):
    """A boolean mask as an additive float mask (0 where attention is allowed, -inf where
    not); a float mask is returned as it is, cast to `dtype`."""
    if mask is None:
        return None
    if mask.dtype is gt.bool:
        allowed = mask if allowed_when_true else mask.logical_not()
        return gt.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(
            allowed.logical_not(), -math.inf
        )
    return mask.to(dtype)


def attention_softmax(scores, bias, scale, masked_rows="zero"):
    """softmax(scores * scale + bias) over the last dim. A row with no allowed entry gives
    zeros (masked_rows="zero", torch's scaled_dot_product_attention) or nan ("nan", torch's
    softmax, which MultiheadAttention's need_weights path uses)."""
    logits = _scaled(scores, scale) if bias is None else _logits(scores, bias, scale)
    row_max = logits.detach().amax(-1, keepdim=True)  # a constant for autograd (shift-invariant)
    e = _shifted_exp(logits, row_max)
    return (_normalise if masked_rows == "zero" else _divide)(e, e.sum(-1, keepdim=True))


def _causal_bias(L, S, dtype, device):
    keep = gt.ones((L, S), dtype=gt.bool, device=device).tril()
    return mask_to_bias(keep, dtype)


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """softmax(Q K^T * scale + mask) V over (..., L, E) queries and (..., S, E) keys.
    attn_mask: bool (True = may attend) or float (added), broadcast to (..., L, S);
    is_causal: query i attends keys 0..i (top-left aligned when L != S); scale defaults to
    1/sqrt(E); dropout_p drops attention weights (always applied, as torch's function)."""
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError(
            "scaled_dot_product_attention: query, key and value must be at least 2-D"
        )
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"{[*query.shape[:-2]][-1:] + [query.shape[-1]]} but got: "
            f"{[*key.shape[:-2]][-1:] + [key.shape[-1]]}."
        )
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: key and value must have the same "
            f"sequence length, got {key.shape[-2]} and {value.shape[-2]}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        if query.shape[-3] % key.shape[-3]:
            raise RuntimeError(
                "scaled_dot_product_attention: number of heads in key and value "
                "must divide the number of heads in query"
            )
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    bias = mask_to_bias(attn_mask, query.dtype)
    if is_causal:
        causal = _causal_bias(L, S, query.dtype, query.device)
        bias = causal if bias is None else bias + causal
    weights = attention_softmax(query.matmul(key.transpose(-2, -1)), bias, scale)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, True)
    return weights.matmul(value)
