"""The layer classes of `gt.nn` (re-exported there)."""

from .activation import *  # noqa: F403
from .activation import __all__ as _activation
from .activation_more import *  # noqa: F403
from .activation_more import __all__ as _activation_more
from .attention import *  # noqa: F403
from .attention import __all__ as _attention
from .container import *  # noqa: F403
from .container import __all__ as _container
from .conv import *  # noqa: F403
from .conv import __all__ as _conv
from .conv_transpose import *  # noqa: F403
from .conv_transpose import __all__ as _conv_transpose
from .dropout import *  # noqa: F403
from .dropout import __all__ as _dropout
from .lazy import *  # noqa: F403
from .lazy import __all__ as _lazy
from .linear import *  # noqa: F403
from .linear import __all__ as _linear
from .loss import *  # noqa: F403
from .loss import __all__ as _loss
from .loss_extra import *  # noqa: F403
from .loss_extra import __all__ as _loss_extra
from .normalization import *  # noqa: F403
from .normalization import __all__ as _normalization
from .padding import *  # noqa: F403
from .padding import __all__ as _padding
from .params import *  # noqa: F403
from .params import __all__ as _params
from .pool1d import *  # noqa: F403
from .pool1d import __all__ as _pool1d
from .rnn import *  # noqa: F403
from .rnn import __all__ as _rnn
from .sample_norm import *  # noqa: F403
from .sample_norm import __all__ as _sample_norm
from .sampling import *  # noqa: F403
from .sampling import __all__ as _sampling
from .transformer import *  # noqa: F403
from .transformer import __all__ as _transformer

__all__ = [
    *_activation,
    *_activation_more,
    *_attention,
    *_container,
    *_conv,
    *_conv_transpose,
    *_dropout,
    *_lazy,
    *_linear,
    *_loss,
    *_loss_extra,
    *_normalization,
    *_padding,
    *_params,
    *_pool1d,
    *_rnn,
    *_sample_norm,
    *_sampling,
    *_transformer,
]
