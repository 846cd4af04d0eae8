"""Point-to-point: send, recv, isend, irecv, torch's names and arguments.

Peers are global ranks (`group_dst`/`group_src`: ranks within the group). On MPI, `tag`
matches a send with its recv and `recv(src=None)` takes a message from any rank, returning
that rank; NCCL has neither, so it needs an explicit peer and ignores tags.
"""

from __future__ import annotations

from ._common import check_tensor, engine_for, finish_work, resolve, root_of, stage

__all__ = ["send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv"]


def _check_tag(tag, fn: str) -> int:
    if not isinstance(tag, int) or isinstance(tag, bool) or tag < 0:
        raise ValueError(f"{fn}(): tag must be an int >= 0, not {tag!r}")
    return tag


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending tensor to dst; returns a Work (the tensor must not change before
    wait())."""
    check_tensor(tensor, "isend")
    pg = resolve(group)
    if pg is None:
        return None
    peer = root_of(pg, dst, group_dst, "isend", "dst")
    if peer == pg.rank():
        raise ValueError(
            f"isend(): dst {pg.ranks[peer]} is this rank; a rank cannot send to itself"
        )
    eng = engine_for(pg, tensor, "isend")
    st = stage(tensor, eng)

    def keep():
        return st

    return finish_work(eng.send(st.buf, peer, _check_tag(tag, "isend")), keep, "send", pg, True)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into tensor from src (None: any rank, MPI only); returns a Work."""
    check_tensor(tensor, "irecv")
    pg = resolve(group)
    if pg is None:
        return None
    peer = None
    if src is not None or group_src is not None:
        peer = root_of(pg, src, group_src, "irecv", "src")
        if peer == pg.rank():
            raise ValueError(
                f"irecv(): src {pg.ranks[peer]} is this rank; a rank cannot receive from itself"
            )
    eng = engine_for(pg, tensor, "irecv")
    st = stage(tensor, eng, read=False)
    req = eng.recv(st.buf, peer, _check_tag(tag, "irecv"))
    work = finish_work(req, st.finish, "recv", pg, True, [tensor])
    work._source = (pg, peer, req)
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send tensor to dst and wait until the buffer may be reused."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into tensor from src (None: any rank); returns the sender's global rank,
    or -1 on a rank outside the group."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    pg, peer, req = work._source
    if peer is None:
        peer = req.status.Get_source()
    return pg.ranks[peer]


class P2POp:
    """One send or receive for batch_isend_irecv: P2POp(isend | irecv, tensor, peer)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("P2POp: op must be gpu_tensor.distributed.isend or irecv")
        check_tensor(tensor, "P2POp")
        if peer is None and group_peer is None:
            raise ValueError("P2POp needs a peer (or group_peer)")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every P2POp; returns their Works (wait on each). All receives are posted
    before the sends, so pairs of ranks exchanging in either order cannot deadlock."""
    if not isinstance(p2p_op_list, (list, tuple)) or not all(
        isinstance(p, P2POp) for p in p2p_op_list
    ):
        raise TypeError("batch_isend_irecv() takes a list of P2POp")
    order = sorted(range(len(p2p_op_list)), key=lambda i: p2p_op_list[i].op is isend)
    works = [None] * len(p2p_op_list)
    for i in order:
        p = p2p_op_list[i]
        if p.op is isend:
            works[i] = isend(p.tensor, p.peer, p.group, p.tag, group_dst=p.group_peer)
        else:
            works[i] = irecv(p.tensor, p.peer, p.group, p.tag, group_src=p.group_peer)
    return works
