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
from .autograd.grad_mode import *  # noqa: F403
from .autograd.grad_mode import __all__ as _grad_mode_all
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
    "device",
    "Device",
    "get_default_device",
    "set_default_device",
    "UntypedStorage",
    "Size",
    "Tensor",
    "channels_last",
    "contiguous_format",
    "preserve_format",
    "from_dlpack",
    "fuse",
    "FusionError",
    "OutOfMemoryError",
    "cuda",
    "utils",
    "autograd",
    "nn",
    *_grad_mode_all,
    *_dtype_all,
    *_creation_all,
    *_elementwise_all,
    *_reduction_all,
    *_linalg_all,
    *_indexing_all,
    *_join_all,
    *_shape_all,
]

# torch's API breadth beyond the core ops: accelerator, special/sort/linalg/random ops,
# sparse COO, legacy constructors. Each name is imported by name, so readers and IDEs find
# it (tests/test_public_names.py); their Tensor methods are rows of _tensor_methods.py.
from . import accelerator, layouts, linalg, sparse, special  # noqa: E402
from .autograd import formulas_more as _formulas_more  # noqa: E402, F401  (registers)
from .layouts import (  # noqa: E402
    channels_last_3d,
    layout,
    memory_format,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from .legacy import *  # noqa: E402, F403
from .legacy import __all__ as _legacy_all  # noqa: E402
from .ops.elementwise import ge as greater_equal  # noqa: E402  (torch's other names)
from .ops.elementwise import gt as greater  # noqa: E402
from .ops.elementwise import le as less_equal  # noqa: E402
from .ops.elementwise import lt as less  # noqa: E402
from .ops.elementwise import ne as not_equal  # noqa: E402
from .ops.index_write import (  # noqa: E402
    argwhere,
    as_strided_scatter,
    bincount,
    diagonal_scatter,
    diff,
    fliplr,
    flipud,
    histc,
    histogram,
    index_add,
    index_copy,
    index_fill,
    index_reduce,
    masked_scatter,
    nonzero_static,
    put,
    repeat_interleave,
    rot90,
    scatter_reduce,
    select_scatter,
    slice_scatter,
    take_along_dim,
)
from .ops.matrix import (  # noqa: E402
    addbmm,
    addcdiv,
    addcmul,
    addmm,
    addmv,
    addr,
    baddbmm,
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    cross,
    det,
    diag,
    diag_embed,
    diagflat,
    dist,
    eigh,
    ger,
    inner,
    inverse,
    kron,
    logdet,
    matrix_exp,
    matrix_power,
    pinverse,
    qr,
    slogdet,
    solve,
    svd,
    trace,
    triangular_solve,
    tril,
    triu,
    vdot,
)
from .ops.meta import (  # noqa: E402
    is_nonzero,
    is_same_size,
    is_signed,
    is_storage,
    is_tensor,
    numel,
)
from .ops.pointwise import (  # noqa: E402
    bitwise_left_shift,
    bitwise_right_shift,
    frexp,
    hardshrink,
    prelu,
)
from .ops.random import (  # noqa: E402
    Generator,
    bernoulli,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    poisson,
    seed,
    set_rng_state,
)
from .ops.softmax import (  # noqa: E402
    log_softmax,
    softmax,
)
from .ops.sort import (  # noqa: E402
    argsort,
    cummax,
    cummin,
    kthvalue,
    median,
    mode,
    msort,
    nanmedian,
    nanquantile,
    quantile,
    searchsorted,
    sort,
    topk,
    unique,
    unique_consecutive,
)
from .ops.special import (  # noqa: E402
    absolute,
    acos,
    acosh,
    allclose,
    angle,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    copysign,
    cosh,
    deg2rad,
    digamma,
    equal,
    erf,
    erfc,
    erfinv,
    exp2,
    expm1,
    fix,
    float_power,
    fmax,
    fmin,
    frac,
    gcd,
    heaviside,
    hypot,
    i0,
    isclose,
    isneginf,
    isposinf,
    isreal,
    lcm,
    ldexp,
    lgamma,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logit,
    mvlgamma,
    nan_to_num,
    nextafter,
    polygamma,
    positive,
    rad2deg,
    sgn,
    signbit,
    sinc,
    sinh,
    tan,
    xlogy,
)
from .ops.statistics import (  # noqa: E402
    aminmax,
    corrcoef,
    cov,
    logcumsumexp,
    nanmean,
    nansum,
    renorm,
)
from .sparse import (  # noqa: E402
    sparse_coo_tensor,
)
from .typeinfo import finfo, iinfo  # noqa: E402

__all__ += ["accelerator", "layouts", "linalg", "sparse", "special", *_legacy_all]
# the names imported above
__all__ += [
    "absolute",
    "acos",
    "acosh",
    "addbmm",
    "addcdiv",
    "addcmul",
    "addmm",
    "addmv",
    "addr",
    "allclose",
    "aminmax",
    "angle",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "argsort",
    "argwhere",
    "as_strided_scatter",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "baddbmm",
    "bernoulli",
    "bincount",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "copysign",
    "corrcoef",
    "cosh",
    "cov",
    "cross",
    "cummax",
    "cummin",
    "default_generator",
    "deg2rad",
    "det",
    "diag",
    "diag_embed",
    "diagflat",
    "diagonal_scatter",
    "diff",
    "digamma",
    "dist",
    "eigh",
    "equal",
    "erf",
    "erfc",
    "erfinv",
    "exp2",
    "expm1",
    "fix",
    "fliplr",
    "flipud",
    "float_power",
    "fmax",
    "fmin",
    "frac",
    "frexp",
    "gcd",
    "Generator",
    "ger",
    "get_rng_state",
    "greater",
    "greater_equal",
    "hardshrink",
    "heaviside",
    "histc",
    "histogram",
    "hypot",
    "i0",
    "index_add",
    "index_copy",
    "index_fill",
    "index_reduce",
    "initial_seed",
    "inner",
    "inverse",
    "is_nonzero",
    "is_same_size",
    "is_signed",
    "is_storage",
    "is_tensor",
    "isclose",
    "isneginf",
    "isposinf",
    "isreal",
    "kron",
    "kthvalue",
    "layout",
    "memory_format",
    "channels_last_3d",
    "finfo",
    "iinfo",
    "lcm",
    "ldexp",
    "less",
    "less_equal",
    "lgamma",
    "log10",
    "log2",
    "log_softmax",
    "logaddexp",
    "logaddexp2",
    "logcumsumexp",
    "logdet",
    "logit",
    "manual_seed",
    "masked_scatter",
    "matrix_exp",
    "matrix_power",
    "median",
    "mode",
    "msort",
    "multinomial",
    "mvlgamma",
    "nan_to_num",
    "nanmean",
    "nanmedian",
    "nanquantile",
    "nansum",
    "nextafter",
    "nonzero_static",
    "normal",
    "not_equal",
    "numel",
    "pinverse",
    "poisson",
    "polygamma",
    "positive",
    "prelu",
    "put",
    "qr",
    "quantile",
    "rad2deg",
    "renorm",
    "repeat_interleave",
    "rot90",
    "scatter_reduce",
    "searchsorted",
    "seed",
    "select_scatter",
    "set_rng_state",
    "sgn",
    "signbit",
    "sinc",
    "sinh",
    "slice_scatter",
    "slogdet",
    "softmax",
    "solve",
    "sort",
    "sparse_coo",
    "sparse_coo_tensor",
    "sparse_csc",
    "sparse_csr",
    "strided",
    "svd",
    "take_along_dim",
    "tan",
    "topk",
    "trace",
    "triangular_solve",
    "tril",
    "triu",
    "unique",
    "unique_consecutive",
    "vdot",
    "xlogy",
]

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

__all__ += [
    "functional",
    "return_types",
    *_inplace_all,
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "block_diag",
    "broadcast_shapes",
    "broadcast_tensors",
    "cartesian_prod",
    "cdist",
    "chain_matmul",
    "meshgrid",
    "tensordot",
    "unravel_index",
]
