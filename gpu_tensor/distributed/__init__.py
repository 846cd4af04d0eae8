"""gpu_tensor.distributed: torch.distributed's API over MPI (cpu tensors, launch, CI) and
NCCL (cuda tensors). Launch with `gpu-tensor launch -n N script.py`.

Importing this package imports neither MPI nor cupy; init_process_group() loads them.
"""

from . import _mpi
from .collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from .gradients import average_gradients
from .group import (
    Backend,
    GroupMember,
    ProcessGroup,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
    new_group,
)
from .objects import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from .p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
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
    "is_initialized",
    "init_process_group",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "get_backend",
    "new_group",
    "get_global_rank",
    "get_process_group_ranks",
    "Backend",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "DistError",
    "DistBackendError",
    "default_pg_timeout",
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all_single",
    "all_to_all",
    "gather",
    "scatter",
    "barrier",
    "send",
    "recv",
    "isend",
    "irecv",
    "P2POp",
    "batch_isend_irecv",
    "all_gather_object",
    "broadcast_object_list",
    "gather_object",
    "scatter_object_list",
    "average_gradients",
    "save_rank_snapshot",
]
