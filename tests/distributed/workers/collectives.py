"""Run under `mpiexec -n N python -m mpi4py` (tests/distributed/test_collectives.py).

Every collective x every dtype x device (cpu; cuda is the emulated device, so cuda tensors
take the pinned-staging path) x contiguous/non-contiguous, each result compared with numpy's
answer computed from every rank's known inputs. Prints one OK line with the count.
"""

import sys

import numpy as np
from rank_report import report  # (workers/: the script's own folder)

import gpu_tensor as gt
import gpu_tensor.distributed as dist
from gpu_tensor.distributed import ReduceOp

# argv: devices (default cpu,cuda) and backend (default mpi; the GPU run passes nccl)
DEVICES = sys.argv[1].split(",") if len(sys.argv) > 1 else ["cpu", "cuda"]
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "mpi"
dist.init_process_group(BACKEND)
R, N = dist.get_rank(), dist.get_world_size()
NCCL = BACKEND == "nccl"
DTYPES = [
    gt.bool,
    gt.uint8,
    gt.int8,
    gt.int16,
    gt.int32,
    gt.int64,
    gt.float16,
    gt.bfloat16,
    gt.float32,
    gt.float64,
    gt.complex64,
    gt.complex128,
]
SHAPE = (2, 3)
checks = 0


def vals(r, dt, shape=SHAPE, salt=0):
    """Rank r's input: small integers (exact in every dtype, products stay < 127)."""
    n = int(np.prod(shape))
    a = (np.arange(n) + salt) % 3 + r + 1
    if dt is gt.bool:
        return ((np.arange(n) + r + salt) % (r + 2) == 0).reshape(shape)
    a = a.astype(np.float64).reshape(shape)
    if dt.is_complex:
        a = a + 1j * (a - 1)
    return a


def make(a, dt, dev, strided):
    """A tensor holding `a`; `strided`: a transposed (non-contiguous) view."""
    if strided:
        t = gt.tensor(np.ascontiguousarray(np.asarray(a).T), dtype=dt, device=dev).t()
        assert not t.is_contiguous()
        return t
    return gt.tensor(np.asarray(a), dtype=dt, device=dev)


def check(t, expected, what):
    global checks
    got = t.cpu()
    got = got.to(gt.float32) if t.dtype is gt.bfloat16 else got
    got = np.asarray(got.numpy())
    exp = np.asarray(expected)
    if t.dtype is gt.bool:
        exp = exp.astype(bool)
    assert got.shape == exp.shape, (what, got.shape, exp.shape)
    assert np.array_equal(got, exp.astype(got.dtype)), f"rank {R} {what}: {got} != {exp}"
    checks += 1


def reduced(op, dt, arrays):
    stack = np.stack([np.asarray(a) for a in arrays])
    if dt is gt.bool:
        return {
            "SUM": stack.any(0),
            "PRODUCT": stack.all(0),
            "MIN": stack.all(0),
            "MAX": stack.any(0),
        }[op]
    out = {
        "SUM": stack.sum(0),
        "PRODUCT": stack.prod(0),
        "MIN": stack.min(0),
        "MAX": stack.max(0),
        "AVG": stack.sum(0) / N,
    }[op]
    if op == "AVG" and dt.category == 1:  # integer AVG rounds toward zero
        out = np.trunc(out)
    return out


def ops_for(dt):
    if dt is gt.bool:
        return ["SUM", "PRODUCT", "MIN", "MAX"]
    if dt.is_complex:
        return ["SUM", "AVG"]
    return ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]


for dev in DEVICES:
    for dt in DTYPES:
        tag = f"{dev} {dt.name}"
        mine = vals(R, dt)
        inputs = [vals(r, dt) for r in range(N)]
        for strided in (False, True):
            for op in ops_for(dt):
                t = make(mine, dt, dev, strided)
                dist.all_reduce(t, op=getattr(ReduceOp, op))
                check(t, reduced(op, dt, inputs), f"all_reduce {op} {tag} strided={strided}")
            t = make(mine, dt, dev, strided)
            dist.broadcast(t, src=N - 1)
            check(t, inputs[N - 1], f"broadcast {tag}")
            t = make(mine, dt, dev, strided)
            dist.reduce(t, dst=0, op=ReduceOp.SUM if dt is not gt.bool else ReduceOp.MAX)
            check(
                t,
                reduced("SUM" if dt is not gt.bool else "MAX", dt, inputs) if R == 0 else mine,
                f"reduce {tag}",
            )
        # gathers and scatters
        inp = make(mine, dt, dev, True)
        out = gt.empty((N * 2, 3), dtype=dt, device=dev)
        dist.all_gather_into_tensor(out, inp)
        check(out, np.concatenate(inputs), f"all_gather_into_tensor {tag}")
        outs = [gt.empty(SHAPE, dtype=dt, device=dev) for _ in range(N)]
        dist.all_gather(outs, inp)
        for r in range(N):
            check(outs[r], inputs[r], f"all_gather {tag}")
        big = [vals(r, dt, (N * 2, 3)) for r in range(N)]
        out = gt.empty(SHAPE, dtype=dt, device=dev)
        rop = "SUM" if dt.is_complex else "MAX"
        dist.reduce_scatter_tensor(out, make(big[R], dt, dev, False), op=getattr(ReduceOp, rop))
        check(out, reduced(rop, dt, big)[2 * R : 2 * R + 2], f"reduce_scatter_tensor {tag}")
        # all_to_all_single, even then uneven splits (rank r sends r+1 rows to each peer)
        src = make(big[R], dt, dev, False)
        out = gt.empty((N * 2, 3), dtype=dt, device=dev)
        dist.all_to_all_single(out, src)
        check(
            out,
            np.concatenate([big[r][2 * R : 2 * R + 2] for r in range(N)]),
            f"all_to_all_single {tag}",
        )
        rows = [vals(r, dt, ((r + 1) * N, 3)) for r in range(N)]
        out = gt.empty((sum(r + 1 for r in range(N)), 3), dtype=dt, device=dev)
        dist.all_to_all_single(
            out,
            make(rows[R], dt, dev, False),
            output_split_sizes=[r + 1 for r in range(N)],
            input_split_sizes=[R + 1] * N,
        )
        check(
            out,
            np.concatenate([rows[r][(r + 1) * R : (r + 1) * (R + 1)] for r in range(N)]),
            f"all_to_all_single uneven {tag}",
        )
        G = min(1, N - 1)  # gather's root: not rank 0 when there is another
        glist = [gt.empty(SHAPE, dtype=dt, device=dev) for _ in range(N)] if R == G else None
        dist.gather(inp, glist, dst=G)
        if R == G:
            for r in range(N):
                check(glist[r], inputs[r], f"gather {tag}")
        out = gt.zeros(SHAPE, dtype=dt, device=dev)
        slist = [make(inputs[r], dt, dev, False) for r in range(N)] if R == 0 else None
        dist.scatter(out, slist, src=0)
        check(out, inputs[R], f"scatter {tag}")
        # point to point: a ring, tagged
        if N == 1:
            continue
        nxt, prv = (R + 1) % N, (R - 1) % N
        out = gt.zeros(SHAPE, dtype=dt, device=dev)
        if R % 2 == 0:
            dist.send(make(mine, dt, dev, True), dst=nxt, tag=7)
            got_from = dist.recv(out, src=prv, tag=7)
        else:
            got_from = dist.recv(out, src=None if not NCCL else prv, tag=7)  # None: any
            dist.send(make(mine, dt, dev, True), dst=nxt, tag=7)
        assert got_from == prv, (got_from, prv)
        check(out, inputs[prv], f"send/recv {tag}")

# async handles: several in flight at once, each waited on
for dev in DEVICES:
    a = gt.full((1000,), float(R + 1), device=dev)
    b = gt.full((3,), float(R), device=dev)
    w1 = dist.all_reduce(a, async_op=True)
    w2 = dist.broadcast(b, src=0, async_op=True)
    w3 = dist.barrier(async_op=True)
    assert isinstance(w1, dist.Work) and repr(w1)
    for w in (w3, w2, w1):
        assert w.wait() is True and w.is_completed() and w.is_success()
    check(a, np.full(1000, N * (N + 1) / 2), f"async all_reduce {dev}")
    check(b, np.zeros(3), f"async broadcast {dev}")
    out = gt.zeros(SHAPE, device=dev)
    if N == 1:
        continue
    if R == 0:
        works = [dist.isend(gt.full(SHAPE, float(p), device=dev), dst=p) for p in range(1, N)]
        for w in works:
            w.wait()
    else:
        w = dist.irecv(out, src=0)
        w.wait()
        check(out, np.full(SHAPE, float(R)), f"isend/irecv {dev}")

# all_to_all (lists; rank r sends r+i+1 elements to rank i), batch_isend_irecv, futures
for dev in DEVICES:
    outs = [gt.zeros(r + R + 1, device=dev) for r in range(N)]
    ins = [gt.full((R + i + 1,), float(10 * R + i), device=dev) for i in range(N)]
    dist.all_to_all(outs, ins)
    for r in range(N):
        check(outs[r], np.full(r + R + 1, float(10 * r + R)), f"all_to_all {dev}")
    if N > 1:
        nxt, prv = (R + 1) % N, (R - 1) % N
        got = gt.zeros(3, device=dev)
        works = dist.batch_isend_irecv(
            [
                dist.P2POp(dist.isend, gt.full((3,), float(R), device=dev), nxt),
                dist.P2POp(dist.irecv, got, prv),
            ]
        )
        for w in works:
            w.wait()
        check(got, np.full(3, float(prv)), f"batch_isend_irecv {dev}")
    t = gt.ones(2, device=dev)
    fut = dist.all_reduce(t, async_op=True).get_future()
    chained = fut.then(lambda f: f.value()[0] * 2)
    assert fut.wait()[0] is t and fut.done()
    check(t, np.full(2, float(N)), f"future {dev}")
    check(chained.value(), np.full(2, 2.0 * N), f"future.then {dev}")

# groups: the first two ranks, and the last rank alone
if N == 1 or NCCL:  # (NCCL: the group checks below use cpu tensors)
    report(checks)
    dist.destroy_process_group()
    sys.exit(0)
pair = dist.new_group([0, 1])
last = dist.new_group([N - 1])
t = gt.full((4,), float(R + 1))
res = dist.all_reduce(t, group=pair)
if R < 2:
    assert dist.get_rank(pair) == R and dist.get_world_size(pair) == 2
    check(t, np.full(4, 3.0), "all_reduce in new_group([0, 1])")
else:
    assert res is None and dist.get_rank(pair) == -1 and dist.get_world_size(pair) == -1
    check(t, np.full(4, float(R + 1)), "non-member unchanged")
if R == N - 1:
    t = gt.full((2,), 5.0)
    dist.broadcast(t, src=N - 1, group=last)
    check(t, np.full(2, 5.0), "broadcast in a group of one")
    assert dist.get_process_group_ranks(last) == [N - 1]
if R < 2:
    t = gt.full((2,), float(R))
    dist.broadcast(t, group=pair, group_src=1)  # group rank 1 = global rank 1
    check(t, np.full(2, 1.0), "broadcast with group_src")

# objects
objs = [None] * N
dist.all_gather_object(objs, {"rank": R, "word": "x" * R})
assert objs == [{"rank": r, "word": "x" * r} for r in range(N)], objs
lst = [R, "mine"] if R == 0 else [None, None]
dist.broadcast_object_list(lst, src=0)
assert lst == [0, "mine"], lst
gathered = [None] * N if R == 0 else None
dist.gather_object(R * 10, gathered, dst=0)
assert R != 0 or gathered == [r * 10 for r in range(N)]
out = [None]
dist.scatter_object_list(out, [f"to{r}" for r in range(N)] if R == 0 else None, src=0)
assert out == [f"to{R}"], out
t_obj = [gt.tensor([1.0, 2.0]) * (R + 1)] if R == 0 else [None]
dist.broadcast_object_list(t_obj, src=0)
check(t_obj[0], np.array([1.0, 2.0]), "tensor inside an object")
checks += 5

dist.barrier()
report(checks)
dist.destroy_process_group()
assert not dist.is_initialized()
