"""torch's cpu random engine: a 32-bit Mersenne Twister seeded and read as torch's
CPUGeneratorImpl does, so that `manual_seed(s)` followed by the samplers in
_torch_samplers.py gives torch's cpu numbers bit for bit.

The twist itself runs in numpy's C MT19937 (the same recurrence; its `random_raw` hands
out the tempered 32-bit words), which draws millions of words per millisecond; seeding
is torch's (only the low 32 bits of the seed are used, as std::mt19937's init_genrand),
and the state reads and writes in torch's 5056-byte `get_rng_state()` layout.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["MTStream", "DEFAULT_SEED", "STATE_BYTES"]

DEFAULT_SEED = 67280421310721  # torch's default_generator seed (its initial_seed())
_N = 624
# torch's THGeneratorStateNew: seed u64, left i32, seeded i32, next u64, state[624] u64,
# normal_x/y/rho f64 (the cached double sample is normal_y), normal_is_valid i32 (+pad), next_float_normal f32, its valid flag
_HEAD = struct.Struct("<QiiQ")
_TAIL = struct.Struct("<dddi4xf?3x")
STATE_BYTES = _HEAD.size + 8 * _N + _TAIL.size  # 5056


def _seed_key(seed: int) -> np.ndarray:
    """std::mt19937's init_genrand(seed & 0xffffffff): the 624 words before the twist."""
    key = np.empty(_N, np.uint32)
    x = seed & 0xFFFF_FFFF
    key[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFF_FFFF
        key[j] = x
    return key


class MTStream:
    """One generator's state: the twister words, the seed, and torch's cached second
    Box-Muller samples (the scalar normal path makes two numbers per pair of draws and
    keeps the second for the next call, in double and in float)."""

    def __init__(self, seed: int = DEFAULT_SEED):
        self._bits = np.random.MT19937()
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF  # torch wraps negative seeds too
        self._bits.state = {
            "bit_generator": "MT19937",
            "state": {"key": _seed_key(self.seed), "pos": _N},
        }
        self._fresh = True  # torch reports next=0 until the first draw
        self.next_double_normal = None
        self.next_float_normal = None

    def words(self, k: int) -> np.ndarray:
        """The next k 32-bit outputs (torch's generator->random()), as uint32."""
        self._fresh = False
        return self._bits.random_raw(k).astype(np.uint32)

    def words64(self, k: int) -> np.ndarray:
        """The next k 64-bit outputs (torch's random64(): two words, the first high)."""
        self._fresh = False
        w = self._bits.random_raw(2 * k)
        return (w[0::2] << np.uint64(32)) | w[1::2]

    # ---- torch's state layout (get_rng_state / set_rng_state) ----
    def get_state(self) -> bytes:
        st = self._bits.state["state"]
        pos = int(st["pos"])
        left = 1 if pos >= _N else _N + 1 - pos
        nxt = 0 if self._fresh else pos
        d, f = self.next_double_normal, self.next_float_normal
        return (
            _HEAD.pack(self.seed, left, 1, nxt)
            + np.asarray(st["key"], np.uint64).astype("<u8").tobytes()
            + _TAIL.pack(
                0.0,
                0.0 if d is None else d,
                0.0,
                d is not None,
                0.0 if f is None else f,
                f is not None,
            )
        )

    def set_state(self, raw: bytes) -> None:
        if len(raw) != STATE_BYTES:
            raise RuntimeError(
                f"Expected either a THGeneratorState of size 5048 or a "
                f"THGeneratorStateNew of size {STATE_BYTES} but found the "
                f"input RNG state size to be {len(raw)}"
            )
        seed, left, _seeded, nxt = _HEAD.unpack_from(raw, 0)
        key = np.frombuffer(raw, "<u8", _N, _HEAD.size).astype(np.uint32)
        _x, y, _rho, d_ok, f, f_ok = _TAIL.unpack_from(raw, _HEAD.size + 8 * _N)
        self.seed = seed
        pos = _N if left == 1 else int(nxt)
        if not 0 <= pos <= _N:
            raise RuntimeError("set_rng_state: the state's `next` index is out of range")
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._fresh = left == 1 and nxt == 0
        self.next_double_normal = y if d_ok else None
        self.next_float_normal = f if f_ok else None

    def clone(self) -> MTStream:
        other = MTStream.__new__(MTStream)
        other._bits = np.random.MT19937()
        other.set_state(self.get_state())
        return other
