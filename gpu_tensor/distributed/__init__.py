"""gpu_tensor.distributed: torch.distributed's API over MPI (cpu tensors, launch, CI) and
NCCL (cuda tensors). Launch with `gpu-tensor launch -n N script.py`.

Importing this package imports neither MPI nor cupy; init_process_group() loads them.
"""

from . import _mpi
from .collectives import *  # noqa: F403
from .collectives import __all__ as _collectives
from .gradients import average_gradients
from .group import *  # noqa: F403
from .group import __all__ as _group
from .objects import *  # noqa: F403
from .objects import __all__ as _objects
from .p2p import *  # noqa: F403
from .p2p import __all__ as _p2p
from .reduce_op import ReduceOp
from .snapshots import save_rank_snapshot
from .work import DistBackendError, DistError, Work

# isort: off
# gt.nn.parallel (DistributedDataParallel) is built on this package: imported last, as
# torch makes torch.nn.parallel available with torch.distributed
from ..nn import parallel as _parallel  # noqa: E402,F401
# isort: on


def is_available() -> bool:
    """True when the distributed package can run here (MPI loads)."""
    return _mpi.available()


def is_mpi_available() -> bool:
    return _mpi.available()


def is_nccl_available() -> bool:
    """True when an NCCL library loads (through CuPy); a collective also needs a GPU."""
    from .nccl_engine import library_available

    return library_available()


__all__ = [
    "is_available",
    "is_mpi_available",
    "is_nccl_available",
    *_group,
    "ReduceOp",
    "Work",
    "DistError",
    "DistBackendError",
    *_collectives,
    *_p2p,
    *_objects,
    "average_gradients",
    "save_rank_snapshot",
]
