"""Process groups: setup, the world group, new_group, and which engine serves each device.

The world is MPI's COMM_WORLD: under `mpiexec -n N` rank and size come from MPI (a plain
`python` run is a world of one). A group routes by device type, torch's
"cpu:gloo,cuda:nccl" form with MPI in gloo's place: cpu -> MPI; cuda -> NCCL where it is
available on a real GPU, else MPI with the tensors staged through pinned host memory.
"""

from __future__ import annotations

import datetime
import os
import sys

from . import _mpi
from .mpi_engine import MpiEngine

__all__ = [
    "Backend",
    "GroupMember",
    "ProcessGroup",
    "init_process_group",
    "destroy_process_group",
    "is_initialized",
    "get_rank",
    "get_world_size",
    "get_backend",
    "new_group",
    "get_global_rank",
    "get_process_group_ranks",
    "default_pg_timeout",
]

default_pg_timeout = datetime.timedelta(minutes=30)  # torch's default for non-NCCL groups
_NCCL_TIMEOUT = datetime.timedelta(minutes=10)  # torch's default for NCCL groups


class Backend(str):
    """Backend names, as torch.distributed.Backend (a str subclass)."""

    MPI = "mpi"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name: str):
        return str.__new__(cls, _parse(name)[0])


def _parse(backend) -> tuple[str, dict]:
    """'mpi' | 'nccl' | 'cpu:mpi,cuda:nccl' -> (canonical name, {device type: engine})."""
    if backend is None:
        from .nccl_engine import usable as nccl_usable

        if nccl_usable():
            return "cpu:mpi,cuda:nccl", {"cpu": "mpi", "cuda": "nccl"}
        return "mpi", {"cpu": "mpi", "cuda": "mpi"}
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a str such as 'mpi', not {type(backend).__name__}")
    name = backend.strip().lower()
    if name == "mpi":
        return name, {"cpu": "mpi", "cuda": "mpi"}
    if name == "nccl":
        return name, {"cuda": "nccl"}
    if ":" in name:
        table = {}
        for part in name.split(","):
            dev, _, eng = part.strip().partition(":")
            if dev not in ("cpu", "cuda") or eng not in ("mpi", "nccl") or dev in table:
                raise ValueError(
                    f"invalid backend string {backend!r}: expected entries like "
                    "'cpu:mpi,cuda:nccl' (device cpu or cuda, engine mpi or nccl)"
                )
            if dev == "cpu" and eng == "nccl":
                raise ValueError("NCCL cannot serve cpu tensors; use 'cpu:mpi,cuda:nccl'")
            table[dev] = eng
        return ",".join(f"{d}:{e}" for d, e in table.items()), table
    if name == "gloo":
        raise ValueError(
            "gpu_tensor.distributed has no gloo backend: use 'mpi' (it serves cpu "
            "tensors as gloo does) or 'cpu:mpi,cuda:nccl'"
        )
    raise ValueError(f"unknown backend {backend!r}: use None, 'mpi', 'nccl' or 'cpu:mpi,cuda:nccl'")


class ProcessGroup:
    """A set of ranks with one MPI communicator and an engine per device type."""

    def __init__(self, comm, ranks: list[int], backend: str, table: dict, timeout):
        self.comm = comm
        self.ranks = ranks  # global ranks, in group-rank order
        self.backend = backend
        self._table = table
        self.timeout_s = timeout.total_seconds()
        self.mpi = MpiEngine(comm)
        self._nccl = None

    def rank(self) -> int:
        return self.mpi.rank

    def size(self) -> int:
        return self.mpi.size

    def engine(self, device_type: str, fn: str):
        kind = self._table.get(device_type)
        if kind is None:
            raise RuntimeError(
                f"{fn}: no backend serves {device_type} tensors in this group "
                f"(backend {self.backend!r}); init_process_group with "
                "'cpu:mpi,cuda:nccl' to use both devices"
            )
        if kind == "mpi":
            return self.mpi
        if self._nccl is None:
            from .nccl_engine import NcclEngine

            self._nccl = NcclEngine(self.mpi, self.timeout_s)
        return self._nccl

    def group_rank(self, global_rank: int, what: str) -> int:
        if global_rank not in self.ranks:
            raise ValueError(
                f"{what} rank {global_rank} is not part of this group (global ranks {self.ranks})"
            )
        return self.ranks.index(global_rank)

    def destroy(self) -> None:
        if self._nccl is not None:
            self._nccl.destroy()
            self._nccl = None
        if self.comm is not _mpi.mpi().COMM_WORLD:
            self.comm.Free()

    def __repr__(self) -> str:
        return f"<ProcessGroup {self.backend} ranks={self.ranks}>"


class GroupMember:
    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


_groups: list[ProcessGroup] = []


def is_initialized() -> bool:
    return GroupMember.WORLD is not None


def _world() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure "
            "to call init_process_group."
        )
    return GroupMember.WORLD


def resolve(group) -> ProcessGroup | None:
    """The ProcessGroup for `group` (None -> the world); None when this rank is not in it."""
    if group is None or group is GroupMember.WORLD:
        return _world()
    if group is GroupMember.NON_GROUP_MEMBER:
        _world()
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(
            f"group must be a ProcessGroup from new_group(), not {type(group).__name__}"
        )
    return group


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Join the job's world group. Under mpiexec, rank and size come from MPI; a `rank` or
    `world_size` given here must agree with them. `timeout` bounds every collective."""
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if init_method not in (None, "env://", "mpi://"):
        raise ValueError(
            f"init_method {init_method!r} is not supported: ranks find each other "
            "through MPI; launch with `gpu-tensor launch -n N script.py` (or "
            "`mpiexec -n N python -m mpi4py script.py`)"
        )
    if store is not None:
        raise ValueError("store is not supported: ranks find each other through MPI")
    name, table = _parse(backend)
    if timeout is None:
        timeout = _NCCL_TIMEOUT if "nccl" in table.values() else default_pg_timeout
    elif not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"timeout must be a datetime.timedelta, not {type(timeout).__name__}")
    MPI = _mpi.mpi()
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    if world_size not in (-1, None, size) or rank not in (-1, None, me):
        raise ValueError(
            f"init_process_group(rank={rank}, world_size={world_size}) disagrees "
            f"with MPI, which launched this process as rank {me} of {size}; "
            "leave them out (MPI supplies them) or launch with `-n "
            f"{world_size}`"
        )
    GroupMember.WORLD = ProcessGroup(world, list(range(size)), name, table, timeout)
    _export_env(world, me, size)
    if size > 1:
        _abort_on_uncaught()


def _export_env(world, me: int, size: int) -> None:
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE as torchrun sets them, for scripts
    that read them (e.g. to pick `cuda:LOCAL_RANK`); values already set are kept."""
    MPI = _mpi.mpi()
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    for key, value in (
        ("RANK", me),
        ("WORLD_SIZE", size),
        ("LOCAL_RANK", node.Get_rank()),
        ("LOCAL_WORLD_SIZE", node.Get_size()),
    ):
        os.environ.setdefault(key, str(value))
    node.Free()


def _abort_on_uncaught() -> None:
    """An exception nobody catches on one rank ends the whole job (MPI_Abort) instead of
    leaving the others waiting in a collective forever; `python -m mpi4py` does the same."""
    previous = sys.excepthook
    if getattr(previous, "_gt_abort", False):
        return

    def hook(kind, value, tb):
        previous(kind, value, tb)
        # mpi4py's own mechanism: MPI_Abort at exit, after the traceback is written out
        # (an Abort right here can cut the traceback off in the launcher's pipe)
        from mpi4py.run import set_abort_status

        set_abort_status(1)

    hook._gt_abort = True
    sys.excepthook = hook


def destroy_process_group(group=None) -> None:
    """Tear down `group` (None: the world and every group made from it)."""
    if group is None or group is GroupMember.WORLD:
        for g in _groups:
            g.destroy()
        _groups.clear()
        if GroupMember.WORLD is not None:
            GroupMember.WORLD.destroy()
        GroupMember.WORLD = None
        return
    pg = resolve(group)
    if pg is not None:
        pg.destroy()
        if pg in _groups:
            _groups.remove(pg)


def get_rank(group=None) -> int:
    """This process's rank in `group`; -1 when it is not a member (as torch)."""
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified: this rank is not a member")
    return pg.backend


def get_process_group_ranks(group) -> list[int]:
    pg = resolve(group)
    if pg is None:
        raise ValueError("this rank is not a member of the group")
    return list(pg.ranks)


def get_global_rank(group, group_rank: int) -> int:
    pg = resolve(group)
    if pg is None or not 0 <= group_rank < pg.size():
        raise ValueError(f"group rank {group_rank} is not part of the group")
    return pg.ranks[group_rank]


def new_group(
    ranks=None,
    timeout=None,
    backend=None,
    pg_options=None,
    use_local_synchronization=False,
    group_desc=None,
):
    """A group of the given global ranks. Every rank of the world must call it (as in
    torch), members or not; non-members get GroupMember.NON_GROUP_MEMBER."""
    world = _world()
    size = world.size()
    if ranks is None:
        ranks = list(range(size))
    ranks = list(ranks)
    if any(not isinstance(r, int) or isinstance(r, bool) for r in ranks):
        raise TypeError(f"new_group: ranks must be ints, got {ranks!r}")
    bad = [r for r in ranks if not 0 <= r < size]
    if bad or len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks!r} must be distinct ranks in [0, {size})")
    ranks = sorted(ranks)
    name, table = (world.backend, world._table) if backend is None else _parse(backend)
    if timeout is None:
        timeout = datetime.timedelta(seconds=world.timeout_s)
    comm = world.comm.Create(world.comm.Get_group().Incl(ranks))  # collective over the world
    if comm == _mpi.mpi().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, ranks, name, table, timeout)
    _groups.append(pg)
    return pg
