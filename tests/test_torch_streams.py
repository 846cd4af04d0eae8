"""torch's cpu random streams: after gt.manual_seed(s) the samplers give torch's numbers.

The expected values in the torch-free tests were recorded from torch 2.13.0+cpu (x86-64,
AVX512 build) running the same calls after the same seed; the parity tests at the end
compare with torch directly over many seeds, sizes and dtypes where torch is installed.
"""

import hashlib

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import _torch_samplers as samplers
from gpu_tensor._mt19937 import STATE_BYTES, MTStream
from gpu_tensor.backends.base import PIECE


def _flat(t):
    return t.flatten().tolist()


def test_seeded_sequence_matches_torch_recording():
    # one run of torch calls in this order after torch.manual_seed(0) (recorded)
    gt.manual_seed(0)
    assert _flat(gt.rand(4)) == [
        0.49625658988952637,
        0.7682217955589294,
        0.08847743272781372,
        0.13203048706054688,
    ]
    assert _flat(gt.rand(2, dtype=gt.float64)) == [0.45938294312745087, 0.9207476841219603]
    # 17 values: the 16-wide float32 kernel, then the last 16 redone from fresh draws
    assert _flat(gt.randn(17)[[0, 7, 8, 15, 16]]) == [
        -0.35612836480140686,
        -0.1116093322634697,
        -0.6135830879211426,
        -2.316041946411133,
        -0.10230965167284012,
    ]
    # under 16: double Box-Muller pairs, the 4th sample stays cached on the generator
    assert _flat(gt.randn(3, dtype=gt.float64)) == [
        0.745542083141552,
        -0.24604661233178626,
        0.8511652747759074,
    ]
    assert _flat(gt.randint(-3, 7, (6,))) == [-2, -3, 6, 0, -2, -2]
    assert _flat(gt.randint(0, 2**40, (2,))) == [139680274975, 869364353268]
    assert _flat(gt.randperm(10)) == [7, 5, 8, 9, 4, 1, 6, 2, 0, 3]
    assert _flat(gt.empty(12).bernoulli_(0.3)) == [0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
    assert _flat(gt.nn.functional.dropout(gt.ones(8), 0.5)) == [0, 2, 0, 0, 0, 2, 2, 0]
    lin = gt.nn.Linear(3, 2)
    assert _flat(lin.weight) == [
        -0.03181177377700806,
        0.08668628334999084,
        -0.2364424169063568,
        0.3425866961479187,
        -0.3513402044773102,
        0.5238703489303589,
    ]
    assert _flat(lin.bias) == [0.39565804600715637, -0.4868696331977844]
    assert _flat(gt.rand(4, dtype=gt.float16)) == [
        0.37548828125,
        0.5224609375,
        0.57275390625,
        0.61865234375,
    ]
    assert _flat(gt.randn(16, dtype=gt.float64)[:3]) == [
        0.9945529251118752,
        0.11494420795897257,
        0.1446690147604332,
    ]
    assert _flat(gt.empty(3).uniform_(-2, 5)) == [
        0.7900713682174683,
        3.4194209575653076,
        3.3922438621520996,
    ]
    state = gt.get_rng_state()
    assert state.dtype is gt.uint8 and tuple(state.shape) == (STATE_BYTES,)
    digest = hashlib.sha256(state.numpy().tobytes()).hexdigest()
    assert digest == "40ff68529e795c06e68e9ad29b987d93151e2895a1e607fc03aa216ce1b2d787"


def test_only_the_low_32_bits_of_the_seed_reach_the_twister():
    gt.manual_seed(2**40 + 5)
    assert gt.initial_seed() == 2**40 + 5
    assert _flat(gt.rand(2)) == [0.8302518725395203, 0.12611091136932373]  # (recorded)
    gt.manual_seed(5)
    b = _flat(gt.rand(2))
    gt.manual_seed(2**40 + 5)
    assert _flat(gt.rand(2)) == b


def test_state_round_trips_with_the_cached_normal():
    gt.manual_seed(11)
    gt.randn(1, dtype=gt.float64)  # leaves the pair's second sample cached
    state = gt.get_rng_state()
    a = gt.randn(5, dtype=gt.float64).tolist() + gt.rand(3).tolist()
    gt.set_rng_state(state)
    assert gt.randn(5, dtype=gt.float64).tolist() + gt.rand(3).tolist() == a
    g = gt.Generator().set_state(state)
    assert gt.randn(5, dtype=gt.float64, generator=g).tolist() == a[:5]


def test_words_match_the_reference_mt19937():
    # std::mt19937 seeded with 5489 (its default): the 10000th output is 4123659995 (C++11)
    st = MTStream(5489)
    assert int(st.words(10000)[-1]) == 4123659995
    st = MTStream(5489)
    w = st.words(4)
    st = MTStream(5489)
    assert st.words64(2).tolist() == [(int(w[0]) << 32) | int(w[1]), (int(w[2]) << 32) | int(w[3])]


@pytest.mark.parametrize("n", [15, 16, 17, 33, 2 * PIECE + 5])
def test_normal_pieces_give_the_whole_tensors_numbers(n):
    # the sampler fills in PIECE-sized pieces; the last 16 values (size not a multiple of
    # 16) are redone after the rest, reaching back into the previous piece
    whole = np.empty(n, np.float32)
    a = MTStream(3)
    u = samplers.uniform01(a, n, False)
    rows = n // 16
    expect = np.empty(n, np.float32)
    if n >= 16:
        expect[: rows * 16] = samplers._box_muller16(
            u[: rows * 16].reshape(-1, 16).copy(), 0.0, 1.0
        ).ravel()
        if n % 16:
            tail = samplers.uniform01(a, 16, False).reshape(1, 16)
            expect[n - 16 :] = samplers._box_muller16(tail, 0.0, 1.0).ravel()
        samplers.fill_normal(MTStream(3), whole)
        assert np.array_equal(whole, expect)
    else:
        samplers.fill_normal(MTStream(3), whole)
        assert np.isfinite(whole).all()


def test_every_device_gets_the_cpu_numbers(device):
    n = PIECE + 21  # two pieces, a tail

    def draws(dev):
        gt.manual_seed(9)
        return [
            gt.randn(n, device=dev),
            gt.rand(n, dtype=gt.float64, device=dev),
            gt.randint(0, 9, (n,), device=dev),
            gt.empty(n, device=dev).normal_(1, 2),
            gt.empty(n, device=dev).bernoulli_(0.4),
        ]

    # the reference is cpu's (the sim tier's default device is cuda)
    for r, g in zip(draws("cpu"), draws(device), strict=True):
        assert np.array_equal(r.numpy(), g.cpu().numpy())


def test_set_state_rejects_a_wrong_size():
    with pytest.raises(RuntimeError, match="RNG state size to be 7"):
        gt.set_rng_state(gt.zeros(7, dtype=gt.uint8))
