"""bfloat16 on real cuda is stored as uint16 bits; the conversions run on any array module.
These are the CPU-runnable counterparts of the real-GPU bfloat16 tests (numpy as `xp`)."""

import ml_dtypes
import numpy as np

from gpu_tensor.backends.cuda import bf16_to_f32, f32_to_bf16


def test_bits_round_trip_matches_ml_dtypes():
    rng = np.random.default_rng(0)
    vals = np.concatenate(
        [
            rng.standard_normal(2000).astype(np.float32) * 1e3,
            np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, 3.0e38, 1e-40], np.float32),
        ]
    )
    bits = f32_to_bf16(vals, np)
    assert bits.dtype == np.uint16
    want = vals.astype(ml_dtypes.bfloat16).view(np.uint16)  # round-to-nearest-even
    np.testing.assert_array_equal(bits, want)
    back = bf16_to_f32(bits, np)
    np.testing.assert_array_equal(back, want.view(ml_dtypes.bfloat16).astype(np.float32))


def test_nan_stays_nan():
    bits = f32_to_bf16(np.array([np.nan], np.float32), np)
    assert np.isnan(bf16_to_f32(bits, np)).all()


def test_strided_input():
    vals = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(bf16_to_f32(f32_to_bf16(vals, np), np), vals)
