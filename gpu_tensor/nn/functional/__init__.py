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
from .attention import scaled_dot_product_attention
from .basic import dropout, embedding, layer_norm, linear, normalize, one_hot, pad
from .conv import adaptive_avg_pool2d, avg_pool2d, conv2d, max_pool2d
from .loss import (
                         binary_cross_entropy,
                         binary_cross_entropy_with_logits,
                         cross_entropy,
                         l1_loss,
                         mse_loss,
                         nll_loss,
                         smooth_l1_loss,
)
from .multihead import multi_head_attention_forward

__all__ = [
    "relu", "relu6", "leaky_relu", "elu", "celu", "gelu", "silu", "sigmoid", "tanh",
    "softplus", "hardtanh", "softmax", "log_softmax",
    "dropout", "linear", "layer_norm", "embedding", "one_hot", "pad", "normalize",
    "mse_loss", "l1_loss", "smooth_l1_loss", "nll_loss", "cross_entropy",
    "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
    "scaled_dot_product_attention", "multi_head_attention_forward",
]
