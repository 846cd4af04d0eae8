"""choose_qparams: torch's ChooseQuantizationParams (values recorded from torch 2.13's
torch._choose_qparams_per_tensor)."""

from __future__ import annotations

import pytest

from gpu_tensor.quantized.qparams import choose_qparams

# (values, (scale, zp) without reduce_range, (scale, zp) with it), recorded from torch
CASES = [
    ([-1, 0.5, 2], (0.011764705882352941, 85), (0.023622047244094488, 42)),
    ([0, 0], (0.1, 0), (0.1, 0)),  # an empty range: torch's 0.1
    ([1e-6, 2e-6], (6.0999998822808266e-05, 0), (6.0999998822808266e-05, 0)),  # tiny range
    ([-3e-6, -1e-7], (6.0999998822808266e-05, 255), (6.0999998822808266e-05, 127)),
    ([3.0, 5.0], (0.0196078431372549, 0), (0.03937007874015748, 0)),  # widened to hold 0
]


@pytest.mark.parametrize("values,plain,reduced", CASES)
def test_recorded(values, plain, reduced):
    import numpy as np

    lo, hi = float(np.float32(min(values))), float(np.float32(max(values)))
    assert choose_qparams(lo, hi, 0, 255) == plain
    assert choose_qparams(lo, hi, 0, 255, reduce_range=True) == reduced


def test_min_above_max_is_refused():
    with pytest.raises(RuntimeError, match="min should be less than or equal to max"):
        choose_qparams(1.0, 0.0, 0, 255)
