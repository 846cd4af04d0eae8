"""`AllocatorConfig`: allocator options, parsed from GPU_TENSOR_ALLOC_CONF.

The syntax is torch's PYTORCH_CUDA_ALLOC_CONF: `opt:val,opt2:val2`. Options:

- `max_split_size_mb` (>= 20): blocks of at least this size are "oversize": never
  split, and reused only within `max_non_split_rounding_mb` of the request.
- `max_non_split_rounding_mb` (default 20).
- `garbage_collection_threshold` (0 < t < 1): once a memory fraction is set, free
  old cached unsplit segments before asking the device for more than t * limit.
- `roundup_power2_divisions`: one power of two N, or `[256:1,512:2,>:4]` (MB keys).
- `expandable_segments` (True/False; default: on wherever the raw source can map pages):
  one reserved address range per pool and stream, mapped in pages, whose free pages are
  restitched to serve requests no free block fits (memory/expandable.py). The emulated
  device's source can map pages, and CUDA can through cuda-bindings' virtual-memory calls
  (backends/cuda_vmm.py, after a self-test). Unset, a source that cannot map pages gets
  cudaMalloc segments silently; `True` warns then; `False` always uses cudaMalloc segments
  (torch's default). Why on by default: on the 48 generated traces of
  profiling/bench_allocator.py (seeds 0-3, 10-13, 20-27) it keeps peak reserved / peak
  allocated at 1.000-1.002 on every training trace and at most 1.060 on any trace, below
  torch's fixed-segment policy on each (1.031-2.555), with no device sync after warm-up.
- `release_lock_on_cudamalloc`: accepted for compatibility; ignored.
- gpu_tensor only: `release_on_miss` (default False): before making a new large
  segment, return this stream's fully free large segments that are smaller than the
  request (they could not serve it). It fights fragmentation (profiling/bench_allocator.py),
  but each return is a cudaFree, which synchronises the whole device: on the simulator, 60
  growing requests made 30 device syncs with it on and 0 with it off (reserving 194 vs 600
  MiB), so it is off by default, as torch frees only on OOM (which we do too).
- gpu_tensor only: `peak_guard` (default False): blocks of PEAK_GUARD_SPLIT (256 MiB) or
  more are kept whole, as torch keeps `max_split_size` blocks (a smaller max_split_size_mb
  wins), and before a new segment raises reserved memory past its high-water mark, whole
  free segments are returned first (memory/release.py). It keeps peak reserved near peak
  allocated (1.00-1.09 on profiling/bench_allocator.py's generated traces, against
  1.03-2.56 without it), but not only while warming up: once reserved memory sits at its
  high-water mark, every request of a new big size frees a segment, and each cudaFree
  synchronises the whole device. Replaying the 24 generated traces, it made 0-704
  cudaFrees after the first 10% of each trace (bench_allocator's `steady_frees`; 0 on
  every trace without it), and neither 5-10% slack over the allocated peak nor releasing only at a
  new allocated peak removed them. Off by default, like release_on_miss; turn it on where
  memory is tight and device syncs are cheap next to the memory saved.
  Rules that free nothing were measured as defaults on the same 24 traces and on 24 held-out
  ones (seeds 20-27): large segments of at least reserved/3 or 2 x the request, and
  roundup_power2_divisions:4, beat torch's policy on 13-20 of 24 traces but lose on the
  rest (and rounding partly wins by inflating allocated bytes); the 256 MiB whole-block
  rule without releases reaches 5.0. None was made the default for cudaMalloc segments.
- gpu_tensor only: `adaptive_segments` (default True): 1-10 MiB requests get segments of
  max(4 x request, large pool / 4), 2 MiB steps, at most torch's 20 MiB (memory/sizes.py):
  small workloads stop paying 20 MiB per segment; large ones are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import _env

__all__ = ["AllocatorConfig", "parse_alloc_conf", "UNLIMITED"]

MiB = 1 << 20
UNLIMITED = (1 << 63) - 1  # torch's SIZE_MAX sentinel: max_split_size unset
_MIN_MAX_SPLIT_MB = 20  # torch: must be >= kLargeBuffer, or large-pool splits would be oversize
PEAK_GUARD_SPLIT = 256 * MiB  # peak_guard's max_split_size; 128 / 256 / 512 / 1024 were
# compared on profiling/bench_allocator.py's generated traces: 256 was the smallest with
# every training trace at or near 1.05, at about a third of 128's device calls
_POWER2_INTERVALS = 16  # torch: one divisions value per power-of-two interval, 1 MiB .. 32 GiB


@dataclass
class AllocatorConfig:
    max_split_size: int = UNLIMITED
    max_non_split_rounding: int = 20 * MiB
    garbage_collection_threshold: float = 0.0
    roundup_power2_divisions: list[int] = field(default_factory=lambda: [0] * _POWER2_INTERVALS)
    expandable_segments: bool | None = None  # None: wherever the source can map pages
    release_on_miss: bool = False  # a cudaFree per miss syncs the device (see above)
    adaptive_segments: bool = True
    peak_guard: bool = False  # frees (device syncs) in steady state too (see above)
    text: str = ""  # the string it came from, for snapshots' allocator_settings

    def split_limit(self, expandable: bool) -> int:
        """The max_split_size the allocator applies: peak_guard's, unless a smaller one is set
        (not with expandable segments: their blocks split freely, as torch's do)."""
        if self.peak_guard and not expandable:
            return min(self.max_split_size, PEAK_GUARD_SPLIT)
        return self.max_split_size

    @classmethod
    def from_env(cls) -> AllocatorConfig:
        return parse_alloc_conf(_env.alloc_conf())

    def divisions_for(self, size: int) -> int:
        """roundup_power2_divisions for the power-of-two interval that holds `size`."""
        index = max(0, size.bit_length() - 1 - 20)  # floor(log2(size)) - log2(1 MiB), as torch
        return self.roundup_power2_divisions[min(index, _POWER2_INTERVALS - 1)]


def _bool(key: str, value: str) -> bool:
    low = value.strip().lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0"):
        return False
    raise ValueError(f"GPU_TENSOR_ALLOC_CONF: {key} must be True or False, got {value!r}")


def _power_of_two(key: str, text: str) -> int:
    n = int(text)
    if n < 0 or (n & (n - 1)):
        raise ValueError(f"GPU_TENSOR_ALLOC_CONF: {key} values must be powers of two, got {n}")
    return n


def _parse_divisions(value: str) -> list[int]:
    value = value.strip()
    if not value.startswith("["):
        return [_power_of_two("roundup_power2_divisions", value)] * _POWER2_INTERVALS
    out = [0] * _POWER2_INTERVALS
    last = 0
    for item in value.strip("[]").split(","):
        if not item.strip():
            continue
        key, _, val = item.partition(":")
        n = _power_of_two("roundup_power2_divisions", val)
        if key.strip() == ">":
            for i in range(last, _POWER2_INTERVALS):
                out[i] = n
            break
        index = max(0, int(key).bit_length() - 1)  # interval of a key given in MB
        for i in range(last, min(index + 1, _POWER2_INTERVALS)):
            out[i] = n
        last = index + 1
    return out


def parse_alloc_conf(text: str) -> AllocatorConfig:
    """Parse torch-style `opt:val,opt2:val2`; raise ValueError naming a bad option."""
    config = AllocatorConfig(text=text)
    # Split on commas that are not inside [...] (roundup_power2_divisions lists).
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    for item in items:
        if not item.strip():
            continue
        key, sep, value = item.partition(":")
        key = key.strip()
        if not sep:
            raise ValueError(f"GPU_TENSOR_ALLOC_CONF: expected 'option:value', got {item!r}")
        if key == "max_split_size_mb":
            mb = int(value)
            if mb < _MIN_MAX_SPLIT_MB:
                raise ValueError(
                    f"GPU_TENSOR_ALLOC_CONF: max_split_size_mb must be >= {_MIN_MAX_SPLIT_MB}, "
                    f"got {mb}"
                )
            config.max_split_size = mb * MiB
        elif key == "max_non_split_rounding_mb":
            config.max_non_split_rounding = int(value) * MiB
        elif key == "garbage_collection_threshold":
            t = float(value)
            if not 0.0 < t < 1.0:
                raise ValueError(
                    f"GPU_TENSOR_ALLOC_CONF: garbage_collection_threshold must be in (0, 1), "
                    f"got {t}"
                )
            config.garbage_collection_threshold = t
        elif key == "roundup_power2_divisions":
            config.roundup_power2_divisions = _parse_divisions(value)
        elif key == "expandable_segments":
            config.expandable_segments = _bool(key, value)
        elif key == "release_on_miss":
            config.release_on_miss = _bool(key, value)
        elif key == "adaptive_segments":
            config.adaptive_segments = _bool(key, value)
        elif key == "peak_guard":
            config.peak_guard = _bool(key, value)

        elif key in ("release_lock_on_cudamalloc", "backend"):
            pass  # accepted so torch configurations carry over; no effect here
        else:
            raise ValueError(
                f"GPU_TENSOR_ALLOC_CONF: unknown option {key!r}. Known: max_split_size_mb, "
                "max_non_split_rounding_mb, garbage_collection_threshold, "
                "roundup_power2_divisions, expandable_segments, release_on_miss, "
                "adaptive_segments, peak_guard"
            )
    return config
