"""torch 2.13's autocast op lists, per device type: which ops autocast touches, and how.

Taken from the 2.13 header `ATen/autocast_mode.h` (the CUDA lists) and the AutocastCPU
registrations (`torch._C._dispatch_get_registrations_for_dispatch_key`), not from the docs,
which lag the header (rms_norm, logsumexp, einsum and vdot are missing there). Names are
aten's without the overload; `key()` maps gpu_tensor's public op names onto them.

Policies:
- LOWER: cast every eligible floating input to the region's dtype (bf16/fp16).
- FP32: cast eligible inputs to float32.
- FP32_OPT_DTYPE: ops with an optional dtype= (softmax, sum, cumsum, ...): when the caller
  gave none and the first input is eligible, compute in float32.
- FP32_APPEND_DTYPE: norm, redispatched with dtype=float32 (computed in float32).
- PROMOTE: the widest floating type among the eligible inputs (fp32 wins).
- BANNED: binary_cross_entropy under cuda autocast raises (its gradient is unsafe in fp16).
"""

from __future__ import annotations

__all__ = [
    "LOWER",
    "FP32",
    "FP32_OPT_DTYPE",
    "FP32_APPEND_DTYPE",
    "PROMOTE",
    "BANNED",
    "POLICIES",
    "BANNED_MESSAGE",
    "key",
    "policy",
]

LOWER, FP32, FP32_OPT_DTYPE, FP32_APPEND_DTYPE, PROMOTE, BANNED = (
    "lower_precision_fp",
    "fp32",
    "fp32_set_opt_dtype",
    "fp32_append_dtype",
    "promote",
    "banned",
)

_UPSAMPLE = (
    "upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d _upsample_nearest_exact2d "
    "upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d "
    "_upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d _upsample_bicubic2d_aa"
)

_CUDA = {
    LOWER: (
        "_convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d "
        "conv_transpose3d convolution prelu addmm addmv addr matmul einsum mm mv "
        "linalg_vecdot linear addbmm baddbmm bmm chain_matmul linalg_multi_dot "
        "_thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell "
        "rnn_relu_cell _scaled_dot_product_flash_attention scaled_dot_product_attention "
        "cudnn_convolution cudnn_convolution_transpose"
    ),
    FP32: (
        "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow "
        "softplus layer_norm native_layer_norm rms_norm group_norm frobenius_norm "
        "nuclear_norm cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss "
        "nll_loss2d hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss "
        "margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss "
        "multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm "
        "logsumexp " + _UPSAMPLE
    ),
    FP32_OPT_DTYPE: (
        "prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum"
    ),
    FP32_APPEND_DTYPE: "norm",
    PROMOTE: (
        "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add"
    ),
    BANNED: "binary_cross_entropy",
}

_CPU = {
    LOWER: (
        "conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm addbmm linear _convolution "
        "matmul conv_tbc mkldnn_rnn_layer conv_transpose1d conv_transpose2d conv_transpose3d "
        "prelu scaled_dot_product_attention _native_multi_head_attention _addmm_activation"
    ),
    FP32: (
        "avg_pool3d binary_cross_entropy grid_sampler polar prod quantile nanquantile stft "
        "cdist trace view_as_complex cholesky cholesky_inverse cholesky_solve inverse "
        "lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d max_unpool3d "
        "adaptive_avg_pool3d reflection_pad1d reflection_pad2d replication_pad1d "
        "replication_pad2d replication_pad3d mse_loss cosine_embedding_loss nll_loss "
        "nll_loss2d hinge_embedding_loss poisson_nll_loss smooth_l1_loss cross_entropy_loss "
        "l1_loss huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss "
        "multi_margin_loss ctc_loss kl_div multilabel_margin_loss "
        "binary_cross_entropy_with_logits fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn "
        "fft_ifftn fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft "
        "fft_ihfft linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals "
        "linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product "
        "linalg_tensorinv linalg_tensorsolve fake_quantize_per_tensor_affine geqrf "
        "_lu_with_info qr svd triangular_solve fractional_max_pool2d fractional_max_pool3d "
        "adaptive_max_pool3d multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex "
        "linalg_svd linalg_eig linalg_eigh linalg_lstsq linalg_inv_ex "
        "_grid_sampler_2d_cpu_fallback grid_sampler_2d grid_sampler_3d"
    ),
    PROMOTE: "stack cat index_copy",
}


def _table(lists: dict) -> dict:
    out = {}
    for pol, names in lists.items():
        for name in names.split():
            assert name not in out, name  # one policy per op
            out[name] = pol
    return out


POLICIES = {"cuda": _table(_CUDA), "cpu": _table(_CPU)}

# gpu_tensor's public names that are not aten's. cross_entropy has no cuda entry of its
# own in torch: it decomposes into log_softmax (fp32) and nll_loss (fp32), so as one op it
# takes fp32 there; on cpu it is cross_entropy_loss (fp32).
_ALIASES = {
    "cross_entropy": "cross_entropy_loss",
    "__matmul__": "matmul",
    "__rmatmul__": "matmul",
    "__pow__": "pow",
    "__rpow__": "pow",
    "interpolate": "upsample_nearest2d",
}
POLICIES["cuda"]["cross_entropy_loss"] = FP32

BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_"
    "logits\nor torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
    "BCEWithLogits are\nsafe to autocast."
)


def key(name: str) -> str | None:
    """aten's name for the public op `name` ('linalg.vector_norm' -> 'linalg_vector_norm')."""
    if name in _ALIASES:
        return _ALIASES[name]
    return name.replace(".", "_")


def policy(device_type: str, name: str) -> str | None:
    """The autocast policy of op `name` on `device_type`, or None: autocast leaves it alone."""
    k = key(name)
    return None if k is None else POLICIES[device_type].get(k)
