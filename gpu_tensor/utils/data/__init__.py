"""`gt.utils.data`: datasets, samplers, collation and a DataLoader with torch's arguments,
worker processes included (`num_workers=N`).

    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, pin_memory=True)

One noun per module: dataset.py (Dataset, IterableDataset, TensorDataset, ConcatDataset,
Subset, random_split), sampler.py, collate.py, worker.py (what runs in a worker, and
get_worker_info), loader.py (DataLoader).
"""

from gpu_tensor.utils.progress import progress

from .collate import default_collate, default_convert
from .dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .loader import DataLoader
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .worker import WorkerInfo, get_worker_info

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "ConcatDataset",
    "Subset",
    "random_split",
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
    "DataLoader",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "WorkerInfo",
    "progress",
]
