"""Data-parallel training on N ranks matches one process (tests/distributed/test_ddp.py).

A hand-written MLP (gt ops only). Batch B = 12 split B/N per rank; every rank also trains
the single-process reference on the whole batch locally and compares parameters after each
SGD step. Covers DistributedDataParallel (hooks, buckets: a tiny bucket cap forces several),
no_sync() accumulation, find_unused_parameters, average_gradients, and emulated cuda.
"""

import numpy as np
from rank_report import report  # (workers/: the script's own folder)

import gpu_tensor as gt
import gpu_tensor.distributed as dist
from gpu_tensor.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
R, N = dist.get_rank(), dist.get_world_size()
B, STEPS, LR = 12, 4, 0.1
rng = np.random.default_rng(0)  # the same data on every rank
X = rng.standard_normal((STEPS, B, 5))
Y = rng.standard_normal((STEPS, B, 1))
checks = 0


class MLP:
    """tanh(x @ w1 + b1) @ w2 + b2, plus an optional parameter no forward uses."""

    def __init__(self, device, seed, spare=False):
        r = np.random.default_rng(seed)
        self.w1 = gt.tensor(r.standard_normal((5, 7)), device=device, requires_grad=True)
        self.b1 = gt.tensor(r.standard_normal(7), device=device, requires_grad=True)
        self.w2 = gt.tensor(r.standard_normal((7, 1)), device=device, requires_grad=True)
        self.b2 = gt.tensor(r.standard_normal(1), device=device, requires_grad=True)
        self.spare = gt.zeros(3, device=device, requires_grad=True) if spare else None

    def parameters(self):
        ps = [self.w1, self.b1, self.w2, self.b2]
        return ps + ([self.spare] if self.spare is not None else [])

    def __call__(self, x):
        return gt.tanh(x @ self.w1 + self.b1) @ self.w2 + self.b2


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


def sgd(params):
    with gt.no_grad():
        for p in params:
            if p.grad is not None:
                p -= LR * p.grad
                p.grad = None


def close(a, b, what):
    global checks
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        d = np.abs(p.detach().cpu().numpy() - q.detach().cpu().numpy()).max()
        assert d < 1e-10, f"rank {R} {what}: parameters differ by {d}"
        checks += 1


def shard(a, device):
    n = B // N
    return gt.tensor(a[R * n : (R + 1) * n], device=device)


for device in ["cpu", "cuda"]:
    ref = MLP(device, seed=1)
    mine = MLP(device, seed=100 + R)  # different start: DDP broadcasts rank 0's
    ddp = DDP(mine, bucket_cap_mb=100 / 2**20)  # ~100-byte buckets: several in flight
    assert len(ddp.reducer.buckets) > 2
    mine_rank0 = MLP(device, seed=100)
    close(mine, mine_rank0, "after the broadcast")
    ref = mine_rank0
    for step in range(STEPS):
        loss_of(
            ref, gt.tensor(X[step], device=device), gt.tensor(Y[step], device=device)
        ).backward()
        sgd(ref.parameters())
        loss_of(ddp, shard(X[step], device), shard(Y[step], device)).backward()
        sgd(ddp.parameters())
        close(mine, ref, f"DDP step {step} on {device}")
        assert ddp.reducer.overlapped >= 1  # a bucket went out before backward ended
    # without the averaging, a shard's step is not the full batch's (the check can fail)
    full, lone = MLP(device, seed=100), MLP(device, seed=100)
    loss_of(full, gt.tensor(X[0], device=device), gt.tensor(Y[0], device=device)).backward()
    loss_of(lone, shard(X[0], device), shard(Y[0], device)).backward()
    sgd(full.parameters())
    sgd(lone.parameters())
    if N > 1:
        try:
            close(lone, full, "x")
            raise AssertionError("a shard alone must not match")
        except AssertionError as exc:
            assert "parameters differ" in str(exc)

    # no_sync: two micro-batches (halves of each rank's shard), one synchronised backward
    x, y = shard(X[0], device), shard(Y[0], device)
    h = (B // N) // 2
    loss_of(ref, gt.tensor(X[0], device=device), gt.tensor(Y[0], device=device)).backward()
    sgd(ref.parameters())
    with ddp.no_sync():
        (loss_of(ddp, x[:h], y[:h]) * 0.5).backward()
    (loss_of(ddp, x[h:], y[h:]) * 0.5).backward()
    sgd(ddp.parameters())
    close(mine, ref, f"no_sync accumulation on {device}")

# find_unused_parameters: a parameter no forward uses
ref, mine = MLP("cpu", 1, spare=True), MLP("cpu", 1, spare=True)
ddp = DDP(mine, find_unused_parameters=True)
for step in range(2):
    loss_of(ref, gt.tensor(X[step]), gt.tensor(Y[step])).backward()
    sgd(ref.parameters())
    loss_of(ddp, shard(X[step], "cpu"), shard(Y[step], "cpu")).backward()
    assert mine.spare.grad is not None and not mine.spare.grad.any()
    sgd(ddp.parameters())
    close(mine, ref, "find_unused_parameters")
ddp2 = DDP(MLP("cpu", 1, spare=True))
loss_of(ddp2, shard(X[0], "cpu"), shard(Y[0], "cpu")).backward()
try:
    ddp2(shard(X[0], "cpu"))
    raise AssertionError("an unused parameter must be reported")
except RuntimeError as exc:
    assert "find_unused_parameters=True" in str(exc)
    checks += 1

# average_gradients by hand
ref, mine = MLP("cpu", 2), MLP("cpu", 2)
for step in range(2):
    loss_of(ref, gt.tensor(X[step]), gt.tensor(Y[step])).backward()
    sgd(ref.parameters())
    loss_of(mine, shard(X[step], "cpu"), shard(Y[step], "cpu")).backward()
    dist.average_gradients(mine.parameters(), bucket_cap_mb=64 / 2**20)
    sgd(mine.parameters())
    close(mine, ref, "average_gradients")

report(checks)
dist.destroy_process_group()
