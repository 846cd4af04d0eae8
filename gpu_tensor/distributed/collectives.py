"""The tensor collectives, torch.distributed's names, arguments and in-place semantics.

Each one checks its arguments, stages its tensors for the group's engine (staging.py), starts
the operation and returns a Work (async_op=True) or waits for it. On a rank outside `group`
they do nothing and return None, as torch does. Roots (`src`, `dst`) are global ranks;
`group_src`/`group_dst` name them by rank within the group.
"""

from __future__ import annotations

from ..creation import empty
from ._common import (
    check_list,
    check_pair,
    check_tensor,
    engine_for,
    finish_work,
    reduce_name,
    resolve,
    root_of,
    stage,
)
from .reduce_op import ReduceOp

__all__ = [
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
]


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """tensor <- op over every rank's tensor, in place on every rank."""
    check_tensor(tensor, "all_reduce")
    pg = resolve(group)
    if pg is None:
        return None
    name = reduce_name(op, tensor, "all_reduce")
    eng = engine_for(pg, tensor, "all_reduce")
    st = stage(tensor, eng, op=name, pg=pg)
    return finish_work(eng.allreduce(st.buf, name), st.finish, "all_reduce", pg, async_op, [tensor])


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """tensor <- src's tensor, on every rank."""
    started = _rooted(tensor, group, src, group_src, "broadcast", "src")
    if started is None:
        return None
    pg, root, eng = started
    st = stage(tensor, eng, read=pg.rank() == root)
    return finish_work(eng.broadcast(st.buf, root), st.finish, "broadcast", pg, async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """dst's tensor <- op over every rank's tensor; the others' tensors are unchanged."""
    check_tensor(tensor, "reduce")
    pg = resolve(group)
    if pg is None:
        return None
    root = root_of(pg, dst, group_dst, "reduce", "dst")
    name = reduce_name(op, tensor, "reduce")
    eng = engine_for(pg, tensor, "reduce")
    st = stage(tensor, eng, op=name, pg=pg, divide=pg.rank() == root)
    return finish_work(eng.reduce(st.buf, name, root), st.finish, "reduce", pg, async_op, [tensor])


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor <- every rank's input, concatenated (or stacked) along dim 0."""
    fn = "all_gather_into_tensor"
    pg = _world_sized(output_tensor, "output_tensor", input_tensor, "input_tensor", group, fn)
    if pg is None:
        return None
    eng = engine_for(pg, input_tensor, fn)
    src = stage(input_tensor, eng)
    out = stage(output_tensor, eng, read=False)
    return finish_work(
        eng.allgather(src.buf, out.buf), _keep(src, out.finish), fn, pg, async_op, [output_tensor]
    )


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] <- rank i's tensor."""
    check_tensor(tensor, "all_gather")
    pg = resolve(group)
    if pg is None:
        return None
    check_list(tensor_list, "all_gather", "tensor_list", pg.size(), tensor)
    flat = empty((pg.size(), *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    work = all_gather_into_tensor(flat, tensor, group, async_op=True)
    return _then_split(work, flat, tensor_list, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """output <- rank r's share (the r-th of world_size equal dim-0 chunks) of op over every
    rank's input."""
    fn = "reduce_scatter_tensor"
    pg = _world_sized(input, "input", output, "output", group, fn)
    if pg is None:
        return None
    name = reduce_name(op, input, fn)
    eng = engine_for(pg, input, fn)
    src = stage(input, eng, op=name, divide=False, pg=pg)
    out = stage(output, eng, op=name, read=False, pg=pg)
    req = eng.reduce_scatter(src.buf, out.buf, name)
    return finish_work(req, _keep(src, out.finish), fn, pg, async_op, [out.t])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output <- op over every rank's input_list[r], on rank r."""
    check_tensor(output, "reduce_scatter", "output")
    pg = resolve(group)
    if pg is None:
        return None
    check_list(input_list, "reduce_scatter", "input_list", pg.size(), output)
    flat = _stacked(input_list, output)
    return reduce_scatter_tensor(output, flat, op, group, async_op)


def all_to_all_single(
    output,
    input,
    output_split_sizes=None,
    input_split_sizes=None,  # noqa: A002
    group=None,
    async_op=False,
):
    """Rank r sends its dim-0 chunk i of `input` to rank i and receives rank i's chunk r into
    chunk i of `output`; chunks are equal unless split sizes are given."""
    fn = "all_to_all_single"
    check_tensor(output, fn, "output")
    check_tensor(input, fn, "input")
    pg = resolve(group)
    if pg is None:
        return None
    check_pair(output, input, fn)
    n = pg.size()
    send = _splits(input, input_split_sizes, n, fn, "input")
    recv = _splits(output, output_split_sizes, n, fn, "output")
    if output.shape[1:] != input.shape[1:]:
        raise ValueError(
            f"{fn}(): output and input must agree beyond dim 0, got "
            f"{tuple(output.shape)} and {tuple(input.shape)}"
        )
    eng = engine_for(pg, input, fn)
    src = stage(input, eng)
    out = stage(output, eng, read=False)
    row = _row(input)
    req = eng.alltoall(
        src.buf, out.buf, [s * row for s in send], [s * row for s in recv], input.element_size()
    )
    return finish_work(req, _keep(src, out.finish), fn, pg, async_op, [out.t])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """output_tensor_list[i] <- rank i's input_tensor_list[r], on rank r (shapes may differ
    per pair; one dtype and device)."""
    fn = "all_to_all"
    pg = resolve(group)
    if pg is None:
        return None
    n = pg.size()
    for arg, ts in (
        ("output_tensor_list", output_tensor_list),
        ("input_tensor_list", input_tensor_list),
    ):
        if not isinstance(ts, (list, tuple)) or len(ts) != n:
            raise ValueError(f"{fn}(): '{arg}' must be a list of one tensor per rank ({n})")
        for t in ts:
            check_tensor(t, fn, arg)
            check_pair(t, input_tensor_list[0], fn)
    like = input_tensor_list[0]
    flat_in = empty(
        (sum(t.numel() for t in input_tensor_list),), dtype=like.dtype, device=like.device
    )
    at = 0
    for t in input_tensor_list:
        flat_in[at : at + t.numel()].copy_(t.reshape(-1))
        at += t.numel()
    flat_out = empty(
        (sum(t.numel() for t in output_tensor_list),), dtype=like.dtype, device=like.device
    )
    work = all_to_all_single(
        flat_out,
        flat_in,
        [t.numel() for t in output_tensor_list],
        [t.numel() for t in input_tensor_list],
        group,
        async_op=True,
    )
    inner = work._finish

    def finish():
        if inner is not None:
            inner()
        at = 0
        for t in output_tensor_list:
            t.detach().copy_(flat_out[at : at + t.numel()].reshape(t.shape))
            at += t.numel()

    work._finish = finish
    work._result = list(output_tensor_list)
    if async_op:
        return work
    work.wait()
    return None


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """gather_list[i] <- rank i's tensor, on dst only (gather_list is given there only)."""
    started = _rooted(tensor, group, dst, group_dst, "gather", "dst")
    if started is None:
        return None
    pg, root, eng = started
    src = stage(tensor, eng)
    if pg.rank() == root:
        check_list(gather_list, "gather", "gather_list", pg.size(), tensor)
        flat = empty((pg.size(), *tensor.shape), dtype=tensor.dtype, device=tensor.device)
        out = stage(flat, eng, read=False)
        work = finish_work(eng.gather(src.buf, out.buf, root), out.finish, "gather", pg, True)
        return _then_split(work, flat, gather_list, async_op)
    if gather_list:
        raise ValueError(
            "gather(): argument 'gather_list' must NOT be specified on non-destination ranks"
        )
    return finish_work(eng.gather(src.buf, None, root), _keep(src), "gather", pg, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """tensor <- src's scatter_list[r], on rank r (scatter_list is given on src only)."""
    started = _rooted(tensor, group, src, group_src, "scatter", "src")
    if started is None:
        return None
    pg, root, eng = started
    out = stage(tensor, eng, read=False)
    src_st = None
    if pg.rank() == root:
        check_list(scatter_list, "scatter", "scatter_list", pg.size(), tensor)
        src_st = stage(_stacked(scatter_list, tensor), eng)
    elif scatter_list:
        raise ValueError(
            "scatter(): argument 'scatter_list' must NOT be specified on non-source ranks"
        )
    req = eng.scatter(None if src_st is None else src_st.buf, out.buf, root)
    return finish_work(req, _keep(src_st, out.finish), "scatter", pg, async_op, [tensor])


def barrier(group=None, async_op=False, device_ids=None):
    """Every rank of the group reaches this point before any leaves it."""
    pg = resolve(group)
    if pg is None:
        return None
    if pg._nccl is not None:  # as torch's NCCL barrier: this rank's device work is done first
        pg._nccl.synchronize()
    return finish_work(pg.mpi.barrier(), None, "barrier", pg, async_op)


# -- helpers ------------------------------------------------------------------------------
def _rooted(tensor, group, root, group_root, fn, arg):
    """How a one-tensor collective with a root starts: the tensor checked, then (group,
    the root's global rank, engine), or None on a rank outside `group`."""
    check_tensor(tensor, fn)
    pg = resolve(group)
    if pg is None:
        return None
    return pg, root_of(pg, root, group_root, fn, arg), engine_for(pg, tensor, fn)


def _keep(staged, then=None):
    """A finish step that holds `staged` (a buffer the engine reads until the op is done)."""

    def finish():
        if then is not None:
            then()
        return staged

    return finish


def _then_split(work, flat, tensor_list, async_op):
    """After `work` fills `flat` (world_size stacked chunks), copy chunk i into list[i]."""
    inner = work._finish

    def finish():
        if inner is not None:
            inner()
        for i, t in enumerate(tensor_list):
            t.detach().copy_(flat[i].reshape(t.shape))

    work._finish = finish
    if async_op:
        return work
    work.wait()
    return None


def _world_sized(big, big_name, small, small_name, group, fn):
    """Check a (world_size x small, small) pair of tensors; the group, or None outside it."""
    check_tensor(big, fn, big_name)
    check_tensor(small, fn, small_name)
    pg = resolve(group)
    if pg is None:
        return None
    check_pair(big, small, fn)
    if big.numel() != pg.size() * small.numel():
        raise ValueError(
            f"{fn}(): {big_name} has {big.numel()} elements; it must hold "
            f"world_size ({pg.size()}) x {small_name} ({small.numel()})"
        )
    return pg


def _stacked(tensors, like):
    flat = empty((len(tensors), *like.shape), dtype=like.dtype, device=like.device)
    for i, t in enumerate(tensors):
        flat[i].copy_(t)
    return flat


def _row(t) -> int:
    """Elements per dim-0 slice."""
    return t.numel() // t.shape[0] if t.ndim and t.shape[0] else max(t.numel(), 1)


def _splits(t, sizes, n: int, fn: str, arg: str) -> list[int]:
    rows = t.shape[0] if t.ndim else 1
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise ValueError(
                f"{fn}(): {arg} dim 0 ({rows}) must divide evenly among "
                f"{n} ranks, or give {arg}_split_sizes"
            )
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows or min(sizes) < 0:
        raise ValueError(
            f"{fn}(): {arg}_split_sizes {sizes} must have one entry per rank "
            f"({n}) summing to {arg}'s dim 0 ({rows})"
        )
    return sizes
