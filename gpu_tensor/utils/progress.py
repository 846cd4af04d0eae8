"""`progress`: a tqdm progress bar around an iterable when tqdm is installed."""

from __future__ import annotations

__all__ = ["progress"]


def progress(iterable, **kwargs):
    """`iterable` wrapped in a tqdm progress bar; unchanged where tqdm is missing (it is a
    dependency of gpu_tensor, but an environment may have removed it)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, **kwargs)
