"""Each rank saves its allocator snapshot under one file pattern, for
`gpu-tensor memory-summary rank*.json` to set side by side."""

from __future__ import annotations

__all__ = ["save_rank_snapshot", "snapshot_path"]


def snapshot_path(pattern: str, rank: int, world_size: int) -> str:
    """The pattern with {rank} and {world_size} filled in ('mem_rank{rank}.json')."""
    if "{rank}" not in pattern:
        raise ValueError(
            f"save_rank_snapshot: pattern {pattern!r} must contain '{{rank}}' so "
            "the ranks do not overwrite each other's file, e.g. "
            "'snapshots/rank{rank}.json'"
        )
    try:
        return pattern.format(rank=rank, world_size=world_size)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(
            f"save_rank_snapshot: pattern {pattern!r} may only use {{rank}} and "
            f"{{world_size}} ({exc})"
        ) from None


def save_rank_snapshot(pattern: str = "memory_rank{rank}.json", group=None) -> str:
    """Save this rank's memory snapshot (torch.cuda.memory._snapshot's structure, plus the
    rank) to `pattern` with {rank} filled in; returns the path. Call it on every rank."""
    import json
    from pathlib import Path

    from ..cuda.memory import _snapshot
    from .group import get_rank, get_world_size, is_initialized

    rank = get_rank(group) if is_initialized() else 0
    size = get_world_size(group) if is_initialized() else 1
    path = snapshot_path(pattern, rank, size)
    snap = _snapshot()
    snap["rank"] = rank
    snap["world_size"] = size
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(snap))
    return path
