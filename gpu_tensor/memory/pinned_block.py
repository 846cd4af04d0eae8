"""The pinned pool's sizes and records: pages, segment classes, blocks, segments, timings.

`PinnedPool` (pinned.py) is the policy: which block serves a request, when a freed block may
be reused, when a segment goes back to the system. What it counts in lives here: the page
(every block is whole pages), the segment classes a request above 1 MiB rounds to
(`round_size`, eight per power of two), the small-pool cut and segment, the block and
segment records that tile pinned memory, the error raised when the system refuses to pin,
and the µs totals of the slow driver calls. Its own file because these are the nouns the
policy is written in and none of them decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_tensor.memory.sizes import SMALL_BUFFER, SMALL_SIZE

__all__ = ["PAGE", "PinnedBlock", "PinnedMemoryError", "round_size"]

PAGE = 4096  # page-locking works on whole pages; a smaller unit would only share pages
CLASSES_PER_OCTAVE = 8  # 8 segment classes per power of two: worst case 1/8 = 12.5 % overhead
_PAGE_ROUNDED_BELOW = PAGE * CLASSES_PER_OCTAVE  # below 32 KiB a class step would be < 1 page
SMALL_REQUEST = SMALL_SIZE  # requests up to 1 MiB share small segments (device allocator's cut)
SMALL_SEGMENT = SMALL_BUFFER  # 2 MiB: one pinning call serves 2+ small buffers, like the device's


def _pages(nbytes: int) -> int:
    """Whole pages for ``nbytes`` (one at least): a block's size."""
    return max(PAGE, -(-nbytes // PAGE) * PAGE)


def round_size(nbytes: int) -> int:
    """The segment class (bytes pinned) for a request of ``nbytes`` that needs a new segment."""
    if nbytes < 0:
        raise ValueError(f"pinned allocation size must be >= 0, got {nbytes}")
    if nbytes <= _PAGE_ROUNDED_BELOW:
        return _pages(nbytes)
    step = (1 << (nbytes.bit_length() - 1)) // CLASSES_PER_OCTAVE
    return -(-nbytes // step) * step


class PinnedMemoryError(MemoryError):
    """The system refused to page-lock more host memory, even after the cache was emptied."""


@dataclass(eq=False)
class PinnedBlock:
    """A run of pages inside a pinned segment. ``ptr``/``size``: its bytes; ``requested_size``:
    what the caller asked for; ``streams``: every stream that used it since malloc."""

    ptr: int
    size: int
    segment: _Segment
    requested_size: int = 0
    allocated: bool = False
    streams: set = field(default_factory=set)
    tag: dict | None = None  # free for the caller (transfer keeps shape/dtype/ready event)
    prev: PinnedBlock | None = None  # address-ordered neighbours in the same segment
    next: PinnedBlock | None = None

    def __repr__(self) -> str:
        state = "allocated" if self.allocated else "free"
        return f"PinnedBlock(ptr=0x{self.ptr:x}, size={self.size}, {state})"


@dataclass(eq=False)
class _Segment:
    """One raw page-locked allocation; blocks tile it."""

    ptr: int
    size: int
    small: bool
    first: PinnedBlock | None = None


class _Timing:
    """µs totals for the slow driver calls (torch's host_alloc_time / host_free_time)."""

    __slots__ = ("total", "max", "min", "count")

    def __init__(self) -> None:
        self.total = self.max = self.min = 0.0
        self.count = 0

    def add(self, us: float) -> None:
        self.min = us if self.count == 0 else min(self.min, us)
        self.max = max(self.max, us)
        self.total += us
        self.count += 1

    def as_dict(self, prefix: str) -> dict:
        avg = self.total / self.count if self.count else 0.0
        return {
            f"{prefix}.total": self.total,
            f"{prefix}.max": self.max,
            f"{prefix}.min": self.min,
            f"{prefix}.count": self.count,
            f"{prefix}.avg": avg,
        }
