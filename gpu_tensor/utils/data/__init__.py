"""`gt.utils.data`: datasets, samplers, collation and a DataLoader with torch's arguments,
worker processes included (`num_workers=N`).

    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, pin_memory=True)

One noun per module: dataset.py (Dataset, IterableDataset, TensorDataset, ConcatDataset,
Subset, random_split), sampler.py, collate.py, worker.py (what runs in a worker, and
get_worker_info), loader.py (DataLoader).
"""

from gpu_tensor.utils.progress import progress

from .collate import *  # noqa: F403
from .collate import __all__ as _collate
from .dataset import *  # noqa: F403
from .dataset import __all__ as _dataset
from .loader import DataLoader
from .sampler import *  # noqa: F403
from .sampler import __all__ as _sampler
from .worker import WorkerInfo, get_worker_info

__all__ = [
    *_dataset,
    *_sampler,
    "DataLoader",
    *_collate,
    "get_worker_info",
    "WorkerInfo",
    "progress",
]
