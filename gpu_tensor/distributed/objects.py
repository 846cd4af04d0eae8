"""Collectives over picklable Python objects, through MPI whatever the tensor backend.

As in torch, objects are pickled: only use them with ranks you trust (unpickling runs code).
A Tensor inside an object pickles as its values and device name (Tensor.__reduce__), so it
arrives on the same-named device of the receiving rank.
"""

from __future__ import annotations

from ._common import resolve, root_of

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list"]


def _check_list(lst, fn: str, arg: str) -> None:
    if not isinstance(lst, list):
        raise TypeError(f"{fn}(): argument '{arg}' must be a list, not {type(lst).__name__}")


def all_gather_object(object_list, obj, group=None) -> None:
    """object_list[i] <- rank i's obj (object_list must have one slot per rank)."""
    _check_list(object_list, "all_gather_object", "object_list")
    pg = resolve(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(
            f"all_gather_object(): object_list has {len(object_list)} slots; it "
            f"needs one per rank ({pg.size()})"
        )
    object_list[:] = pg.mpi.allgather_object(obj)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None) -> None:
    """Every rank's object_list <- src's (the lists must have the same length)."""
    _check_list(object_list, "broadcast_object_list", "object_list")
    pg = resolve(group)
    if pg is None:
        return
    root = root_of(pg, src, group_src, "broadcast_object_list", "src")
    got = pg.mpi.bcast_object(list(object_list) if pg.rank() == root else None, root)
    if len(got) != len(object_list):
        raise ValueError(
            f"broadcast_object_list(): src sent {len(got)} objects but this "
            f"rank's object_list has {len(object_list)} slots"
        )
    object_list[:] = got


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """dst's object_gather_list[i] <- rank i's obj."""
    pg = resolve(group)
    if pg is None:
        return
    root = root_of(pg, dst, group_dst, "gather_object", "dst")
    if pg.rank() == root:
        _check_list(object_gather_list, "gather_object", "object_gather_list")
        if len(object_gather_list) != pg.size():
            raise ValueError(
                f"gather_object(): object_gather_list needs one slot per rank "
                f"({pg.size()}), has {len(object_gather_list)}"
            )
    got = pg.mpi.gather_object(obj, root)
    if pg.rank() == root:
        object_gather_list[:] = got


def scatter_object_list(
    scatter_object_output_list, scatter_object_input_list=None, src=None, group=None, group_src=None
) -> None:
    """scatter_object_output_list[0] <- src's scatter_object_input_list[r], on rank r."""
    _check_list(scatter_object_output_list, "scatter_object_list", "scatter_object_output_list")
    if len(scatter_object_output_list) < 1:
        raise ValueError("scatter_object_list(): scatter_object_output_list needs one slot")
    pg = resolve(group)
    if pg is None:
        return
    root = root_of(pg, src, group_src, "scatter_object_list", "src")
    objs = None
    if pg.rank() == root:
        _check_list(scatter_object_input_list, "scatter_object_list", "scatter_object_input_list")
        if len(scatter_object_input_list) != pg.size():
            raise ValueError(
                "scatter_object_list(): scatter_object_input_list needs one "
                f"object per rank ({pg.size()})"
            )
        objs = list(scatter_object_input_list)
    scatter_object_output_list[0] = pg.mpi.scatter_object(objs, root)
