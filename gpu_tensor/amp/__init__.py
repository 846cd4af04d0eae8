"""`gt.amp`: mixed precision, torch.amp's names and meanings.

`autocast` runs a region's ops in bfloat16/float16 following torch 2.13's per-op policies
(policy.py; the casts are made per op by cast.py, hung off the interception word of
gpu_tensor/_modes.py). `GradScaler` scales the loss and skips steps whose gradients
overflowed, without syncing the host (grad_scaler.py).
"""

from .. import _modes
from . import cast as _cast
from .autocast_mode import autocast, custom_bwd, custom_fwd
from .grad_scaler import GradScaler, OptState
from .state import is_autocast_available

__all__ = [
    "autocast",
    "custom_fwd",
    "custom_bwd",
    "GradScaler",
    "OptState",
    "is_autocast_available",
]

_modes.register(_modes.AUTOCAST, _cast.handle)
