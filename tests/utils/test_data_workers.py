"""gt.utils.data with worker processes (num_workers > 0): order, seeds, worker info, init
functions, errors with the worker's traceback, timeouts, persistent workers, iterable
datasets, pinned batches, clean shutdown; plus the datasets and samplers torch has.
Workers are forked processes: each test starts at most two, for a few batches."""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.utils.data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n=12, fail_at=None, sleep=0.0):
        self.n, self.fail_at, self.sleep = n, fail_at, sleep

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"bad item {i}")
        if self.sleep:
            time.sleep(self.sleep)
        info = get_worker_info()
        return {
            "x": gt.full((2,), float(i * i)),
            "i": i,
            "worker": -1 if info is None else info.id,
            "pid": os.getpid(),
            "draw": random.random(),
            "seed": -1 if info is None else info.seed,
        }


def test_batches_come_in_sampler_order_from_two_workers():
    loader = DataLoader(Squares(), batch_size=3, num_workers=2)
    batches = list(loader)
    assert [b["i"].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    assert batches[1]["x"].tolist() == [[9.0, 9.0], [16.0, 16.0], [25.0, 25.0]]
    assert [b["worker"][0].item() for b in batches] == [0, 1, 0, 1]  # round-robin
    pids = {int(p) for b in batches for p in b["pid"]}
    assert len(pids) == 2 and os.getpid() not in pids
    assert len(loader) == 4 and get_worker_info() is None


def test_seeds_init_fn_and_worker_info():

    def init(worker_id):
        info = get_worker_info()
        assert info.id == worker_id and info.num_workers == 2
        np.random.seed(info.seed % 2**32)  # torch's advice for numpy in workers

    gt.manual_seed(7)
    loader = DataLoader(Squares(4), batch_size=1, num_workers=2, worker_init_fn=init)
    first = [(b["worker"].item(), b["draw"].item()) for b in loader]
    gt.manual_seed(7)
    again = [(b["worker"].item(), b["draw"].item()) for b in loader]
    assert first == again  # worker seeds come from the seeded default generator
    seen = {w: d for w, d in first}
    assert seen[0] != seen[1]  # ... and differ between workers (base_seed + id)


def test_worker_errors_reraise_with_the_workers_traceback():
    loader = DataLoader(Squares(fail_at=4), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it)["i"].tolist() == [0, 1]
    assert next(it)["i"].tolist() == [2, 3]
    with pytest.raises(ValueError) as info:
        next(it)
    msg = str(info.value)
    assert msg.startswith(
        "Caught ValueError in DataLoader worker process 0.\n"
        "Original Traceback (most recent call last):\n"
    )
    assert "in __getitem__" in msg and msg.rstrip().endswith("ValueError: bad item 4")


def test_init_fn_errors_and_key_errors_reach_the_main_process():
    def bad_init(worker_id):
        raise KeyError("no such key")

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(Squares(4), num_workers=1, worker_init_fn=bad_init))


def test_timeout_and_argument_checks():
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        list(DataLoader(Squares(2, sleep=1), num_workers=1, timeout=0.2))
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(Squares(), num_workers=1, timeout=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(Squares(), prefetch_factor=2)


def test_persistent_workers_serve_every_epoch_and_an_early_break():
    loader = DataLoader(
        Squares(6), batch_size=2, num_workers=2, persistent_workers=True, prefetch_factor=1
    )
    for _ in loader:  # break early: the next epoch must not see this epoch's answers
        break
    pids = None
    for _ in range(2):
        batches = list(loader)
        assert [b["i"].tolist() for b in batches] == [[0, 1], [2, 3], [4, 5]]
        now = {int(p) for b in batches for p in b["pid"]}
        assert pids is None or now == pids  # the same processes every epoch
        pids = now
    workers = loader._workers_iter._workers
    loader._workers_iter.close()
    assert all(not w.is_alive() for w in workers)


def test_shutdown_after_a_break_leaves_no_worker_running():
    it = iter(DataLoader(Squares(40), batch_size=2, num_workers=2))
    next(it)
    workers = list(it._workers)
    del it  # the iterator's end (here: dropped mid-epoch) stops its workers
    deadline = time.monotonic() + 10
    while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(w.is_alive() for w in workers)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def test_iterable_datasets_split_by_worker_info():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    got = [b.tolist() for b in DataLoader(Stream(7), batch_size=2, num_workers=2)]
    assert got == [[0, 2], [1, 3], [4, 6], [5]]  # torch's interleaving of the two streams
    assert sorted(i for b in got for i in b) == list(range(7))
    got = [b.tolist() for b in DataLoader(Stream(5), batch_size=2, num_workers=2, drop_last=True)]
    assert got == [[0, 2], [1, 3]]


def test_pinned_batches_from_workers_land_in_the_pinned_pool():
    ds = TensorDataset(gt.arange(8.0, device="cpu").reshape(4, 2), gt.arange(4, device="cpu"))
    batches = list(DataLoader(ds, batch_size=2, num_workers=2, pin_memory=True))
    assert all(x.is_pinned() and y.is_pinned() for x, y in batches)
    assert [y.tolist() for _, y in batches] == [[0, 1], [2, 3]]


def test_workers_refuse_device_tensors():
    ds = TensorDataset(gt.arange(4.0, device="cuda"))
    with pytest.raises(RuntimeError, match="workers must not use the GPU"):
        list(DataLoader(ds, batch_size=2, num_workers=1))


def test_in_order_false_still_yields_every_batch():
    got = [
        b["i"].tolist() for b in DataLoader(Squares(8), batch_size=2, num_workers=2, in_order=False)
    ]
    assert sorted(got) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_subset_concat_and_random_split():
    ds = TensorDataset(gt.arange(10))
    sub = Subset(ds, [9, 0, 4])
    assert [sub[i][0].item() for i in range(3)] == [9, 0, 4] and len(sub) == 3
    both = ConcatDataset([sub, ds])
    assert len(both) == 13 and both[3][0].item() == 0 and both[-1][0].item() == 9
    assert len(ds + ds) == 20
    a, b = random_split(ds, [0.7, 0.3], generator=gt.Generator().manual_seed(0))
    assert (len(a), len(b)) == (7, 3)
    assert sorted(a.indices + b.indices) == list(range(10))
    a2, _ = random_split(ds, [7, 3], generator=gt.Generator().manual_seed(0))
    assert a2.indices == a.indices
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])


def test_samplers():
    g = gt.Generator().manual_seed(1)
    picks = list(RandomSampler(range(5), replacement=True, num_samples=40, generator=g))
    assert len(picks) == 40 and set(picks) <= set(range(5)) and len(set(picks)) > 1
    more = list(RandomSampler(range(3), num_samples=7, generator=g))
    assert sorted(more[:3]) == [0, 1, 2] and sorted(more[3:6]) == [0, 1, 2]
    assert sorted(SubsetRandomSampler([5, 7, 9], generator=g)) == [5, 7, 9]
    weighted = list(WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], 6, generator=g))
    assert weighted == [2] * 6
    once = list(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False, generator=g))
    assert sorted(once) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)


def test_default_collate_follows_torch():
    assert default_collate([1.0, 2.0]).dtype is gt.float64
    assert default_collate([True, False]).dtype is gt.bool
    assert default_collate([np.float32(1), np.float32(2)]).dtype is gt.float32
    assert [t.tolist() for t in default_collate([(1, 2), (3, 4)])] == [[1, 3], [2, 4]]
    assert default_collate(["a", "b"]) == ["a", "b"]
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers"):
        default_collate([object(), object()])


def test_a_worker_that_dies_is_reported(monkeypatch):
    from gpu_tensor.utils.data import loader as loader_mod

    monkeypatch.setattr(loader_mod, "_POLL_S", 0.1)  # check on the workers often
    it = iter(DataLoader(Squares(8, sleep=0.5), batch_size=2, num_workers=1))
    it._workers[0].kill()
    with pytest.raises(
        RuntimeError,
        match=r"DataLoader worker \(pid\(s\) \d+\) exited "
        "unexpectedly",
    ):
        next(it)


def test_persistent_workers_keep_their_seeds_across_epochs():
    def seeds(loader):
        return sorted({int(s) for b in loader for s in b["seed"]})

    kept = DataLoader(Squares(4), batch_size=2, num_workers=2, persistent_workers=True)
    first = seeds(kept)
    assert len(first) == 2 and first[1] == first[0] + 1  # base + worker id
    assert seeds(kept) == first  # one iterator: torch draws no new base seed
    kept._workers_iter.close()
    fresh = DataLoader(Squares(4), batch_size=2, num_workers=2)
    assert seeds(fresh) != seeds(fresh)  # a new iterator each epoch: a new base seed
