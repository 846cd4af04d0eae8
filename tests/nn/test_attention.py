"""Attention without torch: scaled_dot_product_attention against a numpy reference (masks,
is_causal, scale, fully masked rows), gradcheck, MultiheadAttention and transformer layers'
shapes, parameters and reprs (recorded from torch 2.13)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
import gpu_tensor.nn.functional as F
from gpu_tensor.autograd.gradcheck import gradcheck

RNG = np.random.default_rng(5)


def _reference(q, k, v, bias, scale):
    s = q @ np.swapaxes(k, -1, -2) * scale + bias
    m = s.max(-1, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    e = np.exp(s - m)
    tot = e.sum(-1, keepdims=True)
    return (e / np.where(tot == 0, 1, tot)) @ v


@pytest.mark.parametrize("case", ["plain", "causal", "bool", "float", "scale", "all_masked"])
def test_sdpa_matches_numpy(device, case):
    q, k, v = (RNG.standard_normal(s) for s in ((2, 4, 3), (2, 5, 3), (2, 5, 6)))
    bias, kw, scale = np.zeros((4, 5)), {}, 1 / np.sqrt(3)
    if case == "causal":
        bias = np.where(np.tril(np.ones((4, 5), bool)), 0, -np.inf)
        kw["is_causal"] = True
    elif case in ("bool", "all_masked"):
        mask = RNG.random((4, 5)) > 0.4
        if case == "all_masked":
            mask[1] = False
        bias = np.where(mask, 0, -np.inf)
        kw["attn_mask"] = gt.tensor(mask, device=device)
    elif case == "float":
        bias = RNG.standard_normal((4, 5))
        kw["attn_mask"] = gt.tensor(bias, device=device)
    elif case == "scale":
        scale = kw["scale"] = 0.25
    got = F.scaled_dot_product_attention(*(gt.tensor(a, device=device) for a in (q, k, v)), **kw)
    want = _reference(q, k, v, bias, scale)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10, atol=1e-12)
    if case == "all_masked":
        assert not np.isnan(got.cpu().numpy()).any()  # torch 2.13 cpu gives zeros there


def test_sdpa_gradcheck():
    q, k, v = (
        gt.tensor(RNG.standard_normal(s), requires_grad=True)
        for s in ((1, 3, 2), (1, 4, 2), (1, 4, 2))
    )
    mask = gt.tensor(RNG.standard_normal((3, 4)))
    assert gradcheck(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask, is_causal=True),
        (q, k, v),
        atol=1e-6,
    )


def test_sdpa_dropout_and_errors():
    q = gt.randn(2, 4, 8)
    gt.manual_seed(0)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    b = F.scaled_dot_product_attention(q, q, q)
    assert not bool(gt.allclose(a, b))
    with pytest.raises(RuntimeError, match="batch2"):
        F.scaled_dot_product_attention(q, q[..., :3], q)
    with pytest.raises(ValueError, match="dropout probability"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=2.0)


def test_multihead_attention_shapes_and_init():
    gt.manual_seed(0)
    m = gt.nn.MultiheadAttention(8, 2, batch_first=True)
    assert [n for n, _ in m.named_parameters()] == [
        "in_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert float(m.in_proj_bias.abs().sum()) == 0.0 == float(m.out_proj.bias.abs().sum())
    bound = np.sqrt(6 / (8 + 24))  # xavier_uniform_ on (24, 8)
    assert float(m.in_proj_weight.abs().max()) <= bound
    out, w = m(gt.randn(3, 4, 8), gt.randn(3, 5, 8), gt.randn(3, 5, 8))
    assert tuple(out.shape) == (3, 4, 8) and tuple(w.shape) == (3, 4, 5)
    np.testing.assert_allclose(w.sum(-1).detach().numpy(), np.ones((3, 4)), rtol=1e-5)
    sep = gt.nn.MultiheadAttention(8, 2, kdim=6, vdim=5)
    assert sep.in_proj_weight is None and tuple(sep.k_proj_weight.shape) == (8, 6)
    out, w = sep(gt.randn(4, 8), gt.randn(5, 6), gt.randn(5, 5), average_attn_weights=False)
    assert tuple(out.shape) == (4, 8) and tuple(w.shape) == (2, 4, 5)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        gt.nn.MultiheadAttention(7, 2)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(gt.randn(3, 4, 8), gt.randn(3, 4, 8), gt.randn(3, 4, 8), is_causal=True)


def test_key_padding_mask_hides_keys():
    gt.manual_seed(0)
    m = gt.nn.MultiheadAttention(4, 1)
    q, kv = gt.randn(2, 1, 4), gt.randn(3, 1, 4)
    pad = gt.tensor([[False, False, True]])
    _, w = m(q, kv, kv, key_padding_mask=pad)
    assert float(w[..., 2].abs().max()) == 0.0


# recorded from torch 2.13: repr(torch.nn.TransformerEncoder(
#     torch.nn.TransformerEncoderLayer(8, 2, 16), 2))
ENCODER_REPR = """TransformerEncoder(
  (layers): ModuleList(
    (0-1): 2 x TransformerEncoderLayer(
      (self_attn): MultiheadAttention(
        (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
      )
      (linear1): Linear(in_features=8, out_features=16, bias=True)
      (dropout): Dropout(p=0.1, inplace=False)
      (linear2): Linear(in_features=16, out_features=8, bias=True)
      (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
      (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
      (dropout1): Dropout(p=0.1, inplace=False)
      (dropout2): Dropout(p=0.1, inplace=False)
    )
  )
)"""


def test_transformer_reprs_and_shapes():
    enc = gt.nn.TransformerEncoder(gt.nn.TransformerEncoderLayer(8, 2, 16), 2)
    assert repr(enc) == ENCODER_REPR
    assert enc.layers[0].self_attn.in_proj_weight is not enc.layers[1].self_attn.in_proj_weight
    enc.eval()
    assert tuple(enc(gt.randn(5, 3, 8)).shape) == (5, 3, 8)
    dec = gt.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, norm_first=True)
    assert tuple(dec(gt.randn(3, 5, 8), gt.randn(3, 6, 8)).shape) == (3, 5, 8)
    mask = gt.nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.tolist() == [[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]
    model = gt.nn.Transformer(8, 2, 1, 1, 16)
    assert tuple(model(gt.randn(4, 2, 8), gt.randn(3, 2, 8), tgt_mask=mask).shape) == (3, 2, 8)


def test_fully_masked_rows_as_torch():
    # torch 2.13: MultiheadAttention's need_weights path (softmax) gives nan for a query
    # that may attend nothing; its need_weights=False path (sdpa) gives zeros
    gt.manual_seed(0)
    m = gt.nn.MultiheadAttention(4, 1)
    q, kv = gt.randn(2, 1, 4), gt.randn(3, 1, 4)
    blocked = gt.tensor([[True, True, True], [False, False, False]])
    out, w = m(q, kv, kv, attn_mask=blocked)
    assert bool(w[0, 0].isnan().all()) and not bool(w[0, 1].isnan().any())
    out, _ = m(q, kv, kv, attn_mask=blocked, need_weights=False)
    assert float(out[0].abs().sum()) == 0.0
