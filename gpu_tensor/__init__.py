"""gpu_tensor: a GPU-first tensor runtime on CuPy with PyTorch's tensor contract.

This module only gathers the public surface; every name lives in a submodule.
Importing it never imports cupy (a subprocess test checks that).
"""

# `gpu_tensor.device` stays the module (it is callable: gt.device("cuda:0")); binding the
# Device factory over it would break `from gpu_tensor import device` elsewhere.
from . import (
    _env,  # noqa: F401  (first: the environment is read in one place)
    _tensor_methods,  # noqa: F401  (completes Tensor: the one method table)
    autograd,
    cuda,
    device,
    nn,
    utils,
)
from ._interop import from_dlpack
from ._tensor import Size, Tensor, channels_last, contiguous_format, preserve_format
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .creation import *  # noqa: F403
from .creation import __all__ as _creation_all
from .device import Device, get_default_device, set_default_device
from .dtype import *  # noqa: F403
from .dtype import __all__ as _dtype_all
from .fusion import FusionError, fuse
from .memory.oom import OutOfMemoryError
from .ops.elementwise import *  # noqa: F403
from .ops.elementwise import __all__ as _elementwise_all
from .ops.indexing import *  # noqa: F403
from .ops.indexing import __all__ as _indexing_all
from .ops.join import *  # noqa: F403
from .ops.join import __all__ as _join_all
from .ops.linalg import *  # noqa: F403
from .ops.linalg import __all__ as _linalg_all
from .ops.reduction import *  # noqa: F403
from .ops.reduction import __all__ as _reduction_all
from .ops.shape import *  # noqa: F403
from .ops.shape import __all__ as _shape_all
from .storage import UntypedStorage

__all__ = [
    "device", "Device", "get_default_device", "set_default_device", "UntypedStorage",
    "Size", "Tensor", "channels_last", "contiguous_format", "preserve_format",
    "from_dlpack", "fuse", "FusionError", "OutOfMemoryError", "cuda", "utils",
    "autograd", "nn", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    *_dtype_all, *_creation_all, *_elementwise_all, *_reduction_all, *_linalg_all,
    *_indexing_all, *_join_all, *_shape_all,
]

# torch's API breadth beyond the core ops: accelerator, special/sort/linalg/random ops,
# sparse COO, legacy constructors (ops/_more.py binds the methods)
from . import accelerator, layouts, linalg, sparse, special  # noqa: E402
from .autograd import formulas_more as _formulas_more  # noqa: E402, F401  (registers)
from .legacy import *  # noqa: E402, F403
from .legacy import __all__ as _legacy_all  # noqa: E402
from .ops._more import *  # noqa: E402, F403
from .ops._more import __all__ as _more_all  # noqa: E402

__all__ += ["accelerator", "layouts", "linalg", "sparse", "special", *_more_all, *_legacy_all]

from . import (  # noqa: E402  (built on the ops above)
    distributed,  # noqa: F401  (gt.distributed, as torch.distributed)
    optim,  # nn's optimizers
)

__all__ += ["optim"]

from . import profiler  # noqa: E402  (gt.profiler; registers its modes handler)
from .autograd import profiler as _autograd_profiler  # noqa: E402, F401  (gt.autograd.profiler)

__all__ += ["profiler"]

# mixed precision (torch.amp): autocast's per-op policies and the sync-free GradScaler
from . import amp, cpu  # noqa: E402
from .amp.autocast_mode import autocast  # noqa: E402
from .amp.state import *  # noqa: E402, F403
from .amp.state import __all__ as _amp_state_all  # noqa: E402
from .cuda import amp as _cuda_amp  # noqa: E402, F401  (binds gt.cuda.amp)

__all__ += ["amp", "cpu", "autocast", *_amp_state_all]

# quantized tensors (torch.quantize_per_tensor & co) and torch.ao.quantization
from . import ao, quantization, quantized  # noqa: E402
from .quantized import *  # noqa: E402, F403
from .quantized import __all__ as _quantized_all  # noqa: E402

__all__ += ["ao", "quantization", "quantized", *_quantized_all]

# issue 28: torch's checkpoint format (gt.save / gt.load)
from . import serialization  # noqa: E402
from .serialization import load, save  # noqa: E402

__all__ += ["serialization", "save", "load"]

# issue 28: torch.return_types' named tuples, torch.functional, torch.sin_-style functions
from . import functional, return_types  # noqa: E402
from .functional import (  # noqa: E402  (torch.meshgrid & co live in torch/functional.py)
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    cartesian_prod,
    cdist,
    chain_matmul,
    meshgrid,
    tensordot,
    unravel_index,
)
from .inplace_functions import *  # noqa: E402, F403
from .inplace_functions import __all__ as _inplace_all  # noqa: E402

__all__ += ["functional", "return_types", *_inplace_all, "atleast_1d", "atleast_2d",
            "atleast_3d", "block_diag", "broadcast_shapes", "broadcast_tensors",
            "cartesian_prod", "cdist", "chain_matmul", "meshgrid", "tensordot", "unravel_index"]
