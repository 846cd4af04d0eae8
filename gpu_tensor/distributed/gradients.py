"""average_gradients: the data-parallel step after backward(), done by hand.

Gradients are flattened into buckets of about `bucket_cap_mb` per (device, dtype), each
bucket averaged with one all_reduce (fewer, larger messages than one per parameter: MPI and
NCCL reach their bandwidth only on large messages), and copied back into each `.grad`.
"""

from __future__ import annotations

from ..creation import empty
from .collectives import all_reduce
from .reduce_op import ReduceOp

__all__ = ["average_gradients", "buckets_of"]

DEFAULT_BUCKET_MB = 25  # torch DDP's bucket_cap_mb default


def buckets_of(params, bucket_cap_mb: float = DEFAULT_BUCKET_MB) -> list[list]:
    """Group parameters into buckets of one device and dtype, each up to the cap (a
    parameter larger than the cap gets a bucket of its own)."""
    cap = int(bucket_cap_mb * 1024 * 1024)
    buckets, open_by_key = [], {}
    for p in params:
        key = (p.device, p.dtype)
        bucket = open_by_key.get(key)
        if bucket is None or bucket[1] + p.nbytes > cap and bucket[0]:
            bucket = open_by_key[key] = ([], 0)
            buckets.append(bucket[0])
        bucket[0].append(p)
        open_by_key[key] = (bucket[0], bucket[1] + p.nbytes)
    return buckets


def average_gradients(params, group=None, bucket_cap_mb: float = DEFAULT_BUCKET_MB) -> None:
    """Average every parameter's `.grad` over the ranks of `group`, in place. Parameters
    without a gradient count as zero, so every rank reduces the same buckets."""
    params = [p for p in params if p.requires_grad]
    for bucket in buckets_of(params, bucket_cap_mb):
        like = bucket[0]
        flat = empty((sum(p.numel() for p in bucket),), dtype=like.dtype, device=like.device)
        flat.zero_()
        at = 0
        for p in bucket:
            if p.grad is not None:
                flat[at : at + p.numel()].copy_(p.grad.reshape(-1))
            at += p.numel()
        all_reduce(flat, ReduceOp.AVG, group=group)
        at = 0
        for p in bucket:
            chunk = flat[at : at + p.numel()].reshape(p.shape)
            if p.grad is None:
                p.grad = chunk.clone()
            else:
                p.grad.copy_(chunk)
            at += p.numel()
