"""default_collate / default_convert: samples -> a batch, by torch's rules.

Tensors stack along a new dim 0; numpy arrays become tensors and stack; Python floats a
float64 tensor, ints an int64 one, bools a bool one; strings stay a list; dicts and
namedtuples collate field by field; other sequences transpose into a list of batches.
"""

from __future__ import annotations

import collections.abc

__all__ = ["default_collate", "default_convert"]

_ERR = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def default_collate(batch):
    from gpu_tensor._tensor import Tensor
    from gpu_tensor.creation import as_tensor, tensor
    from gpu_tensor.dtype import float64
    from gpu_tensor.ops.join import stack

    first = batch[0]
    if isinstance(first, Tensor):
        return stack(batch, 0)
    if isinstance(first, float):
        return tensor(batch, dtype=float64)
    if isinstance(first, int):  # bool included: torch.tensor keeps bool
        return tensor(batch)
    if isinstance(first, (str, bytes)):
        return batch
    if type(first).__module__ == "numpy":
        if getattr(first, "dtype", None) is not None and first.dtype.kind in "OSUV":
            raise TypeError(_ERR.format(first.dtype))
        return stack([as_tensor(b) for b in batch], 0)
    if isinstance(first, collections.abc.Mapping):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(first, collections.abc.Sequence):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch, strict=True)]
    raise TypeError(_ERR.format(type(first)))


def default_convert(data):
    """batch_size=None: numpy arrays become tensors, containers are walked, the rest kept."""
    from gpu_tensor.creation import as_tensor

    if (
        type(data).__module__ == "numpy"
        and getattr(data, "dtype", None) is not None
        and data.dtype.kind not in "OSUV"
    ):
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return [default_convert(d) for d in data]
    return data
