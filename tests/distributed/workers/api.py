"""Setup API and argument errors on real ranks (tests/distributed/test_api.py)."""

import datetime

import gpu_tensor as gt
import gpu_tensor.distributed as dist
from gpu_tensor.distributed import ReduceOp

checks = 0


def raises(kind, text, fn, *args, **kwargs):
    global checks
    try:
        fn(*args, **kwargs)
    except kind as exc:
        assert text in str(exc), f"{text!r} not in {exc!r}"
        checks += 1
        return
    raise AssertionError(f"{fn.__name__} did not raise {kind.__name__} ({text})")


assert dist.is_available() and dist.is_mpi_available() and not dist.is_initialized()
raises(ValueError, "has not been initialized", dist.get_rank)
raises(ValueError, "unknown backend", dist.init_process_group, "tcp")
raises(ValueError, "no gloo backend", dist.init_process_group, "gloo")
raises(ValueError, "NCCL cannot serve cpu", dist.init_process_group, "cpu:nccl")
raises(TypeError, "timedelta", dist.init_process_group, "mpi", timeout=5)
raises(ValueError, "disagrees with MPI", dist.init_process_group, "mpi", world_size=7)
raises(
    ValueError, "not supported", dist.init_process_group, "mpi", init_method="tcp://10.0.0.1:23456"
)
dist.init_process_group(backend="cpu:mpi,cuda:mpi", timeout=datetime.timedelta(seconds=60))
R, N = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and dist.get_backend() == "cpu:mpi,cuda:mpi"
raises(ValueError, "twice", dist.init_process_group)
import os  # noqa: E402

assert os.environ["RANK"] == str(R) and os.environ["WORLD_SIZE"] == str(N)
assert int(os.environ["LOCAL_RANK"]) == R  # one node

t = gt.ones(3)
raises(TypeError, "argument 'tensor' must be a gpu_tensor.Tensor", dist.all_reduce, [1.0])
raises(TypeError, "ReduceOp member", dist.all_reduce, t, op="sum")
raises(
    ValueError,
    "does not support MAX on complex",
    dist.all_reduce,
    gt.ones(2, dtype=gt.complex64),
    op=ReduceOp.MAX,
)
raises(TypeError, "AVG with boolean", dist.all_reduce, gt.ones(2, dtype=gt.bool), op=ReduceOp.AVG)
raises(TypeError, "integer or bool", dist.all_reduce, t, op=ReduceOp.BAND)
raises(ValueError, "not part of this group", dist.broadcast, t, src=N)
raises(ValueError, "give src or group_src", dist.broadcast, t, src=0, group_src=0)
raises(ValueError, f"world_size ({N})", dist.all_gather_into_tensor, gt.empty(N * 3 + 1), t)
raises(TypeError, "same dtype", dist.all_gather_into_tensor, gt.empty(N * 3, dtype=gt.int64), t)
raises(ValueError, "one per rank", dist.all_gather, [t] * (N + 1), t)
raises(
    ValueError, "divide evenly", dist.all_to_all_single, gt.empty(N * 2 + 1), gt.empty(N * 2 + 1)
) if N > 1 else None
raises(
    ValueError,
    "summing to",
    dist.all_to_all_single,
    gt.empty(N),
    gt.empty(N),
    input_split_sizes=[2] * N,
)
raises(ValueError, "cannot send to", dist.send, t, dst=R)
raises(ValueError, "one tensor per rank", dist.all_to_all, [t], [t] * N) if N > 1 else None
raises(ValueError, "isend or irecv", dist.P2POp, dist.send, t, 0)
raises(TypeError, "list of P2POp", dist.batch_isend_irecv, [t])
raises(ValueError, "tag must be", dist.send, t, dst=(R + 1) % N, tag=-1)
raises(ValueError, "distinct ranks", dist.new_group, [0, 0])
raises(ValueError, "distinct ranks", dist.new_group, [N])
raises(ValueError, "needs one per rank", dist.all_gather_object, [None], 1) if N > 1 else None
raises(TypeError, "must be a list", dist.broadcast_object_list, (1,))
raises(ValueError, "must contain '{rank}'", dist.save_rank_snapshot, "mem.json")
if N > 1 and R == 1:
    raises(ValueError, "must NOT be specified", dist.gather, t, [t] * N, dst=0)
# A reduction on a tensor that requires grad (a parameter's .grad is the usual case; the
# tensor itself goes through detach semantics: values change, autograd does not see it)
p = gt.ones(2, requires_grad=True)
dist.all_reduce(p.detach())
assert p.tolist() == [float(N)] * 2

# a group of everyone matches the world
g = dist.new_group()
x = gt.full((2,), float(R))
dist.all_reduce(x, group=g, op=ReduceOp.MAX)
assert x.tolist() == [float(N - 1)] * 2 and dist.get_process_group_ranks(g) == list(range(N))
assert dist.get_global_rank(g, N - 1) == N - 1
dist.destroy_process_group(g)

# memory across ranks: the last rank holds 8 MiB more on the (emulated) device
import sys  # noqa: E402

if len(sys.argv) > 1:
    keep = gt.empty(2**20 + (2**21 if R == N - 1 else 0), device="cuda")  # float32
    dist.save_rank_snapshot(sys.argv[1])
    del keep
counts = [None] * N
dist.all_gather_object(counts, checks)
if R == 0:
    print(f"OK {N} ranks: {counts} checks", flush=True)
dist.destroy_process_group()
assert not dist.is_initialized()
raises(ValueError, "has not been initialized", dist.all_reduce, t)
