"""format_summary: torch's memory_summary() table, cell for cell."""

from __future__ import annotations

from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.raw import HostRawSource
from gpu_tensor.memory.stats import empty_stats
from gpu_tensor.memory.summary import format_summary

MiB = 1 << 20

# torch's output for torch.zeros(1024*1024, dtype=torch.uint8, device='cuda') (PR #91854;
# research/pytorch-memory.md §2.2), with our title, and our two fragmentation lines below.
GOLDEN = """\
|===========================================================================|
|                  gpu_tensor CUDA memory summary, device ID 0              |
|---------------------------------------------------------------------------|
|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |
|       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|       from small pool |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Active memory         |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |
|       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|       from small pool |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Requested memory      |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |
|       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|       from small pool |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |
|---------------------------------------------------------------------------|
| GPU reserved memory   |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |
|       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|       from small pool |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Non-releasable memory |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |
|       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|       from small pool |   1024 KiB |   1024 KiB |   1024 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Allocations           |       1    |       1    |       1    |       0    |
|       from large pool |       0    |       0    |       0    |       0    |
|       from small pool |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| Active allocs         |       1    |       1    |       1    |       0    |
|       from large pool |       0    |       0    |       0    |       0    |
|       from small pool |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| GPU reserved segments |       1    |       1    |       1    |       0    |
|       from large pool |       0    |       0    |       0    |       0    |
|       from small pool |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| Non-releasable allocs |       1    |       1    |       1    |       0    |
|       from large pool |       0    |       0    |       0    |       0    |
|       from small pool |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| Oversize allocations  |       0    |       0    |       0    |       0    |
|---------------------------------------------------------------------------|
| Oversize GPU segments |       0    |       0    |       0    |       0    |
|===========================================================================|
| Reserved but unallocated: 1.00 MiB     Largest free block: 1.00 MiB       |
| Fragmentation 1-alloc/reserved: 50.0%   Peak reserved/peak alloc: 2.00    |
|===========================================================================|
"""


def test_golden_one_mib_allocation():
    a = CachingAllocator(HostRawSource(64 * MiB), config=parse_alloc_conf(""))
    a.malloc(MiB)
    assert format_summary(a.stats(), 0) == GOLDEN


def test_every_line_is_75_columns_inside_the_frame():
    text = format_summary(empty_stats(), 3, abbreviated=True)
    lines = text.splitlines()
    assert all(len(line) == 77 and line[0] == line[-1] == "|" for line in lines)
    assert "device ID 3" in lines[1]
    assert not any("from large pool" in line for line in lines)  # abbreviated


def test_units_follow_the_all_row_and_counts_switch_at_750k():
    stats = empty_stats()
    stats.update(
        {
            "allocated_bytes.all.current": 3 << 30,  # 3 GiB stays "3072 MiB" (< 768 GiB steps)
            "allocated_bytes.large_pool.current": (3 << 30) - 100,
            "allocated_bytes.small_pool.current": 100,
            "allocation.all.current": 2_000_000,
            "allocation.small_pool.current": 1_999_999,
        }
    )
    lines = format_summary(stats).splitlines()
    alloc = lines.index(next(x for x in lines if x.startswith("| Allocated memory")))
    assert lines[alloc].split("|")[2] == "   3072 MiB "
    assert lines[alloc + 1].split("|")[2] == "   3071 MiB "  # sub-rows use the all-row unit
    assert lines[alloc + 2].split("|")[2] == "      0 MiB "
    count = next(x for x in lines if x.startswith("| Allocations"))
    assert count.split("|")[2] == "    2000 K  "
