"""`progress`: a tqdm progress bar around an iterable when tqdm is installed."""

from __future__ import annotations

__all__ = ["progress"]


def progress(iterable, **kwargs):
    """`iterable` wrapped in a tqdm progress bar when tqdm is installed, else unchanged
    (gpu_tensor does not depend on tqdm)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, **kwargs)
