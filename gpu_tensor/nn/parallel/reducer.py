"""The gradient reducer behind DistributedDataParallel: buckets, hooks, overlap.

Parameters are bucketed in reverse order (backward produces the last layers' gradients
first, as torch's DDP assumes). A per-parameter gradient hook (`Tensor.register_hook`) copies
each gradient, already summed with any gradient accumulated under no_sync(), into its bucket;
when a bucket is full its averaging all_reduce starts asynchronously while backward goes on
(buckets start strictly in order: MPI and NCCL match collectives by call order, so every rank
must start them in the same one). The hook of the last gradient waits for every bucket and
writes the averages into each `.grad`; its own parameter's average is the gradient the hook
returns (its `.grad` cleared first, so the engine stores the average as it is).
"""

from __future__ import annotations

from ...creation import empty
from ...distributed.collectives import all_reduce
from ...distributed.gradients import buckets_of
from ...distributed.reduce_op import ReduceOp

__all__ = ["Reducer"]


class Reducer:
    def __init__(self, params, group, bucket_cap_mb: float):
        self.params = list(params)
        self.group = group
        self.buckets = buckets_of(reversed(self.params), bucket_cap_mb)
        self.flats = [
            empty((sum(p.numel() for p in b),), dtype=b[0].dtype, device=b[0].device)
            for b in self.buckets
        ]
        self.where = {}
        for i, bucket in enumerate(self.buckets):
            at = 0
            for p in bucket:
                self.where[id(p)] = (i, at)
                at += p.numel()
        self.enabled = True
        self._expected: set[int] = set()
        self._handles = [p.register_hook(self._hook_for(p)) for p in self.params]
        self.reset(None)

    def reset(self, used) -> None:
        """Before a forward: no gradients yet. `used`: ids of the parameters this forward
        reaches (None: all); the others count as zero gradients, ready now."""
        self._ready = [0] * len(self.buckets)
        self._works = [None] * len(self.buckets)
        self._next = 0
        self.overlapped = 0  # buckets started while backward was still running
        self._expected = {id(p) for p in self.params} if used is None else set(used)
        for f in self.flats:
            f.zero_()
        if used is not None:
            for p in self.params:
                if id(p) not in self._expected:
                    self._mark_ready(self.where[id(p)][0])

    @property
    def pending(self) -> bool:
        return bool(self._expected) and self.enabled

    def _hook_for(self, p):
        def hook(grad):
            if not self.enabled or id(p) not in self._expected:
                return None
            b, at = self.where[id(p)]
            total = grad if p.grad is None else p.grad + grad
            self.flats[b][at : at + p.numel()].copy_(total.reshape(-1))
            self._expected.discard(id(p))
            self._mark_ready(b)
            if not self._expected:
                return self._finish(p)
            self.overlapped = self._next
            return None

        return hook

    def _mark_ready(self, b: int) -> None:
        self._ready[b] += 1
        while self._next < len(self.buckets) and self._ready[self._next] == len(
            self.buckets[self._next]
        ):
            self._works[self._next] = all_reduce(
                self.flats[self._next], ReduceOp.AVG, group=self.group, async_op=True
            )
            self._next += 1

    def _finish(self, last):
        """Every bucket is in flight: wait, then hand each parameter its average."""
        for w in self._works:
            if w is not None:
                w.wait()
        out = None
        for bucket, flat in zip(self.buckets, self.flats, strict=True):
            at = 0
            for p in bucket:
                avg = flat[at : at + p.numel()].reshape(p.shape).clone()
                at += p.numel()
                if p is last:
                    p.grad = None  # the engine stores the returned average as .grad
                    out = avg
                elif p.grad is None:
                    p.grad = avg
                else:
                    p.grad.copy_(avg)
        return out

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
