"""gt.utils.data: datasets, samplers, DataLoader batching, shuffling, pinning, prefetch."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.utils.data import (
    BatchSampler,
    DataLoader,
    RandomSampler,
    TensorDataset,
    default_collate,
    progress,
)


def _dataset(n=10, device=None):
    x = gt.arange(n * 2, device=device).float().reshape(n, 2)
    return TensorDataset(x, gt.arange(n, device=device))


def test_tensor_dataset_and_errors():
    ds = _dataset()
    assert len(ds) == 10
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(gt.zeros(3), gt.zeros(4))


def test_batches_in_order_with_and_without_drop_last():
    batches = list(DataLoader(_dataset(), batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2)
    loader = DataLoader(_dataset(), batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(DataLoader(_dataset(), batch_size=4)) == 3


def test_shuffle_is_a_permutation_reproducible_from_the_generator():
    def epoch(seed):
        loader = DataLoader(
            _dataset(), batch_size=3, shuffle=True, generator=np.random.default_rng(seed)
        )
        return [i for _, y in loader for i in y.tolist()]

    a, b, c = epoch(5), epoch(5), epoch(6)
    assert sorted(a) == list(range(10)) and a == b and a != c
    x_of = {int(y): x for x, y in zip(*_dataset().tensors, strict=True)}
    for x, y in DataLoader(_dataset(), batch_size=4, shuffle=True):
        for xi, yi in zip(x, y, strict=True):  # features stay with their labels
            assert xi.tolist() == x_of[int(yi)].tolist()


def test_pin_memory_and_prefetch_to_a_device(device):
    # host data explicitly: where cuda exists it is the default device, and batches of
    # device data have nothing to pin (they stay where they are)
    loader = DataLoader(_dataset(device="cpu"), batch_size=4, pin_memory=True)
    assert all(x.is_pinned() and y.is_pinned() for x, y in loader)
    resident = list(DataLoader(_dataset(device=device), batch_size=4, pin_memory=True))
    assert all(x.device.type == device for x, _ in resident)
    moved = list(DataLoader(_dataset(device="cpu"), batch_size=4, pin_memory=True, device=device))
    assert all(x.device.type == device for x, _ in moved)
    assert [y.cpu().tolist() for _, y in moved] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_generic_datasets_collate_like_torch():
    samples = [{"x": gt.ones(2) * i, "n": i} for i in range(5)]
    (batch,) = list(DataLoader(samples, batch_size=5))
    assert batch["x"].shape == (5, 2) and batch["n"].tolist() == [0, 1, 2, 3, 4]
    pairs = default_collate([(1.0, gt.zeros(3)), (2.0, gt.ones(3))])
    assert pairs[0].dtype is gt.float64 and pairs[1].shape == (2, 3)  # torch: floats -> f64
    first = next(iter(DataLoader(samples, batch_size=None)))  # default_convert: a new dict
    assert first.keys() == samples[0].keys() and first["x"] is samples[0]["x"]


def test_argument_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(_dataset(), batch_size=0)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(_dataset(), sampler=RandomSampler(_dataset()), shuffle=True)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(_dataset(), persistent_workers=True)
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]


def test_progress_wraps_with_tqdm_only_when_installed():
    items = [1, 2, 3]
    wrapped = progress(items, disable=True)
    try:
        import tqdm  # noqa: F401
    except ImportError:
        assert wrapped is items
    else:
        assert list(wrapped) == items
