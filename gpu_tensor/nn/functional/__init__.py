"""`gt.nn.functional`: torch.nn.functional's names, arguments and defaults.

Every function is composed from gpu_tensor's public, differentiable ops, so autograd, every
device and every dtype come from the ops themselves; no function here has a backward
formula of its own. `import gpu_tensor.nn.functional as F` reads like torch code.
"""

from .activation import *  # noqa: F403
from .activation import __all__ as _activation
from .activation_more import *  # noqa: F403
from .activation_more import __all__ as _activation_more
from .attention import scaled_dot_product_attention
from .basic import *  # noqa: F403
from .basic import __all__ as _basic
from .conv import *  # noqa: F403
from .conv import __all__ as _conv
from .conv_transpose import *  # noqa: F403
from .conv_transpose import __all__ as _conv_transpose
from .ctc import *  # noqa: F403
from .ctc import __all__ as _ctc
from .feature_dropout import alpha_dropout, dropout1d, dropout2d, dropout3d
from .loss import *  # noqa: F403
from .loss import __all__ as _loss
from .loss_extra import *  # noqa: F403
from .loss_extra import __all__ as _loss_extra
from .multihead import *  # noqa: F403
from .multihead import __all__ as _multihead
from .normalization import *  # noqa: F403
from .normalization import __all__ as _normalization
from .pool1d import *  # noqa: F403
from .pool1d import __all__ as _pool1d
from .recurrent import gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell
from .sampling import *  # noqa: F403
from .sampling import __all__ as _sampling

__all__ = [
    *_activation,
    *_activation_more,
    *_basic,
    *_conv,
    *_conv_transpose,
    *_ctc,
    *_loss,
    *_loss_extra,
    *_multihead,
    *_normalization,
    *_pool1d,
    *_sampling,
    "scaled_dot_product_attention",
    "alpha_dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "gru_cell",
    "lstm_cell",
    "rnn_relu_cell",
    "rnn_tanh_cell",
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
