"""`gt.nn.functional`: torch.nn.functional's names, arguments and defaults.

Every function is composed from gpu_tensor's public, differentiable ops, so autograd, every
device and every dtype come from the ops themselves; no function here has a backward
formula of its own. `import gpu_tensor.nn.functional as F` reads like torch code.
"""

from .activation import (
    celu,
    elu,
    gelu,
    hardtanh,
    leaky_relu,
    log_softmax,
    relu,
    relu6,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from .activation_more import (
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    logsigmoid,
    mish,
    prelu,
    rrelu,
    selu,
    softmin,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
)
from .attention import scaled_dot_product_attention
from .basic import dropout, embedding, layer_norm, linear, normalize, one_hot, pad
from .conv import adaptive_avg_pool2d, avg_pool2d, conv2d, max_pool2d
from .conv_transpose import conv1d, conv_transpose1d, conv_transpose2d
from .ctc import ctc_loss
from .feature_dropout import alpha_dropout, dropout1d, dropout2d, dropout3d
from .loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .loss_extra import (
    cosine_embedding_loss,
    cosine_similarity,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    margin_ranking_loss,
    pairwise_distance,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .multihead import multi_head_attention_forward
from .normalization import batch_norm, group_norm, instance_norm, rms_norm
from .pool1d import (
    adaptive_avg_pool1d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    max_pool1d,
)
from .recurrent import gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell
from .sampling import interpolate, pixel_shuffle, pixel_unshuffle, upsample

__all__ = [
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "celu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "softplus",
    "hardtanh",
    "softmax",
    "log_softmax",
    "dropout",
    "linear",
    "layer_norm",
    "embedding",
    "one_hot",
    "pad",
    "normalize",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    "conv1d",
    "conv_transpose1d",
    "conv_transpose2d",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
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
    "ctc_loss",
    "batch_norm",
    "instance_norm",
    "group_norm",
    "rms_norm",
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "lstm_cell",
    "gru_cell",
    "interpolate",
    "upsample",
    "pixel_shuffle",
    "pixel_unshuffle",
    "selu",
    "hardsigmoid",
    "hardswish",
    "mish",
    "logsigmoid",
    "softsign",
    "tanhshrink",
    "softshrink",
    "hardshrink",
    "threshold",
    "glu",
    "prelu",
    "rrelu",
    "softmin",
    "max_pool1d",
    "avg_pool1d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
]

# Composite ops seen as one op each by the modes word (gpu_tensor/_modes.py), under torch's
# names though composed from other ops here: the profiler shows aten::linear over its matmul
# as torch does, autocast casts linear's inputs once. The word is read once at the entry and
# the ops inside run with the handled bits masked.
from ..._modes import entry as _entry  # noqa: E402

# The recurrent cells stay plain: torch keeps them in torch._VF, not in F, so they are no
# entry point of torch's either.
_PLAIN = ("rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell")
for _name in __all__:
    if _name in _PLAIN:
        continue
    globals()[_name] = _entry(_name, globals()[_name])
del _name
