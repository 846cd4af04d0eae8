"""`gt.utils.data`: Dataset, TensorDataset, samplers and a DataLoader with torch's arguments.

    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, pin_memory=True,
                        device="cuda")
    for xb, yb in progress(loader):     # xb, yb already on cuda, uploaded one batch ahead

No worker processes: batches are gathered in the calling thread (a TensorDataset batch is
one index_select per tensor, not batch_size item lookups). `pin_memory=True` puts each batch
in our pinned host pool, so its upload is one async copy. `device=` (our addition; torch
leaves the move to the loop) hands the batches to `gt.utils.prefetch`, which uploads batch
i+1 on a side stream while the caller computes on batch i.
"""

from __future__ import annotations

import math

__all__ = ["Dataset", "TensorDataset", "Sampler", "SequentialSampler", "RandomSampler",
           "BatchSampler", "DataLoader", "default_collate", "progress"]


class Dataset:
    """A map-style dataset: __getitem__(index) and __len__."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class TensorDataset(Dataset):
    """Item i is (t[i] for t in tensors); every tensor has the same first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Sampler:
    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A permutation of the indices each epoch, from `generator` (the one gt.manual_seed
    seeds when None)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if replacement:
            raise NotImplementedError("RandomSampler(replacement=True) is not supported in "
                                      "gpu_tensor yet")
        self.data_source, self.generator = data_source, generator
        self._num_samples = num_samples
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from gpu_tensor.creation import randperm

        n = len(self.data_source)
        order = []
        while len(order) < self.num_samples:
            order += randperm(n, generator=self.generator, device="cpu").tolist()
        return iter(order[:self.num_samples])

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


def default_collate(batch):
    """Stack a list of samples: tensors along a new dim 0, numbers into a tensor, tuples,
    lists and dicts field by field (torch's rules)."""
    from gpu_tensor._tensor import Tensor
    from gpu_tensor.creation import tensor
    from gpu_tensor.ops.join import stack

    first = batch[0]
    if isinstance(first, Tensor):
        return stack(batch, 0)
    if isinstance(first, (bool, int, float)):
        return tensor(batch)
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch, strict=True)]
    if hasattr(first, "__array_interface__"):
        from gpu_tensor.creation import as_tensor

        return stack([as_tensor(b) for b in batch], 0)
    return batch  # strings and other objects stay a list, as in torch


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True, device=None):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if num_workers > 0:
            raise NotImplementedError(
                "DataLoader(num_workers>0): gpu_tensor loads in the calling thread; use "
                "num_workers=0 with device=... to overlap the upload with compute instead")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                          or drop_last):
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                             "shuffle, sampler, and drop_last")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.pin_memory, self.generator, self.device = pin_memory, generator, device
        self.prefetch_factor = 2 if prefetch_factor is None else prefetch_factor
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        self.sampler = sampler
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn
        self._fast = collate_fn is None and isinstance(dataset, TensorDataset)
        if self.collate_fn is None:
            self.collate_fn = default_collate

    def __len__(self):
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)

    def _batches(self):
        if self.batch_sampler is None:  # batch_size=None: one sample at a time, uncollated
            for i in self.sampler:
                yield self.dataset[i]
            return
        for indices in self.batch_sampler:
            if self._fast:
                yield self._gather(indices)
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def _gather(self, indices):
        """A TensorDataset batch: one index_select per tensor, on the tensor's device."""
        from gpu_tensor.creation import tensor

        out = []
        for t in self.dataset.tensors:
            idx = tensor(indices, device=t.device)
            out.append(t.index_select(0, idx))
        return out

    def __iter__(self):
        from gpu_tensor.utils.prefetch import _map_tensors, prefetch

        batches = self._batches()
        if self.pin_memory:
            batches = (_map_tensors(b, _pin) for b in batches)
        if self.device is not None:
            batches = prefetch(batches, self.device, depth=self.prefetch_factor)
        return iter(batches)


def _pin(t):
    return t.pin_memory() if t.device.type == "cpu" else t


def progress(iterable, **kwargs):
    """`iterable` wrapped in a tqdm progress bar when tqdm is installed, else unchanged
    (gpu_tensor does not depend on tqdm)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, **kwargs)
