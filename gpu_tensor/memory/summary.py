"""`format_summary(stats)`: torch.cuda.memory_summary()'s table, from a stats dict.

The table is torch's, cell for cell (75 columns, `|`-framed, binary units that
follow the "all" row), so people who read torch's summary read ours. Only the
title names gpu_tensor, and three lines are added under the table:
reserved-but-unallocated, the largest free block, and fragmentation ratios.
Pure: it formats a dict and never touches a device.
"""

from __future__ import annotations

from .live import format_size

__all__ = ["format_summary"]

_WIDTH = 75  # torch's table width
_SIZE_UNITS = ("B  ", "KiB", "MiB", "GiB", "TiB", "PiB")
_SIZE_STEP = 768 * 1024  # move to the next unit once the "all" value reaches this many
_COUNT_UNITS = (" ", "K", "M")
_COUNT_STEP = 750 * 1000

_ROWS = (
    ("allocated_bytes", "Allocated memory", "size"),
    ("active_bytes", "Active memory", "size"),
    ("requested_bytes", "Requested memory", "size"),
    ("reserved_bytes", "GPU reserved memory", "size"),
    ("inactive_split_bytes", "Non-releasable memory", "size"),
    ("allocation", "Allocations", "count"),
    ("active", "Active allocs", "count"),
    ("segment", "GPU reserved segments", "count"),
    ("inactive_split", "Non-releasable allocs", "count"),
)
_SINGLE_ROWS = (
    ("oversize_allocations", "Oversize allocations"),
    ("oversize_segments", "Oversize GPU segments"),
)
_METRICS = ("current", "peak", "allocated", "freed")


def _scaled(value: int, reference: float, units, step: float, base: int) -> tuple[int, str]:
    """`value` in one of `units` (each `base` times the one before): the next unit up for
    as long as `reference`, in the current unit, is at least `step`."""
    unit = units[0]
    for next_unit in units[1:]:
        if reference < step:
            break
        unit = next_unit
        value //= base
        reference /= base
    return value, unit


def _size(value: int, reference: float) -> str:
    value, unit = _scaled(value, reference, _SIZE_UNITS, _SIZE_STEP, 1024)
    return f"{value:6d} {unit}"


def _count(value: int, reference: float) -> str:
    value, unit = _scaled(value, reference, _COUNT_UNITS, _COUNT_STEP, 1000)
    return f"{value:7d} {unit} "


def _row(name: str, cells) -> str:
    return f" {name:<21} | " + " | ".join(cells) + " "


def format_summary(
    stats: dict, device: int = 0, abbreviated: bool = False, title: str | None = None
) -> str:
    """torch's memory_summary() text for `stats` (a memory_stats() dict). `title` replaces
    the device heading (the pinned host pool's section uses it)."""
    get = stats.get
    heading = title or f"gpu_tensor CUDA memory summary, device ID {device:<14d}"
    lines = [
        "=" * _WIDTH,
        f" {'':16} {heading} ",
        "-" * _WIDTH,
        f"  {'':9} CUDA OOMs: {get('num_ooms', 0):<12d} | {'':6} "
        f"cudaMalloc retries: {get('num_alloc_retries', 0):<8d}  ",
        "=" * _WIDTH,
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ",
    ]
    for key, name, kind in _ROWS:
        fmt = _size if kind == "size" else _count
        lines.append("-" * _WIDTH)
        pools = [("all", name)]
        if not abbreviated:
            pools += [
                ("large_pool", "      from large pool"),
                ("small_pool", "      from small pool"),
            ]
        reference = None
        for pool, label in pools:
            values = [get(f"{key}.{pool}.{m}", 0) for m in _METRICS]
            if reference is None:
                reference = values  # sub-rows use the "all" row's units
            lines.append(_row(label, [fmt(v, r) for v, r in zip(values, reference, strict=True)]))
    for key, name in _SINGLE_ROWS:
        lines.append("-" * _WIDTH)
        values = [get(f"{key}.{m}", 0) for m in _METRICS]
        lines.append(_row(name, [_count(v, v) for v in values]))
    lines.append("=" * _WIDTH)
    lines += _fragmentation_lines(stats)
    lines.append("=" * _WIDTH)
    return "|" + "|\n|".join(line.ljust(_WIDTH) for line in lines) + "|\n"


def _fragmentation_lines(stats: dict) -> list[str]:
    get = stats.get
    reserved = get("reserved_bytes.all.current", 0)
    allocated = get("allocated_bytes.all.current", 0)
    peak_reserved = get("reserved_bytes.all.peak", 0)
    peak_allocated = get("allocated_bytes.all.peak", 0)
    unallocated = reserved - allocated
    largest = get("largest_free_block_bytes")
    frag = f"{100.0 * unallocated / reserved:.1f}%" if reserved else "-"
    ratio = f"{peak_reserved / peak_allocated:.2f}" if peak_allocated else "-"
    return [
        f" Reserved but unallocated: {format_size(unallocated):<12}"
        f" Largest free block: {format_size(largest) if largest is not None else '-'}",
        f" Fragmentation 1-alloc/reserved: {frag:<7} Peak reserved/peak alloc: {ratio}",
    ]
