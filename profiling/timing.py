"""Timing: seconds per call with its spread, and when to distrust it."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

__all__ = ["Timing", "NOISE_THRESHOLD"]

NOISE_THRESHOLD = 0.10  # (p90 - p10) / median above this: the median is not trustworthy


def _percentile(sorted_xs: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Timing:
    """Seconds per call over `n` samples (each sample = `number` calls, divided)."""

    median: float
    p10: float
    p90: float
    n: int
    noisy: bool
    min: float = 0.0
    mean: float = 0.0
    clock: str = "perf_counter"  # or "cuda-event"
    number: int = 1
    wall_median: float | None = None  # with events: perf_counter incl. the final sync

    @property
    def spread(self) -> float:
        return (self.p90 - self.p10) / self.median if self.median > 0 else 0.0

    @classmethod
    def from_samples(cls, samples, clock="perf_counter", number=1, walls=None) -> Timing:
        if not samples:
            raise ValueError("Timing needs at least one sample")
        xs = sorted(samples)
        med = _percentile(xs, 0.5)
        p10, p90 = _percentile(xs, 0.1), _percentile(xs, 0.9)
        noisy = med > 0 and (p90 - p10) / med > NOISE_THRESHOLD
        wall = _percentile(sorted(walls), 0.5) if walls else None
        return cls(med, p10, p90, len(xs), noisy, xs[0], sum(xs) / len(xs), clock, number, wall)

    def as_dict(self) -> dict:
        return {**asdict(self), "spread": self.spread}
