"""Numbers drawn from a snapshot dict: per-segment layout, fragmentation, largest blocks.

Pure functions over the torch snapshot structure (research/pytorch-memory.md §3.2),
shared by the text view, the HTML page and --json. They work on a bare torch
snapshot too; our "gpu_tensor" extension only adds exact stats and tensor details.
"""

from __future__ import annotations

import heapq

from gpu_tensor.memory.stats import ARRAY_STATS, POOLS

__all__ = [
    "device_of",
    "segments_of",
    "fragmentation",
    "largest_allocations",
    "derive_stats",
    "stats_of",
    "oom_events",
]

_POOLS = ("small", "large")


def device_of(snap: dict, device: int | None = None) -> int:
    """The device to show: the one asked for, else the one our extension describes, else 0."""
    if device is not None:
        return device
    dev = (snap.get("gpu_tensor") or {}).get("device")
    return dev if isinstance(dev, int) and not isinstance(dev, bool) else 0


def segments_of(snap: dict, device: int | None = None) -> list[dict]:
    """Segments sorted by address, each block given an 'address' (torch's C++ side stores
    none; its converter adds them up from the segment base, and so do we when absent)."""
    out = []
    for seg in snap["segments"]:
        if device is not None and seg.get("device", device) != device:
            continue
        cursor = seg["address"]
        blocks = []
        for block in seg["blocks"]:
            # in place (idempotent): a copy per block would cost a large snapshot's size again
            block.setdefault("address", cursor)
            cursor = block["address"] + block["size"]
            blocks.append(block)
        seg = dict(seg, blocks=blocks)
        seg.setdefault("segment_type", "large" if seg["total_size"] > (2 << 20) else "small")
        out.append(seg)
    out.sort(key=lambda s: (s.get("device", 0), s["address"]))
    return out


def _sum(blocks, state: str, key: str = "size") -> int:
    return sum(int(b.get(key, b["size"]) or 0) for b in blocks if b["state"] == state)


def fragmentation(segments: list[dict]) -> dict:
    """Where the reserved bytes are: allocated, waiting on stream events, free; and how
    usable the free part is (its largest piece, what empty_cache could give back)."""
    blocks = [b for s in segments for b in s["blocks"]]
    reserved = sum(s["total_size"] for s in segments)
    allocated = _sum(blocks, "active_allocated")
    requested = _sum(blocks, "active_allocated", "requested_size")
    pending = _sum(blocks, "active_pending_free")
    free = _sum(blocks, "inactive")
    free_blocks = [b["size"] for b in blocks if b["state"] == "inactive"]
    largest_free = max(free_blocks, default=0)
    # A segment that is one free block can be returned by empty_cache(); free blocks
    # inside split segments cannot (torch's "non-releasable" inactive_split).
    releasable = sum(
        s["total_size"]
        for s in segments
        if len(s["blocks"]) == 1 and s["blocks"][0]["state"] == "inactive"
    )
    return {
        "segments": len(segments),
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "requested_bytes": requested,
        "pending_free_bytes": pending,
        "free_bytes": free,
        "free_blocks": len(free_blocks),
        "largest_free_block": largest_free,
        "releasable_bytes": releasable,
        "non_releasable_free_bytes": free - releasable,
        "rounding_waste_bytes": allocated - requested,
        # 0 when all free bytes are one block; near 1 when they are scattered slivers.
        "external_fragmentation": (1.0 - largest_free / free) if free else 0.0,
        "utilisation": (allocated / reserved) if reserved else 0.0,
    }


def live_tensors(snap: dict) -> list[dict]:
    """The snapshot's live-tensor records (our extension; optional, may be null)."""
    ext = snap.get("gpu_tensor")
    live = ext.get("live_tensors") if isinstance(ext, dict) else None
    return [t for t in live if isinstance(t, dict)] if isinstance(live, list) else []


def _live_by_address(snap: dict) -> dict[int, dict]:
    out = {}
    for t in live_tensors(snap):
        addr = t.get("address", t.get("ptr", t.get("data_ptr")))
        if isinstance(addr, int):
            out[addr] = t
    return out


def largest_allocations(segments: list[dict], snap: dict, top: int = 10) -> list[dict]:
    """The `top` largest allocated blocks with their creation frames; when the snapshot
    carries our live-tensor list, each also gets the tensors' shapes and dtypes."""
    live = _live_by_address(snap)
    rows = []
    # the top blocks first (heapq): rows are built for those only, not for every block
    allocated = (
        (-b["size"], b["address"], si, b)
        for si, seg in enumerate(segments)
        for b in seg["blocks"]
        if b["state"] == "active_allocated"
    )
    for _, _, si, block in heapq.nsmallest(top, allocated, key=lambda e: e[:2]):
        seg = segments[si]
        lo, hi = block["address"], block["address"] + block["size"]
        tensors = [t for a, t in live.items() if lo <= a < hi]
        frames = list(block.get("frames") or [])
        if not frames:
            for t in tensors:
                frames = list(t.get("frames") or [])
                if frames:
                    break
        rows.append(
            {
                "address": block["address"],
                "size": block["size"],
                "requested_size": block.get("requested_size", block["size"]),
                "segment": si,
                "stream": seg.get("stream", 0),
                "tensors": [
                    {"shape": t.get("shape"), "dtype": t.get("dtype"), "site": t.get("site")}
                    for t in tensors
                ],
                "frames": [f for f in frames if isinstance(f, dict)],
            }
        )
    rows.sort(key=lambda r: (-r["size"], r["address"]))
    return rows[:top]


def derive_stats(segments: list[dict]) -> dict:
    """torch-named stats rebuilt from segments alone (a bare torch snapshot has none).
    Only current values are knowable; peaks are set to current and lifetime totals to 0."""
    stats: dict[str, int] = {}

    def put(stat: str, pool: str, value: int) -> None:
        for metric in ("current", "peak"):
            stats[f"{stat}.{pool}.{metric}"] = stats.get(f"{stat}.{pool}.{metric}", 0) + value
        stats.setdefault(f"{stat}.{pool}.allocated", 0)
        stats.setdefault(f"{stat}.{pool}.freed", 0)

    for pool in POOLS:
        for stat in ARRAY_STATS:
            put(stat, pool, 0)
    for seg in segments:
        pools = ("all", "small_pool" if seg["segment_type"] == "small" else "large_pool")
        blocks = seg["blocks"]
        split = len(blocks) > 1
        for pool in pools:
            put("segment", pool, 1)
            put("reserved_bytes", pool, seg["total_size"])
            for b in blocks:
                if b["state"] == "active_allocated":
                    put("allocation", pool, 1)
                    put("allocated_bytes", pool, b["size"])
                    put("requested_bytes", pool, b.get("requested_size", b["size"]))
                if b["state"] != "inactive":
                    put("active", pool, 1)
                    put("active_bytes", pool, b["size"])
                elif split:
                    put("inactive_split", pool, 1)
                    put("inactive_split_bytes", pool, b["size"])
    for key in ("num_alloc_retries", "num_ooms", "num_sync_all_streams"):
        stats[key] = 0
    return stats


def stats_of(snap: dict, segments: list[dict], device: int | None = None) -> tuple[dict, bool]:
    """(stats, exact): the allocator's own stats from our extension when it describes this
    device, else stats derived from the segments (exact=False: peaks and totals unknown)."""
    ext = snap.get("gpu_tensor") or {}
    stats = ext.get("memory_stats")
    if isinstance(stats, dict) and stats and device_of(snap) == device_of(snap, device):
        return stats, True
    stats = derive_stats(segments)
    stats["num_ooms"] = len(oom_events(snap, device_of(snap, device)))
    return stats, False


def oom_events(snap: dict, device: int | None = None) -> list[dict]:
    """Every 'oom' entry in the recorded history of `device` (torch records size and
    device_free), or of every device when None."""
    traces = snap.get("device_traces") or []
    if device is not None:
        traces = traces[device : device + 1]
    return [
        e for trace in traces for e in trace if isinstance(e, dict) and e.get("action") == "oom"
    ]
