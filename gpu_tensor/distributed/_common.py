"""What every collective does first: check its tensors, find its group and engine, stage
its buffers; and last: hand back a Work, or wait for it."""

from __future__ import annotations

from .._tensor import Tensor
from .group import resolve
from .reduce_op import check_op
from .staging import Staged
from .work import Work

__all__ = [
    "check_tensor",
    "check_list",
    "check_pair",
    "resolve",
    "engine_for",
    "stage",
    "reduce_name",
    "root_of",
    "finish_work",
]


def check_tensor(t, fn: str, arg: str = "tensor") -> None:
    if not isinstance(t, Tensor):
        raise TypeError(
            f"{fn}(): argument '{arg}' must be a gpu_tensor.Tensor, not {type(t).__name__}"
        )


def check_list(ts, fn: str, arg: str, n: int, like) -> None:
    """`ts` is a list of n tensors shaped, typed and placed like `like`."""
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"{fn}(): argument '{arg}' must be a list of gpu_tensor.Tensor")
    if len(ts) != n:
        raise ValueError(f"{fn}(): '{arg}' has {len(ts)} tensors; it needs one per rank ({n})")
    for t in ts:
        if t.dtype is not like.dtype or t.device != like.device or t.shape != like.shape:
            raise ValueError(
                f"{fn}(): every tensor in '{arg}' must match the input "
                f"({like.dtype.name}, {tuple(like.shape)}, {like.device}); got "
                f"{t.dtype.name}, {tuple(t.shape)}, {t.device}"
            )


def check_pair(out, inp, fn: str) -> None:
    if out.dtype is not inp.dtype:
        raise TypeError(
            f"{fn}(): output and input must have the same dtype, got "
            f"{out.dtype.name} and {inp.dtype.name}"
        )
    if out.device != inp.device:
        raise ValueError(f"{fn}(): output is on {out.device} but input is on {inp.device}")


def engine_for(pg, t, fn: str):
    return pg.engine(t.device.type, fn)


def stage(
    t, eng, *, op: str | None = None, read: bool = True, divide: bool = True, pg=None
) -> Staged:
    """Stage t for `eng`. `op`: the reduction (bf16/bool widening; an emulated AVG divides
    by the group size when `divide`)."""
    avg = pg.size() if op == "AVG" and divide and not eng.native_avg else None
    return Staged(
        t, device_engine=eng.device_engine, reduce=op is not None, read=read, avg_divisor=avg
    )


def reduce_name(op, t, fn: str) -> str:
    return check_op(op, t.dtype, fn)


def root_of(pg, rank, group_rank, fn: str, what: str) -> int:
    """The group rank of a collective's root, given torch's (global rank | group rank)."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{fn}(): give {what} or group_{what}, not both")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(
                f"{fn}(): group_{what}={group_rank} is outside the group (size {pg.size()})"
            )
        return group_rank
    return pg.group_rank(0 if rank is None else rank, f"{fn}(): {what}")


def finish_work(request, finish, fn: str, pg, async_op: bool, result=None):
    """A Work for the started op (async_op), or None once it has completed. `result`: the
    tensors the op writes, for Work.get_future()."""
    work = Work(request, finish, fn, pg.ranks[pg.rank()], pg.timeout_s, result)
    if async_op:
        return work
    work.wait()
    return None
