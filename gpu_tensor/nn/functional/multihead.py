"""multi_head_attention_forward: what nn.MultiheadAttention computes, in torch's
(sequence, batch, embed) layout and with torch's mask conventions (for these masks True
means *masked out*, the opposite of scaled_dot_product_attention's boolean mask)."""

from __future__ import annotations

import math

import gpu_tensor as gt

from .attention import attention_softmax, mask_to_bias, scaled_dot_product_attention
from .basic import dropout, linear
from .basic import pad as _pad

__all__ = ["multi_head_attention_forward"]


def _project(query, key, value, in_proj_weight, in_proj_bias, q_w, k_w, v_w):
    if in_proj_weight is not None:
        q_w, k_w, v_w = in_proj_weight.chunk(3)
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    return linear(query, q_w, b_q), linear(key, k_w, b_k), linear(value, v_w, b_v)


def _check_attn_mask(attn_mask, tgt_len, src_len, bsz, num_heads):
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(
                f"The shape of the 2D attn_mask is {attn_mask.shape}, but should "
                f"be {(tgt_len, src_len)}."
            )
        return attn_mask.unsqueeze(0)
    if attn_mask.ndim == 3:
        if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(
                f"The shape of the 3D attn_mask is {attn_mask.shape}, but should "
                f"be {(bsz * num_heads, tgt_len, src_len)}."
            )
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
):
    if static_k is not None or static_v is not None:
        raise NotImplementedError(
            "multi_head_attention_forward: static_k/static_v are not "
            "supported in gpu_tensor; project the keys yourself"
        )
    batched = query.ndim == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the "
            "Transformer module method `generate_square_subsequent_mask` to "
            "create this mask."
        )
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match "
                f"value's {value.shape[:2]}"
            )
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    kpm = mask_to_bias(key_padding_mask, query.dtype, allowed_when_true=False)
    mask = mask_to_bias(attn_mask, query.dtype, allowed_when_true=False)
    q, k, v = _project(
        query,
        key,
        value,
        None if use_separate_proj_weight else in_proj_weight,
        in_proj_bias,
        q_proj_weight,
        k_proj_weight,
        v_proj_weight,
    )
    if mask is not None:
        mask = _check_attn_mask(mask, tgt_len, src_len, bsz, num_heads)
    if (bias_k is None) != (bias_v is None):
        raise AssertionError(
            "bias_k is set but bias_v is None"
            if bias_v is None
            else "bias_v is set but bias_k is None"
        )
    if bias_k is not None:
        k = gt.cat([k, bias_k.repeat(1, bsz, 1)])
        v = gt.cat([v, bias_v.repeat(1, bsz, 1)])
        mask = None if mask is None else _pad(mask, (0, 1))
        kpm = None if kpm is None else _pad(kpm, (0, 1))
    # (seq, batch, embed) -> (batch * heads, seq, head_dim), torch's head layout
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zeros = gt.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = gt.cat([k, zeros], 1), gt.cat([v, zeros], 1)
        mask = None if mask is None else _pad(mask, (0, 1))
        kpm = None if kpm is None else _pad(kpm, (0, 1))
    src_len = k.shape[1]
    if kpm is not None:
        if tuple(kpm.shape) != (bsz, src_len):
            raise AssertionError(
                f"expecting key_padding_mask shape of {(bsz, src_len)}, but got {kpm.shape}"
            )
        kpm = (
            kpm.reshape(bsz, 1, 1, src_len)
            .expand(-1, num_heads, -1, -1)
            .reshape(bsz * num_heads, 1, src_len)
        )
        mask = kpm if mask is None else mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        weights = attention_softmax(
            q.matmul(k.transpose(-2, -1)), mask, 1.0 / math.sqrt(head_dim), masked_rows="nan"
        )
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = weights.matmul(v)
    else:
        weights = None
        qh = q.reshape(bsz, num_heads, tgt_len, head_dim)
        kh = k.reshape(bsz, num_heads, src_len, head_dim)
        vh = v.reshape(bsz, num_heads, src_len, head_dim)
        if mask is not None:
            mask = (
                mask.unsqueeze(0)
                if mask.shape[0] == 1
                else mask.reshape(bsz, num_heads, -1, src_len)
            )
        out = scaled_dot_product_attention(qh, kh, vh, mask, dropout_p)
        out = out.reshape(bsz * num_heads, tgt_len, head_dim)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if weights is not None:
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
