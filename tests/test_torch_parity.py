"""Differential tests: gpu_tensor against PyTorch itself on many random, seeded cases.

Each test runs the same operation in both libraries and compares what a PyTorch user can
observe: result dtype, shape, values, stride()/storage_offset()/is_contiguous, whether memory
is shared, the exception class for bad input, and repr text. Every case is generated from a
fixed seed so a failure reproduces. Known divergences are marked
`xfail(strict=True, reason=...)`: the fix removes the mark (strict makes a fixed one fail).

Skips when torch is not installed (the project's own venv has none); run it with a venv that
has torch: `GPU_TENSOR_FALLBACK=1 <venv>/bin/python -m pytest tests/test_torch_parity.py -q`.
Only the cpu device is compared; the core's own tests check emulated cuda against numpy.
"""

from __future__ import annotations

import importlib
import itertools
import types
import zlib

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the PyTorch parity tests need it as the reference")

# ---------------------------------------------------------------------------------------------
# gpu_tensor's public names, gathered from the submodules' __all__ (the same names the package
# re-exports as gt.<name>; gathering them here keeps this file independent of that step).
_MODULES = ["gpu_tensor.dtype", "gpu_tensor.device", "gpu_tensor.creation",
            "gpu_tensor.ops.elementwise", "gpu_tensor.ops.reduction", "gpu_tensor.ops.indexing",
            "gpu_tensor.ops.join", "gpu_tensor.ops.shape", "gpu_tensor.ops.linalg",
            "gpu_tensor._layout", "gpu_tensor.tensor"]
G = types.SimpleNamespace()
for _m in _MODULES:
    _mod = importlib.import_module(_m)
    for _n in _mod.__all__:
        setattr(G, _n, getattr(_mod, _n))

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]


def gdt(name):
    return getattr(G, name)


def tdt(name):
    return getattr(torch, name)


def dname(dtype) -> str:
    """'float32' for either library's dtype object."""
    return dtype.name if hasattr(dtype, "name") else str(dtype).removeprefix("torch.")


def tnp(t) -> np.ndarray:
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.resolve_conj().numpy()


def gnp(t) -> np.ndarray:
    a = np.asarray(t.numpy())
    if a.dtype.name == "bfloat16":
        a = a.astype(np.float32)
    return a


def pair_from_torch(t):
    """The gpu_tensor twin of a cpu torch tensor (same dtype, values, a fresh copy)."""
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        arr = t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
        return G.from_numpy(arr)
    return G.from_numpy(t.contiguous().numpy().copy())


def rand_torch(rng, shape, name, *, nonzero=False, positive=False):
    """A random torch tensor of dtype `name`: small integers for integer types (so no
    overflow), floats in [-4, 4) for float types, both parts random for complex."""
    if name == "bool":
        return torch.from_numpy(np.asarray(rng.random(shape) < 0.5))
    if name in INTS:
        lo = 0 if name == "uint8" or positive else -5
        a = rng.integers(lo, 6, size=shape)
        if nonzero:
            a[a == 0] = 1
        return torch.from_numpy(np.asarray(a)).to(tdt(name))
    a = rng.uniform(-4, 4, size=shape)
    if positive:
        a = np.abs(a) + 0.1
    if nonzero:
        a[np.abs(a) < 0.1] = 0.5
    if name in COMPLEX:
        a = np.asarray(a) + 1j * rng.uniform(-4, 4, size=shape)
    return torch.from_numpy(np.asarray(a)).to(tdt(name))


def seeded(*key):
    """A numpy Generator seeded from the case's name (stable across runs, unlike hash())."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _err_kind(e: BaseException) -> str:
    # NotImplementedError subclasses RuntimeError: test it first.
    for cls in (IndexError, TypeError, ValueError, NotImplementedError, ZeroDivisionError,
                RuntimeError):
        if isinstance(e, cls):
            return cls.__name__
    return type(e).__name__


def outcome(fn):
    """('ok', result) or ('err', exception class name)."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the class is what we compare
        return "err", _err_kind(e)


def _tol(name):
    return {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (2e-5, 1e-5),
            "complex64": (2e-5, 1e-5)}.get(name, (1e-9, 1e-12))


def diff(g, t, *, check_stride=False, tol_scale=1.0) -> str | None:
    """None when gpu_tensor result g matches torch result t, else a short description."""
    if isinstance(t, (tuple, list)):
        if not isinstance(g, (tuple, list)) or len(g) != len(t):
            return f"gt {type(g).__name__}{getattr(g, '__len__', lambda: '?')()} vs torch " \
                   f"{type(t).__name__}{len(t)}"
        for i, (a, b) in enumerate(zip(g, t)):
            d = diff(a, b, check_stride=check_stride, tol_scale=tol_scale)
            if d:
                return f"[{i}] {d}"
        return None
    if not isinstance(t, torch.Tensor):
        return None if g == t else f"gt {g!r} vs torch {t!r}"
    if not isinstance(g, G.Tensor):
        return f"gt returned {type(g).__name__}, torch a Tensor"
    if dname(g.dtype) != dname(t.dtype):
        return f"dtype gt {dname(g.dtype)} vs torch {dname(t.dtype)}"
    if tuple(g.shape) != tuple(t.shape):
        return f"shape gt {tuple(g.shape)} vs torch {tuple(t.shape)}"
    if check_stride and t.numel() > 1 and tuple(g.stride()) != tuple(t.stride()):
        return f"stride gt {g.stride()} vs torch {t.stride()}"
    a, b = gnp(g), tnp(t)
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        rtol, atol = _tol(dname(t.dtype))
        if not np.allclose(a, b, rtol=rtol * tol_scale, atol=atol * tol_scale, equal_nan=True):
            return f"values gt {a.ravel()[:6]} vs torch {b.ravel()[:6]}"
    elif not np.array_equal(a, b):
        return f"values gt {a.ravel()[:6]} vs torch {b.ravel()[:6]}"
    return None


def compare(gfn, tfn, **kw) -> str | None:
    """Run both; None when they agree (same error class, or matching results)."""
    gk, gv = outcome(gfn)
    tk, tv = outcome(tfn)
    if gk != tk:
        return f"gt {gk}:{gv if gk == 'err' else type(gv).__name__} vs torch " \
               f"{tk}:{tv if tk == 'err' else type(tv).__name__}"
    if gk == "err":
        return None if gv == tv else f"error class gt {gv} vs torch {tv}"
    return diff(gv, tv, **kw)


def check_all(cases):
    """cases: iterable of (label, gfn, tfn[, kw]); fails listing every mismatch."""
    bad = []
    for case in cases:
        label, gfn, tfn, *kw = case
        d = compare(gfn, tfn, **(kw[0] if kw else {}))
        if d:
            bad.append(f"{label}: {d}")
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:40])


def xfail_if(known: dict, key, *values):
    """pytest.param(*values) marked strict xfail when key is a known divergence."""
    if key in known:
        return pytest.param(*values, marks=pytest.mark.xfail(strict=True, reason=known[key]))
    return pytest.param(*values)


# ---------------------------------------------------------------------------------------------
# Binary ops: dtype promotion for every pair of dtypes x {tensor, 0-dim tensor, Python scalar}.

SCALARS = {"bool": True, "int": 3, "float": 2.5, "complex": 1.5 - 2j}
KINDS = ["tensor", "bcast", "0dim", "0dim_left", "bool", "int", "float", "complex",
         "rint", "rfloat"]


def _where(c, a, b, lib):
    return lib.where(c, a, b)


BINARY = {
    # name: (gt fn, torch fn, the right operand must be nonzero, right operand small/positive)
    "add": (lambda a, b: G.add(a, b), lambda a, b: torch.add(a, b), False, False),
    "sub": (lambda a, b: G.sub(a, b), lambda a, b: torch.sub(a, b), False, False),
    "mul": (lambda a, b: G.mul(a, b), lambda a, b: torch.mul(a, b), False, False),
    "div": (lambda a, b: G.div(a, b), lambda a, b: torch.div(a, b), True, False),
    "floor_divide": (lambda a, b: a // b, lambda a, b: a // b, True, False),
    "remainder": (lambda a, b: a % b, lambda a, b: a % b, True, False),
    "pow": (lambda a, b: a ** b, lambda a, b: a ** b, False, True),
    "eq": (lambda a, b: a == b, lambda a, b: a == b, False, False),
    "lt": (lambda a, b: G.lt(a, b), lambda a, b: torch.lt(a, b), False, False),
    "ge": (lambda a, b: a >= b, lambda a, b: a >= b, False, False),
    "maximum": (lambda a, b: G.maximum(a, b), lambda a, b: torch.maximum(a, b), False, False),
    "bitwise_and": (lambda a, b: a & b, lambda a, b: a & b, False, False),
    "bitwise_or": (lambda a, b: G.bitwise_or(a, b), lambda a, b: torch.bitwise_or(a, b),
                   False, False),
    "bitwise_xor": (lambda a, b: a ^ b, lambda a, b: a ^ b, False, False),
    "logical_and": (lambda a, b: G.logical_and(a, b), lambda a, b: torch.logical_and(a, b),
                    False, False),
    "where": (lambda a, b, c=None: G.where(G.gt(a if c is None else c, 0) if False else _GC[0],
                                           a, b),
              lambda a, b: torch.where(_TC[0], a, b), False, False),
    "clamp": (lambda a, b: G.clamp(a, min=b), lambda a, b: torch.clamp(a, min=b), False, False),
}
_GC, _TC = [None], [None]  # where()'s condition, set per case (same values in both libraries)


def _operands(rng, kind, d1, d2, nonzero, small):
    """(torch a, torch b): `a` of dtype d1 (shape (3, 4)); `b` per kind."""
    a = rand_torch(rng, (3, 4), d1)
    if kind in SCALARS:
        return a, SCALARS[kind]
    shape = {"tensor": (3, 4), "bcast": (4,), "0dim": (), "0dim_left": ()}[kind]
    b = rand_torch(rng, shape, d2, nonzero=nonzero, positive=small)
    if small and d2 in INTS:
        b = b % 3
    if kind == "0dim_left":
        return b, a
    return a, b


def _binary_cases(op, kind, d1):
    gfn, tfn, nonzero, small = BINARY[op]
    rng = seeded(op, kind, d1)
    d2s = DTYPES if kind in ("tensor", "bcast", "0dim", "0dim_left") else [None]
    for d2 in d2s:
        ta, tb = _operands(rng, kind, d1, d2, nonzero and kind != "0dim_left", small)
        if kind == "0dim_left" and nonzero:
            tb = rand_torch(rng, (3, 4), d1, nonzero=True)
        if kind in ("rint", "rfloat"):  # Python scalar on the left: reflected operators
            s = 2 if kind == "rint" else 1.5
            ta, tb = s, rand_torch(rng, (3, 4), d1, nonzero=nonzero)
        cond = torch.from_numpy(rng.random((3, 4)) < 0.5)
        ga = ta if not isinstance(ta, torch.Tensor) else pair_from_torch(ta)
        gb = tb if not isinstance(tb, torch.Tensor) else pair_from_torch(tb)
        gc = pair_from_torch(cond)

        def g(ga=ga, gb=gb, gc=gc):
            _GC[0] = gc
            return gfn(ga, gb)

        def t(ta=ta, tb=tb, cond=cond):
            _TC[0] = cond
            return tfn(ta, tb)

        yield f"{op}({d1} {kind} {d2})", g, t, {"tol_scale": 4.0}


# Known divergences, keyed (op, kind, d1); filled from this file's own findings.
KNOWN_BINARY: dict = {}


@pytest.mark.parametrize("op, kind, d1", [
    xfail_if(KNOWN_BINARY, (op, kind, d1), op, kind, d1)
    for op in BINARY for kind in KINDS for d1 in DTYPES])
def test_binary_promotion_and_values(op, kind, d1):
    check_all(_binary_cases(op, kind, d1))
