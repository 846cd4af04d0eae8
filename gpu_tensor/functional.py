"""`gt.functional`: torch.functional's names (torch/functional.py). The ones gpu_tensor
already has (einsum, norm, split, unique, ...) are re-exported; the shape helpers torch
defines there (meshgrid, broadcast_tensors, atleast_Nd, block_diag, cartesian_prod, cdist,
tensordot, chain_matmul, unravel_index) are composed here from differentiable ops, and are
also `gt.<name>` as in torch. stft/istft, lu and the low-rank factorisations are absent."""

from __future__ import annotations

import functools
import math

import gpu_tensor as _gt

_EXISTING = ("einsum", "norm", "split", "unique", "unique_consecutive")

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_shapes",
    "broadcast_tensors",
    "block_diag",
    "cartesian_prod",
    "cdist",
    "chain_matmul",
    "meshgrid",
    "tensordot",
    "unravel_index",
    *(n for n in _EXISTING if hasattr(_gt, n)),
]
globals().update({n: getattr(_gt, n) for n in _EXISTING if hasattr(_gt, n)})


def _tensors(args):
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else args


def _atleast(n, args):
    ts = _tensors(args)
    out = []
    for t in ts:
        t = t if isinstance(t, _gt.Tensor) else _gt.tensor(t)
        if t.ndim < n:
            shape = {
                0: [(1,), (1, 1), (1, 1, 1)],
                1: [None, (1, -1), (1, -1, 1)],
                2: [None, None, (*t.shape, 1)],
            }[t.ndim][n - 1]
            t = t.reshape(shape)
        out.append(t)
    return out[0] if len(args) == 1 and not isinstance(args[0], (list, tuple)) else tuple(out)


def atleast_1d(*tensors):
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    return _atleast(3, tensors)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (torch's errors for mismatches)."""
    dims = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    n = max((len(d) for d in dims), default=0)
    out = [1] * n
    for d in dims:
        for i, size in enumerate(d, n - len(d)):
            if size < 0:
                raise RuntimeError(
                    f"Trying to create tensor with negative dimension {size}: {list(d)}"
                )
            if out[i] == 1 or out[i] == size:
                out[i] = size if out[i] == 1 else out[i]
            elif size != 1:
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single "
                    f"shape.  Mismatch is between {out[i]} and {size} at "
                    f"dimension {i}"
                )
    return _gt.Size(out)


def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common shape."""
    ts = _tensors(tensors)
    shape = broadcast_shapes(*(t.shape for t in ts))
    return tuple(t.expand(shape) for t in ts)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids; indexing='ij' (torch's default, with torch's warning when not
    given) or 'xy' (the first two dims swapped)."""
    ts = _tensors(tensors)
    if indexing is None:
        import warnings

        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass "
            "the indexing argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
    flat = [t.reshape(-1) for t in ts]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = [t.shape[0] for t in flat]
    grids = []
    for k, t in enumerate(flat):
        view = [1] * len(flat)
        view[k] = -1
        grids.append(t.reshape(view).expand(shape))
    if swap:  # 'xy': the grids of the swapped inputs, handed back in the callers' order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination, one per row (a 1-D result for a single tensor)."""
    ts = _tensors(tensors)
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return _gt.stack([g.reshape(-1) for g in grids], 1)


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) on the diagonal of one zero matrix."""
    mats = []
    for t in tensors:
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer "
                f"dimensions. Input {len(mats)} has {t.ndim} dimensions"
            )
        mats.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not mats:
        return _gt.empty((1, 0))
    dtype = functools.reduce(_gt.promote_types, (m.dtype for m in mats))
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    parts, c = [], 0
    for m in mats:
        left = _gt.zeros((m.shape[0], c), dtype=dtype, device=m.device)
        right = _gt.zeros((m.shape[0], cols - c - m.shape[1]), dtype=dtype, device=m.device)
        parts.append(_gt.cat([left, m.to(dtype), right], 1))
        c += m.shape[1]
    return _gt.cat(parts, 0) if rows else _gt.empty((0, cols), dtype=dtype)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """||x1[..., i, :] - x2[..., j, :]||_p for every pair (batched over leading dims)."""
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        return (diff != 0).to(x1.dtype).sum(-1)
    if math.isinf(p):
        return diff.abs().amax(-1)
    return diff.abs().pow(p).sum(-1).pow(1.0 / p) if p != 2 else (diff * diff).sum(-1).sqrt()


def chain_matmul(*matrices, out=None):
    """matrices[0] @ matrices[1] @ ... (torch's deprecated name for linalg.multi_dot)."""
    ms = _tensors(matrices)
    if len(ms) == 1:  # torch returns a copy of a lone matrix (CloneBackward0), never the input
        result = ms[0].clone()
    else:
        result = functools.reduce(lambda a, b: a.matmul(b), ms)
    return result if out is None else out.copy_(result)


def tensordot(a, b, dims=2, out=None):
    """Contract the last `dims` dims of a with the first of b (or the listed dim pairs)."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif isinstance(dims, _gt.Tensor):
        return tensordot(a, b, dims.tolist(), out)
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    dims_a = [d % a.ndim for d in dims_a]
    dims_b = [d % b.ndim for d in dims_b]
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    k = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(*free_a, *dims_a).reshape(-1, k)
    right = b.permute(*dims_b, *free_b).reshape(k, -1)
    result = left.matmul(right).reshape(
        *(a.shape[d] for d in free_a), *(b.shape[d] for d in free_b)
    )
    return result if out is None else out.copy_(result)


def unravel_index(indices, shape):
    """The coordinates of flat `indices` in `shape`, one tensor per dim."""
    idx = indices if isinstance(indices, _gt.Tensor) else _gt.tensor(indices)
    if idx.dtype.is_floating_point or idx.dtype is _gt.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {idx.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = math.prod(shape)
    if idx.numel() and (int(idx.min()) < -total or int(idx.max()) >= total):
        raise RuntimeError(
            "'indices' must be in range [-N, N-1] where N is the number of elements in 'shape'"
        )
    idx = idx.remainder(total) if total else idx
    coords = []
    for size in reversed(shape):
        coords.append(idx.remainder(size))
        idx = idx.div(size, rounding_mode="floor")
    return tuple(reversed(coords))
