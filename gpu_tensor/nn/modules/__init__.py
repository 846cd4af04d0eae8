"""The layer classes of `gt.nn` (re-exported there)."""

from .activation import *  # noqa: F403
from .activation import __all__ as _activation
from .attention import *  # noqa: F403
from .attention import __all__ as _attention
from .container import *  # noqa: F403
from .container import __all__ as _container
from .conv import *  # noqa: F403
from .conv import __all__ as _conv
from .dropout import *  # noqa: F403
from .dropout import __all__ as _dropout
from .linear import *  # noqa: F403
from .linear import __all__ as _linear
from .loss import *  # noqa: F403
from .loss import __all__ as _loss
from .normalization import *  # noqa: F403
from .normalization import __all__ as _normalization
from .rnn import *  # noqa: F403
from .rnn import __all__ as _rnn
from .transformer import *  # noqa: F403
from .transformer import __all__ as _transformer

__all__ = [*_activation, *_container, *_conv, *_dropout, *_linear, *_loss, *_normalization, *_rnn, *_attention,
           *_transformer]
