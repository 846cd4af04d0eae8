"""Random numbers with torch's surface: `gt.Generator`, `manual_seed`/`seed`/`initial_seed`,
the in-place samplers (`normal_`, `uniform_`, `bernoulli_`, `random_`, `exponential_`,
`geometric_`, `log_normal_`, `cauchy_`) and `bernoulli`, `multinomial`, `normal`, `poisson`.

One stream of numbers for every device: samples are drawn on the host and copied to the
tensor's device (a host->device copy on a GPU), so a seeded program gives the same
numbers on cpu and cuda. That stream is torch's cpu one: a generator is torch's mt19937
(_mt19937.py) and rand, randn, randint, randperm, normal_, uniform_, bernoulli(_),
random_(from, to), exponential_ and the dropout masks apply torch's cpu transforms (_torch_samplers.py),
so they give torch's cpu numbers bit for bit after the same seed. On cuda they are
torch's *cpu* numbers too, not those of torch's cuda Philox generator. The other
samplers (geometric_, log_normal_, cauchy_, multinomial, poisson, normal
with tensor arguments) draw from a numpy generator seeded with the same seed: seeded and
repeatable, with torch's distributions but not its sequences.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _torch_samplers as samplers
from .. import creation
from .. import dtype as _dt
from .._grad import differentiable
from .._mt19937 import DEFAULT_SEED as _DEFAULT_SEED
from .._mt19937 import MTStream
from .._tensor import Tensor
from ..backends import get_backend
from ..device import CPU, resolve

__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "bernoulli",
    "multinomial",
    "normal",
    "poisson",
]
# the in-place fills: Tensor methods, each with a zero gradient (autograd/formulas_none.py)
FILLS = (
    "normal_",
    "uniform_",
    "bernoulli_",
    "random_",
    "exponential_",
    "geometric_",
    "log_normal_",
    "cauchy_",
)


class Generator:
    """A seeded source of random numbers (torch.Generator). `device` is recorded for
    torch's API; numbers are drawn on the host whatever the device (module docstring).
    `_mt` is torch's twister, `_np` the numpy generator of the other samplers."""

    def __init__(self, device="cpu"):
        self.device = resolve(device) if device is not None else CPU
        self._mt = MTStream(_DEFAULT_SEED)
        self._np = np.random.default_rng(_DEFAULT_SEED)

    def manual_seed(self, seed) -> Generator:
        self._mt.reseed(int(seed))
        self._np = np.random.default_rng(self._mt.seed)
        return self

    def seed(self) -> int:
        """Reseed from the OS's entropy; returns the new seed."""
        s = int(np.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._mt.seed

    def get_state(self) -> Tensor:
        """The state as torch's 5056-byte uint8 tensor (its layout: a state saved by
        torch.get_rng_state() sets this generator, and the reverse)."""
        raw = np.frombuffer(self._mt.get_state(), np.uint8).copy()
        return creation.from_numpy(raw)

    def set_state(self, new_state) -> Generator:
        """Restore a get_state() (the numpy part restarts from the state's seed)."""
        if isinstance(new_state, Tensor):
            if new_state.dtype is not _dt.uint8:
                raise TypeError(f"expected a torch.ByteTensor, but got {new_state.type()}")
            raw = new_state._host().tobytes()
        else:
            raw = bytes(new_state)
        self._mt.set_state(raw)
        self._np = np.random.default_rng(self._mt.seed)
        return self

    # creation's factories draw with numpy's Generator API (random, standard_normal, ...)
    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._np, name)

    def __repr__(self) -> str:
        return f"<gpu_tensor.Generator object at {id(self):#x}>"


class _DefaultGenerator(Generator):
    """The generator behind every factory without `generator=`: creation's numpy one."""

    def __init__(self):
        self.device = CPU

    @property
    def _mt(self):
        return creation._mt

    @property
    def _np(self):
        return creation._rng

    @_np.setter
    def _np(self, value):
        creation._rng = value


default_generator = _DefaultGenerator()


def manual_seed(seed) -> Generator:
    """Seed the numbers of every device (torch.manual_seed); returns the default generator."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


def _rng(generator):
    return (generator or default_generator)._np


def _mt(generator):
    return (generator or default_generator)._mt


def _sample(t, fill, name):
    """Fill t with `fill(flat)` (a 1-d host array of t's dtype, C order, or torch's memory
    order where t is strided: see _torch_samplers) and return t. Where t's memory is host
    memory and C-contiguous the values land in it directly; elsewhere in a host array
    copied over. The numbers are the same either way."""
    from ._inplace import check_writable

    check_writable(t, name)
    data = t._data
    if get_backend(t.device).host_arrays and data.flags.c_contiguous:
        fill(data.reshape(-1))
        t._bump_version()
        return t
    # torch walks a strided tensor in memory order (its TensorIterator sorts the dims by
    # stride): fill a host array in that order, then view it in t's dim order
    order = sorted(range(data.ndim), key=lambda d: -abs(t.stride()[d]))
    host = np.empty([data.shape[d] for d in order], t.dtype.np)
    fill(host.reshape(-1))
    return _fill(t, host.transpose(np.argsort(order)), name)


def _fill(t, host, name):
    """Write the host samples into t (any device), in t's dtype; returns t."""
    from ._inplace import check_writable

    check_writable(t, name)
    bk = get_backend(t.device)
    arr, _ = bk.from_host(np.ascontiguousarray(_in_dtype(np.asarray(host), t)))
    bk.copy_(t._data, arr)
    t._bump_version()
    return t


def _in_dtype(host, t):
    """Samples cast to t's dtype (an integer dtype takes floats rounded toward zero)."""
    if t.dtype.category < _dt.FLOAT and host.dtype.kind == "f":
        host = np.trunc(host)
    return host.astype(t.dtype.np)


def _draw(t, draw, name):
    """Fill t with `draw(at, k)` (the k samples from flat index `at` on, in C order) and
    return t. Where t's memory is host memory (cpu, emulated cuda) and C-contiguous, the
    samples land in it piece by piece, so no host buffer of t's size exists; elsewhere they
    are drawn whole and copied over. The numbers are the same either way: pieces of one
    stream."""
    data = t._data
    if t.device.type == "meta":  # no values to draw (torch's meta tensors skip it too)
        return t
    if not get_backend(t.device).host_arrays or not data.flags.c_contiguous:
        return _fill(t, draw(0, data.size).reshape(data.shape), name)
    from ._inplace import check_writable

    check_writable(t, name)
    creation.fill_drawn(data.reshape(-1), lambda at, k: _in_dtype(draw(at, k), t))
    t._bump_version()
    return t


def _need_float(t, name):
    if t.dtype.category != _dt.FLOAT:
        raise NotImplementedError(
            f"\"{name}\" not implemented for '{_dt.SCALAR_TYPE_NAMES[t.dtype.name]}'"
        )


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _need_float(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    st = _mt(generator)
    contiguous = self.is_contiguous()  # torch's strided tensors take the scalar path
    return _sample(
        self, lambda flat: samplers.fill_normal(st, flat, mean, std, contiguous), "normal_"
    )


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    from_ = kw.pop("from", from_)  # torch's keyword is `from`, a Python keyword
    if kw:
        raise TypeError(f"uniform_() got unexpected keyword arguments {sorted(kw)}")
    _need_float(self, "uniform_kernel_cpu")
    if from_ > to:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}"
        )
    st = _mt(generator)
    return _sample(self, lambda flat: samplers.fill_uniform(st, flat, from_, to), "uniform_")


def bernoulli_(self, p=0.5, *, generator=None):
    probs = p._host() if isinstance(p, Tensor) else p
    if np.any((np.asarray(probs) < 0) | (np.asarray(probs) > 1)):
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    st = _mt(generator)
    if isinstance(p, Tensor):  # a probability per element, broadcast to self
        probs = np.ascontiguousarray(np.broadcast_to(probs, self.shape)).reshape(-1)
    else:
        probs = float(p)
    return _sample(self, lambda flat: samplers.fill_bernoulli(st, flat, probs), "bernoulli_")


def _int_range(t):
    if t.dtype is _dt.bool:
        return 0, 2
    if t.dtype.category == _dt.INT:
        info = np.iinfo(t.dtype.np)
        return 0, int(info.max) + 1
    # floats: integers exactly representable (torch: 2**mantissa_digits + 1)
    digits = {_dt.float16: 11, _dt.bfloat16: 8, _dt.float32: 24}.get(t.dtype, 53)
    return 0, 2**digits + 1


def random_(self, from_=0, to=None, *, generator=None, **kw):
    """Integers uniform on [from, to - 1]; random_(to) is [0, to - 1]; no arguments: the
    dtype's range of exactly representable integers."""
    from_ = kw.pop("from", from_)
    if kw:
        raise TypeError(f"random_() got unexpected keyword arguments {sorted(kw)}")
    if to is None and from_ != 0:
        from_, to = 0, from_
    lo, hi = (from_, to) if to is not None else _int_range(self)
    if hi <= lo:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}"
        )
    st = _mt(generator)
    if to is not None:
        return _sample(self, lambda flat: samplers.fill_randint(st, flat, lo, hi), "random_")
    rng = _rng(generator)  # the dtype's whole range: numpy's draws (not torch's)
    return _draw(self, lambda at, k: rng.integers(lo, hi, k), "random_")


def exponential_(self, lambd=1.0, *, generator=None):
    _need_float(self, "exponential_cpu")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    st = _mt(generator)
    return _sample(self, lambda flat: samplers.fill_exponential(st, flat, lambd), "exponential_")


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    rng = _rng(generator)
    return _draw(self, lambda at, k: rng.geometric(p, k), "geometric_")


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    _need_float(self, "log_normal_cpu")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    rng = _rng(generator)
    return _draw(self, lambda at, k: rng.lognormal(mean, std, k), "log_normal_")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    _need_float(self, "cauchy_cpu")
    rng = _rng(generator)
    return _draw(
        self, lambda at, k: median + sigma * np.tan(math.pi * (rng.random(k) - 0.5)), "cauchy_"
    )


@differentiable  # no formula: autograd/formulas_none.py records a node that raises
def bernoulli(input, p=None, *, generator=None):
    """0/1 samples with probabilities `input` (or the number p), in input's dtype."""
    out = creation.empty(input.shape, dtype=input.dtype, device=input.device)
    if p is None:
        _need_float(input, "bernoulli_tensor_cpu_p_")
        if not bool(((input >= 0) & (input <= 1)).all()):  # (nan fails both, as in torch)
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        st = _mt(generator)
        if get_backend(input.device).host_arrays:  # host memory: read in place
            probs = input.contiguous()._data.reshape(-1)
        else:
            probs = input._host().reshape(-1)
        return _sample(out, lambda flat: samplers.fill_bernoulli(st, flat, probs), "bernoulli")
    return bernoulli_(out, p, generator=generator)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Category indices drawn with weights from each row of `input` (1-D or 2-D)."""
    if input.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {input.ndim}")
    w = input._host().astype(np.float64).reshape(-1, input.shape[-1])
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if num_samples <= 0:
        raise RuntimeError(f"cannot sample n_sample <= 0 samples, got {num_samples}")
    rng = _rng(generator)
    rows = []
    for row in w:
        total = row.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > np.count_nonzero(row):
            raise RuntimeError(
                "invalid multinomial distribution (with replacement=False, "
                "not enough non-negative category to sample)"
            )
        rows.append(rng.choice(row.size, num_samples, replace=replacement, p=row / total))
    host = np.stack(rows).astype(np.int64)
    if input.ndim == 1:
        host = host[0]
    return creation.tensor(host, device=input.device)


@differentiable  # zero gradient, as torch: autograd/formulas_none.py
def normal(
    mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
):
    """Samples with elementwise mean/std (tensors or numbers; `size` when both are numbers)."""
    rng = _rng(generator)
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal() with a number mean and std needs a size")
        t = creation.empty(size, dtype=dtype, device=device)
        normal_(t, mean, std, generator=generator)
        return t.requires_grad_(requires_grad) if requires_grad else t
    like = mean if isinstance(mean, Tensor) else std
    m = mean._host() if isinstance(mean, Tensor) else mean
    s = std._host() if isinstance(std, Tensor) else std
    if np.any(np.asarray(s) < 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    shape = np.broadcast_shapes(np.shape(m), np.shape(s))
    out = creation.empty(shape, dtype=like.dtype, device=like.device)
    return _fill(out, rng.normal(m, s, shape), "normal")


@differentiable  # zero gradient, as torch: autograd/formulas_none.py
def poisson(input, generator=None):
    lam = input._host()
    out = creation.empty(input.shape, dtype=input.dtype, device=input.device)
    return _fill(out, _rng(generator).poisson(lam), "poisson")
