"""`OutOfMemoryError`: an OOM that says who holds the memory and what to do.

torch's message gives totals; ours adds the largest free block (so
fragmentation is visible), the largest live tensors with their creation sites,
and one hint chosen from the numbers.
"""

from __future__ import annotations

from .live import format_size, live_blocks
from .sizes import round_size

__all__ = ["OutOfMemoryError", "oom_report"]

_TOP_TENSORS_IN_OOM = 5  # enough to name the culprits, short enough to read


class OutOfMemoryError(RuntimeError):
    """The device allocator could not satisfy a request, even after freeing its cache.

    Attributes: requested, device, total, free (device bytes; None when unknown),
    allocated, reserved, reserved_unallocated, largest_free_block, limit (per-process
    fraction cap or None), top_tensors (list of dicts from live_tensors()).
    """

    def __init__(self, message: str = "", **facts):
        super().__init__(message)
        self.__dict__.update(facts)

    @classmethod
    def build(
        cls,
        *,
        requested,
        device,
        total,
        free,
        allocated,
        reserved,
        largest_free_block,
        limit,
        top_tensors,
        emulated,
    ):
        reserved_unallocated = reserved - allocated
        where = f"GPU {device}" + (" (emulated on host memory)" if emulated else "")
        lines = [f"CUDA out of memory. Tried to allocate {format_size(requested)}."]
        if total is not None:
            lines[0] += (
                f" {where} has a total capacity of {format_size(total)} of which "
                f"{format_size(free)} is free."
            )
        if limit is not None:
            lines[0] += f" The per-process limit is {format_size(limit)}."
        lines[0] += (
            f" Of the allocated memory {format_size(allocated)} is allocated by "
            f"gpu_tensor, and {format_size(reserved_unallocated)} is reserved by "
            f"gpu_tensor but unallocated (largest free cached block: "
            f"{format_size(largest_free_block)})."
        )
        if top_tensors:
            lines.append("Largest live tensors:")
            for t in top_tensors:
                what = f"shape {t['shape']} {t['dtype']}" if t["shape"] is not None else t["kind"]
                lines.append(
                    f"  {format_size(t['size']):>12}  {what}  created at {t['site'] or 'unknown'}"
                )
        lines.append(
            "Hint: "
            + _hint(
                requested,
                total,
                free,
                allocated,
                reserved_unallocated,
                limit,
                top_tensors,
                emulated,
            )
        )
        return cls(
            "\n".join(lines),
            requested=requested,
            device=device,
            total=total,
            free=free,
            allocated=allocated,
            reserved=reserved,
            reserved_unallocated=reserved_unallocated,
            largest_free_block=largest_free_block,
            limit=limit,
            top_tensors=top_tensors,
        )


def _hint(requested, total, free, allocated, reserved_unallocated, limit, top, emulated):
    if total is not None and requested > total:
        return (
            f"the request alone is larger than the device ({format_size(total)}); "
            "process the data in smaller pieces (chunks, a smaller batch)"
            + (", or raise GPU_TENSOR_EMULATED_MEMORY_MB." if emulated else ".")
        )
    if reserved_unallocated >= requested:
        return (
            f"{format_size(reserved_unallocated)} is cached but no free block is large "
            "enough (fragmentation). Call gt.cuda.empty_cache() between phases with "
            "different tensor sizes, or set GPU_TENSOR_ALLOC_CONF=max_split_size_mb:128 "
            "so large cached blocks are not split."
        )
    if limit is not None and free is not None and free >= requested:
        return (
            "the device has room but the per-process limit is reached; raise it with "
            "gt.cuda.set_per_process_memory_fraction()."
        )
    if top and allocated and top[0]["size"] * 2 >= allocated:
        return (
            f"one tensor holds {format_size(top[0]['size'])} of the "
            f"{format_size(allocated)} allocated; drop references to it (del) or keep it "
            "on the host until it is needed."
        )
    if emulated:
        return (
            "the emulated device is full; free tensors you no longer need (del), use a "
            "smaller batch, or raise GPU_TENSOR_EMULATED_MEMORY_MB."
        )
    return (
        "free tensors you no longer need (del them and any views), use a smaller batch, "
        "or check gt.cuda.memory.live_tensors() for unexpected holders."
    )


def oom_report(alloc, nbytes: int, stream: int) -> OutOfMemoryError:
    """The OutOfMemoryError for a failed request, with the facts an OOM needs."""
    try:
        free, total = alloc.raw.mem_get_info()
    except Exception:  # noqa: BLE001 - the OOM report must not fail on a stats query
        free = total = None
    if alloc.history is not None:
        # torch's "oom" trace entry carries the rounded request, not the segment it tried
        # to reserve for it, so the history says what the caller asked for.
        alloc.history.record("oom", 0, round_size(nbytes, alloc.config), stream, device_free=free)
    return OutOfMemoryError.build(
        requested=nbytes,
        device=alloc.device_index,
        total=total,
        free=free,
        allocated=alloc._stats.current("allocated_bytes"),
        reserved=alloc._stats.current("reserved_bytes"),
        largest_free_block=alloc._largest_free(),
        limit=alloc._limit,
        top_tensors=live_blocks(alloc, _TOP_TENSORS_IN_OOM),
        emulated=alloc.kind == "emulated",
    )
