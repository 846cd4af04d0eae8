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
import types
import zlib

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the PyTorch parity tests need it as the reference"
)

# Both libraries warn on some edge inputs (torch: deprecated .T on non-2-D, std with no degrees
# of freedom; numpy under gpu_tensor: empty means, complex->real casts). What is compared here
# is results and exception classes, not warnings.
pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning", "ignore::RuntimeWarning", "ignore::numpy.exceptions.ComplexWarning"
)

# ---------------------------------------------------------------------------------------------
# gpu_tensor's public names, gathered from the submodules' __all__ (the same names the package
# re-exports as gt.<name>; gathering them here keeps this file independent of that step).
_MODULES = [
    "gpu_tensor.dtype",
    "gpu_tensor.device",
    "gpu_tensor.creation",
    "gpu_tensor.ops.elementwise",
    "gpu_tensor.ops.reduction",
    "gpu_tensor.ops.indexing",
    "gpu_tensor.ops.join",
    "gpu_tensor.ops.shape",
    "gpu_tensor.ops.linalg",
    "gpu_tensor._layout",
    "gpu_tensor._tensor",
]
G = types.SimpleNamespace()
for _m in _MODULES:
    _mod = importlib.import_module(_m)
    for _n in _mod.__all__:
        setattr(G, _n, getattr(_mod, _n))

INTS = ["uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
DTYPES = ["bool", *INTS, *FLOATS, *COMPLEX]


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
    # torch raises NotImplementedError (a RuntimeError subclass) for "op not implemented for
    # dtype"; gpu_tensor raises RuntimeError. Caught alike by `except RuntimeError`, so the
    # sweeps compare them as one class; test_not_implemented_error_class pins the difference.
    for cls in (IndexError, TypeError, ValueError, ZeroDivisionError, RuntimeError):
        if isinstance(e, cls):
            return cls.__name__
    return type(e).__name__


def outcome(fn, *args):
    """('ok', fn(*args)) or ('err', exception class name)."""
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 - the class is what we compare
        return "err", _err_kind(e)


def both_returned(label, t, g, bad, check=None):
    """(torch's result, gt's) when both calls returned (`t`, `g`: `outcome`'s pairs) and
    `check(tr, gr)`, if given, finds no difference; else None, with a line in `bad` unless
    both raised the same error class."""
    (tk, tr), (gk, gr) = t, g
    if tk != gk or (tk == "err" and tr != gr):
        bad.append(
            f"{label}: gt {gk}:{gr if gk == 'err' else ''} vs torch "
            f"{tk}:{tr if tk == 'err' else ''}"
        )
        return None
    if tk == "err":
        return None
    d = check(tr, gr) if check else None
    if d:
        bad.append(f"{label}: {d}")
        return None
    return tr, gr


def _tol(name):
    return {
        "float16": (2e-3, 2e-3),
        "bfloat16": (1.6e-2, 1.6e-2),
        "float32": (2e-5, 1e-5),
        "complex64": (2e-5, 1e-5),
    }.get(name, (1e-9, 1e-12))


def diff(g, t, *, check_stride=False, tol_scale=1.0) -> str | None:
    """None when gpu_tensor result g matches torch result t, else a short description."""
    if isinstance(t, (tuple, list)):
        if not isinstance(g, (tuple, list)) or len(g) != len(t):
            return (
                f"gt {type(g).__name__}{getattr(g, '__len__', lambda: '?')()} vs torch "
                f"{type(t).__name__}{len(t)}"
            )
        for i, (a, b) in enumerate(zip(g, t, strict=True)):
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
        return (
            f"gt {gk}:{gv if gk == 'err' else type(gv).__name__} vs torch "
            f"{tk}:{tv if tk == 'err' else type(tv).__name__}"
        )
    if gk == "err":
        return None if gv == tv else f"error class gt {gv} vs torch {tv}"
    return diff(gv, tv, **kw)


_MAX_LISTED = 40


def check_all(cases):
    """cases: iterable of (label, gfn, tfn[, kw]); fails listing every mismatch."""
    bad = []
    for case in cases:
        label, gfn, tfn, *kw = case
        d = compare(gfn, tfn, **(kw[0] if kw else {}))
        if d:
            bad.append(f"{label}: {d}")
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


def xfail_if(known: dict, key, *values):
    """pytest.param(*values) marked strict xfail when key is a known divergence."""
    if key in known:
        return pytest.param(*values, marks=pytest.mark.xfail(strict=True, reason=known[key]))
    return pytest.param(*values)


# ---------------------------------------------------------------------------------------------
# Binary ops: dtype promotion for every pair of dtypes x {tensor, 0-dim tensor, Python scalar}.

SCALARS = {"bool": True, "int": 3, "float": 2.5, "complex": 1.5 - 2j}
KINDS = [
    "tensor",
    "0dim",
    "0dim_left",
    "bool",
    "int",
    "float",
    "complex",
    "rint",
    "rfloat",
    "0d_int",
    "0d_float",
]


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
    "pow": (lambda a, b: a**b, lambda a, b: a**b, False, True),
    "eq": (lambda a, b: a == b, lambda a, b: a == b, False, False),
    "lt": (lambda a, b: a < b, lambda a, b: a < b, False, False),
    "ge": (lambda a, b: a >= b, lambda a, b: a >= b, False, False),
    "maximum": (lambda a, b: G.maximum(a, b), lambda a, b: torch.maximum(a, b), False, False),
    "bitwise_and": (lambda a, b: a & b, lambda a, b: a & b, False, False),
    "bitwise_or": (
        lambda a, b: G.bitwise_or(a, b),
        lambda a, b: torch.bitwise_or(a, b),
        False,
        False,
    ),
    "bitwise_xor": (lambda a, b: a ^ b, lambda a, b: a ^ b, False, False),
    "logical_and": (
        lambda a, b: G.logical_and(a, b),
        lambda a, b: torch.logical_and(a, b),
        False,
        False,
    ),
    "where": (
        lambda a, b, c=None: G.where(G.gt(a if c is None else c, 0) if False else _GC[0], a, b),
        lambda a, b: torch.where(_TC[0], a, b),
        False,
        False,
    ),
    "clamp": (lambda a, b: G.clamp(a, min=b), lambda a, b: torch.clamp(a, min=b), False, False),
    "div_trunc": (
        lambda a, b: G.div(a, b, rounding_mode="trunc"),
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        True,
        False,
    ),
    "div_floor": (
        lambda a, b: G.div(a, b, rounding_mode="floor"),
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        True,
        False,
    ),
}
_GC, _TC = [None], [None]  # where()'s condition, set per case (same values in both libraries)


def _operands(rng, kind, d1, d2, nonzero, small):
    """(torch a, torch b): `a` of dtype d1 (shape (3, 4)); `b` per kind."""
    if kind in ("0d_int", "0d_float"):  # 0-dim tensor with a Python scalar: both low tiers
        return rand_torch(rng, (), d1), (3 if kind == "0d_int" else 2.5)
    a = rand_torch(rng, (3, 4), d1)
    if kind in ("rint", "rfloat"):  # a Python scalar on the left: the reflected operators
        return (2 if kind == "rint" else 1.5), rand_torch(rng, (3, 4), d1, nonzero=nonzero)
    if kind in SCALARS:
        return a, SCALARS[kind]
    shape = {"tensor": (4,), "0dim": (), "0dim_left": ()}[kind]  # (4,): broadcast too
    b = rand_torch(rng, shape, d2, nonzero=nonzero, positive=small)
    if small and d2 in INTS:
        b = b % 3
    if kind == "0dim_left":
        return b, a
    return a, b


def _chalf(d1, d2, kind):
    """float16 with a complex operand gives torch's complex32, a dtype gpu_tensor does not
    have (not in the issue's dtype list): no parity to check there."""
    other = "complex64" if kind == "complex" else d2
    return (
        {d1, other} & {"float16"}
        and (other in COMPLEX or d1 in COMPLEX)
        and (kind in ("0dim", "0dim_left", "complex") or False)
    )


def _binary_cases(op, kind, d1):
    gfn, tfn, nonzero, small = BINARY[op]
    rng = seeded(op, kind, d1)
    d2s = DTYPES if kind in ("tensor", "0dim", "0dim_left") else [None]
    for d2 in d2s:
        if _chalf(d1, d2, kind):
            continue
        if op in ("div_trunc", "div_floor") and (d2 in COMPLEX or kind == "complex"):
            continue  # complex with a rounding mode: test_pinned[div_trunc_complex]
        ta, tb = _operands(rng, kind, d1, d2, nonzero and kind != "0dim_left", small)
        if kind == "0dim_left" and nonzero:
            tb = rand_torch(rng, (3, 4), d1, nonzero=True)
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


# torch's functional forms of these take no Python scalar (TypeError): a gpu_tensor
# extension, not a divergence, so those kinds are not compared.
_TENSOR_ONLY = {"maximum", "logical_and"}


def _applies(op, kind):
    if op in _TENSOR_ONLY:
        return kind in ("tensor", "0dim", "0dim_left")
    if op in ("div_trunc", "div_floor") and kind in ("rint", "rfloat"):
        return False  # functional form: torch takes no Python scalar as the first operand
    return not (op in ("clamp", "where") and kind in ("rint", "rfloat"))


def known_binary(op, kind, d1):
    """The divergences this sweep found (reason), or None."""
    return None


def grouped(known_fn, groups):
    """Parameters for a sweep: one item per group, holding its case keys that are not known
    divergences (a short, fast test list), plus one strict-xfail item per known divergence
    (so each divergence stays listed on its own, and a fix shows up as an XPASS failure).
    groups: {group id: [case key tuples]}."""
    params = []
    for gid, keys in groups.items():
        ok = [k for k in keys if not known_fn(*k)]
        if ok:
            params.append(pytest.param(ok, id=gid))
        for k in keys:
            reason = known_fn(*k)
            if reason:
                params.append(
                    pytest.param(
                        [k],
                        id="-".join(map(str, k)),
                        marks=pytest.mark.xfail(strict=True, reason=reason),
                    )
                )
    return params


def sweep(cases_fn, known_fn, groups):
    """A test over `groups` (see `grouped`) that checks every case `cases_fn(*key)` makes
    for each key."""

    @pytest.mark.parametrize("keys", grouped(known_fn, groups))
    def test(keys):
        check_all(case for key in keys for case in cases_fn(*key))

    return test


test_binary_promotion_and_values = sweep(
    _binary_cases,
    known_binary,
    {
        f"{op}-{d1}": [(op, kind, d1) for kind in KINDS if _applies(op, kind)]
        for op in BINARY
        for d1 in DTYPES
        if not (op in ("div_trunc", "div_floor") and d1 in COMPLEX)
    },
)


# In-place arithmetic keeps the tensor's dtype and refuses a result type it cannot hold.
INPLACE = ["add_", "sub_", "mul_", "div_", "floor_divide_", "clamp_"]


def _inplace_cases(op, d1):
    rng = seeded("inplace", op, d1)
    cases = []
    for other in DTYPES + list(SCALARS):
        if op in ("floor_divide_",) and (d1 in COMPLEX or other in COMPLEX + ["complex"]):
            continue  # complex floor division: both raise, not an in-place question
        ta = rand_torch(rng, (3, 4), d1)
        tb = SCALARS[other] if other in SCALARS else rand_torch(rng, (4,), other, nonzero=True)
        if op == "floor_divide_" and other in SCALARS:
            tb = {"bool": True, "int": 2, "float": 2.5}[other]

        def g(ta=ta, tb=tb):
            ga = pair_from_torch(ta)
            gb = pair_from_torch(tb) if isinstance(tb, torch.Tensor) else tb
            ptr = ga.data_ptr()
            r = getattr(ga, op)(min=gb) if op == "clamp_" else getattr(ga, op)(gb)
            assert r is ga and ga.data_ptr() == ptr, "in-place op returned another tensor"
            return ga

        def t(ta=ta, tb=tb):
            ta = ta.clone()
            return ta.clamp_(min=tb) if op == "clamp_" else getattr(ta, op)(tb)

        cases.append((f"{d1}.{op}({other})", g, t, {"tol_scale": 4.0}))
    return cases


def known_inplace(op, d1):
    return None  # every divergence this sweep found is fixed


test_inplace_promotion = sweep(
    _inplace_cases, known_inplace, {op: [(op, d1) for d1 in DTYPES] for op in INPLACE}
)


# ---------------------------------------------------------------------------------------------
# Unary math: result dtype and values for every dtype.

UNARY = [
    "abs",
    "neg",
    "exp",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "silu",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "square",
    "reciprocal",
    "isnan",
    "isfinite",
    "logical_not",
    "bitwise_not",
]


def _unary_fn(lib, name):
    if name in ("gelu", "silu", "relu") and lib is torch:
        return getattr(torch.nn.functional, name)
    return getattr(G if lib is G else torch, name)


def _unary_cases(name, d):
    rng = seeded("unary", name, d)
    cases = []
    for shape in [(3, 4), ()]:
        t = rand_torch(rng, shape, d)
        if d in FLOATS + COMPLEX and shape:
            t[0, 0] = 0.0  # zeros: reciprocal/rsqrt/log/sign edge values
        g = pair_from_torch(t)
        cases.append(
            (
                f"{name}({d}{list(shape)})",
                lambda g=g: _unary_fn(G, name)(g),
                lambda t=t: _unary_fn(torch, name)(t),
                {"tol_scale": 4.0},
            )
        )
    return cases


def known_unary(name, d):
    return None  # every divergence this sweep found is fixed


test_unary_dtypes_and_values = sweep(
    _unary_cases, known_unary, {n: [(n, d) for d in DTYPES] for n in UNARY}
)


def test_round_decimals_and_half_to_even():
    t = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 1.2345, 2.675])
    g = pair_from_torch(t)
    check_all(
        [
            ("round", lambda: G.round(g), lambda: torch.round(t)),
            (
                "round(decimals=2)",
                lambda: G.round(g, decimals=2),
                lambda: torch.round(t, decimals=2),
            ),
        ]
    )


# ---------------------------------------------------------------------------------------------
# Reductions: dim / keepdim / dtype= / correction, result dtypes (int sum -> int64, ...).

_DIMS = [None, 0, -1, (0, 2), (1,)]


def _red_calls(name):
    """(label, kwargs) variants of reduction `name`."""
    out = []
    for dim in _DIMS:
        for keepdim in (False, True):
            if dim is None and keepdim:
                continue
            kw = {} if dim is None else {"dim": dim}
            if dim is not None:
                kw["keepdim"] = keepdim
            if isinstance(dim, tuple) and name in (
                "prod",
                "max",
                "min",
                "argmax",
                "argmin",
                "all",
                "any",
            ):
                if name in ("all", "any"):
                    pass  # torch >= 2.2 takes a tuple of dims for all/any
                else:
                    continue  # torch takes a single int dim for these
            if name in ("var", "std"):
                for corr in (0, 1, 2):
                    out.append(dict(kw, correction=corr))
                out.append(dict(kw, unbiased=False))
            elif name == "norm":
                for p in (2, 1, float("inf"), 3):
                    out.append(dict(kw, p=p))
            else:
                out.append(kw)
    if name in ("sum", "prod", "mean"):
        out += [{"dtype": "float64"}, {"dim": 1, "dtype": "int32"}]
    return out


REDUCTIONS = [
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "var",
    "std",
    "all",
    "any",
    "norm",
]


def _fix(kw, lib):
    return {k: (getattr(lib, v) if k == "dtype" else v) for k, v in kw.items()}


def _reduction_cases(name, d):
    rng = seeded("red", name, d)
    cases = []
    t = rand_torch(rng, (3, 4, 5), d)
    if name == "prod" and d in FLOATS + COMPLEX:
        t = t / 3  # keep products of 20 values inside float16 range
    g = pair_from_torch(t)
    for kw in _red_calls(name):
        cases.append(
            (
                f"{name}({d}, {kw})",
                lambda g=g, kw=kw: getattr(g, name)(**_fix(kw, G)),
                lambda t=t, kw=kw: getattr(t, name)(**_fix(kw, torch)),
                {"tol_scale": 30.0},
            )
        )
    return cases


def known_reduction(name, d):
    return None  # every divergence this sweep found is fixed


test_reductions = sweep(
    _reduction_cases, known_reduction, {n: [(n, d) for d in DTYPES] for n in REDUCTIONS}
)


def test_reductions_on_0dim_and_empty():
    cases = []
    # (max()/amax() of an empty tensor: test_pinned)
    for name in ["sum", "mean", "prod", "argmax", "all", "any", "std"]:
        for shape, kw in [
            ((), {}),
            ((), {"dim": 0}),
            ((0,), {}),
            ((0, 3), {"dim": 0}),
            ((0, 3), {"dim": 1}),
            ((2, 0), {"dim": 1}),
        ]:
            t = torch.zeros(shape)
            g = pair_from_torch(t)
            cases.append(
                (
                    f"{name}({list(shape)}, {kw})",
                    lambda g=g, kw=kw, n=name: getattr(g, n)(**kw),
                    lambda t=t, kw=kw, n=name: getattr(t, n)(**kw),
                )
            )
    check_all(cases)


# ---------------------------------------------------------------------------------------------
# Views: shape, stride(), storage_offset(), is_contiguous, shared memory, values. Inputs are
# random numpy arrays made non-contiguous with numpy itself (transposes, positive steps) and
# wrapped by from_numpy in both libraries, so no gpu_tensor view op builds the input.


def _random_base(rng):
    """A float32 numpy array of rank 0-4, often non-contiguous (positive steps, transposed)."""
    nd = int(rng.integers(0, 5))
    shape = [int(rng.choice([1, 2, 3, 4, 6])) for _ in range(nd)]
    if nd and rng.random() < 0.05:
        shape[int(rng.integers(nd))] = 0
    steps = [int(rng.choice([1, 1, 2])) for _ in range(nd)]
    full = [s * st for s, st in zip(shape, steps, strict=True)]
    a = np.arange(int(np.prod(full)), dtype=np.float32).reshape(full)
    if nd:
        a = a[tuple(slice(None, None, st) for st in steps)]
    if nd > 1 and rng.random() < 0.5:
        a = a.transpose(rng.permutation(nd))
    return a


def _factor(rng, n, parts):
    """`parts` positive ints whose product is n (n > 0)."""
    out = [1] * parts
    for p in (2, 3, 5, 7, 11, 13):
        while n % p == 0:
            n //= p
            out[int(rng.integers(parts))] *= p
    out[0] *= n
    return out


def _new_shape(rng, shape):
    n = int(np.prod(shape))
    k = int(rng.integers(1, 4))
    new = _factor(rng, n, k) if n else [0] + [int(rng.integers(1, 3)) for _ in range(k - 1)]
    new = [int(x) for x in rng.permutation(new)]
    if rng.random() < 0.3 and n:
        new[int(rng.integers(k))] = -1
    return new


def _dim(rng, nd, extra=0):
    n = max(nd + extra, 1)
    return int(rng.integers(-n, n))


def _view_args(op, rng, shape):
    """Random arguments for view op `op` on a tensor of `shape` (a tuple to splat)."""
    nd = len(shape)
    if op in ("view", "reshape"):
        return (_new_shape(rng, shape),)
    if op == "transpose":
        return (_dim(rng, nd), _dim(rng, nd))
    if op == "permute":
        return tuple(int(x) for x in rng.permutation(nd))
    if op == "movedim":
        return (_dim(rng, nd), _dim(rng, nd))
    if op == "narrow":
        d = _dim(rng, nd)
        size = shape[d] if nd else 1
        start = int(rng.integers(0, size + 1))
        return (d, start, int(rng.integers(0, size - start + 1)))
    if op == "select":
        d = _dim(rng, nd)
        size = shape[d] if nd else 1
        return (d, int(rng.integers(-size, size)) if size else 0)
    if op == "expand":
        new = [
            int(rng.choice([1, 3])) if s == 1 else (-1 if rng.random() < 0.3 else s) for s in shape
        ]
        return tuple([2] * int(rng.integers(0, 2)) + new)
    if op == "unsqueeze":
        return (_dim(rng, nd, 1),)
    if op == "squeeze":
        r = rng.random()
        if r < 0.3:
            return ()
        if r < 0.7 or nd < 2:
            return (_dim(rng, nd),)
        return (tuple(sorted({_dim(rng, nd), _dim(rng, nd)})),)
    if op == "flatten":
        a, b = sorted([int(rng.integers(0, max(nd, 1))), int(rng.integers(0, max(nd, 1)))])
        return (a, b)
    if op == "unflatten":
        d = _dim(rng, nd)
        sizes = _new_shape(rng, (shape[d],)) if nd else [1]
        return (d, sizes)
    if op == "unfold":
        d = _dim(rng, nd)
        size = shape[d] if nd else 1
        return (d, int(rng.integers(0, size + 1)), int(rng.integers(1, 3)))
    if op == "diagonal":  # distinct dims (same dims: test_error_classes)
        d1, d2 = (int(x) for x in rng.permutation(nd)[:2]) if nd >= 2 else (0, 1)
        return (int(rng.integers(-2, 3)), d1 - nd * int(rng.integers(0, 2)), d2)
    if op in ("t", "mT", "T", "contiguous", "contiguous_cl", "clone", "clone_pf"):
        return ()
    if op == "as_strided":
        k = int(rng.integers(0, 4))
        size = [int(rng.integers(1, 4)) for _ in range(k)]
        stride = [int(rng.integers(0, 4)) for _ in range(k)]
        return (size, stride, int(rng.integers(0, 3)))
    raise AssertionError(op)


def _apply_view(lib, x, op, args):
    if op in ("mT", "T"):
        return getattr(x, op)
    if op == "contiguous_cl":
        return x.contiguous(memory_format=lib.channels_last)
    if op == "clone_pf":
        return x.clone(memory_format=lib.preserve_format)
    return getattr(x, op)(*args)


def _view_state(lib, r, base, exact=False):
    """What a user can see of a view's layout. The sweeps compare the layout that decides
    memory access (`exact=False`): strides of dims longer than 1 and the offset of non-empty
    results. torch's exact values for size-1 dims and empty views are pinned separately
    (test_exact_strides_*), so one known difference there does not hide others here."""
    storage = r.untyped_storage().data_ptr()
    shares = storage == base.untyped_storage().data_ptr()
    nonempty = r.numel() > 0
    st = {
        "shape": tuple(r.shape),
        "stride": tuple(
            s if (exact or n > 1) else None for s, n in zip(r.stride(), r.shape, strict=True)
        )
        if (exact or nonempty)
        else None,
        "offset": r.storage_offset() - base.storage_offset() if (exact or nonempty) else None,
        "contig": r.is_contiguous(),
        "shares": shares,
        # torch's data_ptr() of an empty tensor is 0: compare pointers for non-empty only
        "ptr_delta": (r.data_ptr() - base.data_ptr())
        if shares and nonempty and base.numel()
        else None,
    }
    if r.dim() == 4 and (exact or nonempty):
        st["channels_last"] = r.is_contiguous(memory_format=lib.channels_last)
    return st


VIEW_OPS = [
    "view",
    "reshape",
    "transpose",
    "permute",
    "movedim",
    "narrow",
    "select",
    "expand",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "unfold",
    "diagonal",
    "t",
    "mT",
    "T",
    "contiguous",
    "contiguous_cl",
    "clone",
    "clone_pf",
    "as_strided",
]
KNOWN_VIEW = {}


def _view_diff(tr, gr, tb, gb) -> str | None:
    """None when gt's view `gr` of `gb` has torch's values and `_view_state`, else what
    differs."""
    d = diff(gr, tr)
    if d:
        return d
    ts, gs = _view_state(torch, tr, tb), _view_state(G, gr, gb)
    differ = [f"{k} gt {gs.get(k)} vs torch {ts[k]}" for k in ts if ts[k] != gs.get(k)]
    return ", ".join(differ) or None


@pytest.mark.parametrize("op", [xfail_if(KNOWN_VIEW, o, o) for o in VIEW_OPS])
def test_view_ops_layout(op):
    rng = seeded("view", op)
    bad = []
    for _ in range(60):
        a = _random_base(rng)
        if op == "as_strided" and a.size == 0:
            continue  # empty storage: test_pinned
        if op == "contiguous_cl" and a.ndim != 4:
            a = a.reshape(a.shape + (1,) * (4 - a.ndim)) if a.ndim < 4 else a
        args = _view_args(op, rng, a.shape)
        if op in ("permute", "expand") and not args:
            continue  # torch: TypeError for a missing argument list; not a layout question
        if a.ndim == 0 and op in ("movedim", "mT", "unflatten"):
            continue  # 0-d inputs: test_pinned
        tb, gb = torch.from_numpy(a), G.from_numpy(a)
        label = f"{op}{args} on shape {a.shape} stride {tb.stride()}"
        t, g = outcome(_apply_view, torch, tb, op, args), outcome(_apply_view, G, gb, op, args)
        if (both := both_returned(label, t, g, bad)) is None:
            continue
        d = _view_diff(*both, tb, gb)
        if d:
            bad.append(f"{label}: {d}")
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


# ---------------------------------------------------------------------------------------------
# Indexing: get and set with ints, slices, None, Ellipsis, integer tensors, bool masks.


def _random_index(rng, shape, *, advanced=True, ints=True, ellipsis=True):
    """A random index tuple for a tensor of `shape`, and whether it is basic-only."""
    parts, d, basic = [], 0, True
    nd = len(shape)
    used_ellipsis = not ellipsis
    while d < nd and len(parts) < nd + 2:
        r = rng.random()
        if r < 0.1:
            parts.append(None)
        elif r < 0.18 and not used_ellipsis:
            parts.append(Ellipsis)
            used_ellipsis = True
            d = nd - int(rng.integers(0, nd - d + 1))
        elif r < 0.4 and ints:
            parts.append(_int_index(rng, shape[d], 0.1))
            d += 1
        elif r < 0.75 or not advanced:
            n = shape[d]
            a = int(rng.integers(-n - 1, n + 2)) if rng.random() < 0.6 else None
            b = int(rng.integers(-n - 1, n + 2)) if rng.random() < 0.6 else None
            parts.append(slice(a, b, int(rng.choice([1, 1, 2, 3]))))
            d += 1
        elif r < 0.9:
            n = shape[d]
            k = int(rng.integers(0, 4))
            idx = (
                rng.integers(-n, n, size=(k,) if rng.random() < 0.7 else (2, k))
                if n
                else np.zeros((0,), np.int64)
            )
            parts.append(torch.from_numpy(np.asarray(idx, np.int64)))
            basic = False
            d += 1
        else:
            k = int(rng.integers(1, min(2, nd - d) + 1))
            parts.append(torch.from_numpy(np.asarray(rng.random(shape[d : d + k]) < 0.5)))
            basic = False
            d += k
    return tuple(parts), basic


def _int_index(rng, n, p_out):
    """An int index into a dim of size n: negative too, out of range with chance ~`p_out`
    at either end."""
    return int(rng.integers(-n - (rng.random() < p_out), n + (rng.random() < p_out))) if n else 0


def _g_index(idx):
    return tuple(pair_from_torch(p) if isinstance(p, torch.Tensor) else p for p in idx)


_GETITEM_MODES = {
    # mode: _random_index options
    "basic": {"advanced": False},
    "advanced_no_int": {"ints": False, "ellipsis": False},
    "advanced": {},
}
KNOWN_GETITEM = {}


@pytest.mark.parametrize("mode", [xfail_if(KNOWN_GETITEM, m, m) for m in _GETITEM_MODES])
def test_getitem_random(mode):
    rng = seeded("getitem", mode)
    bad = []
    for _ in range(250):
        shape = tuple(int(rng.choice([1, 2, 3, 4, 5])) for _ in range(int(rng.integers(1, 5))))
        tb = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape)
        gb = pair_from_torch(tb)
        idx, basic = _random_index(rng, shape, **_GETITEM_MODES[mode])
        gidx = _g_index(idx)
        label = f"x{list(shape)}[{idx}]"
        t, g = outcome(tb.__getitem__, idx), outcome(gb.__getitem__, gidx)
        if (both := both_returned(label, t, g, bad)) is None:
            continue
        d = _view_diff(*both, tb, gb) if basic else diff(both[1], both[0])
        if d:
            bad.append(f"{label}: {d}")
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


# Basic indexing with exact layouts: every result, empty ones included, must have torch's
# shape, stride() and storage_offset() (torch keeps an empty slice's clamped start and its
# step, and its offset may lie past the storage's end), on contiguous, transposed and sliced
# bases, each built by the library under test from one arange storage.


def _layout_base(lib, rng_state):
    """(base, recipe) from a recipe drawn once: shape of 0-4 dims (size-0/1 dims often), then
    maybe a slicing (starts, steps) and a permutation, applied with `lib`'s own view ops."""
    shape, cut, perm = rng_state
    full = [n * st + a for n, (a, st) in zip(shape, cut, strict=True)] if cut else shape
    x = lib.arange(int(np.prod(full)) if full else 1, dtype=lib.float32).reshape(full)
    if cut:
        x = x[tuple(slice(a, a + n * st, st) for n, (a, st) in zip(shape, cut, strict=True))]
    return x.permute(*perm) if perm else x


def _layout_recipe(rng):
    nd = int(rng.integers(0, 5))
    shape = tuple(int(rng.choice([0, 1, 1, 2, 3, 4])) for _ in range(nd))
    kind = rng.choice(["contiguous", "transposed", "sliced", "sliced+transposed"])
    cut = (
        tuple((int(rng.integers(0, 3)), int(rng.integers(1, 3))) for _ in range(nd))
        if ("sliced" in kind and nd)
        else None
    )
    perm = tuple(int(p) for p in rng.permutation(nd)) if "transposed" in kind and nd > 1 else None
    return shape, cut, perm


def _basic_index(rng, shape):
    """ints (negative too, rarely out of range), slices (bounds past the ends, steps 1-3),
    None and at most one Ellipsis."""
    parts, d, nd, ell = [], 0, len(shape), False
    for _ in range(int(rng.integers(0, nd + 3))):
        r = rng.random()
        if r < 0.15:
            parts.append(None)
        elif r < 0.25 and not ell:
            parts.append(Ellipsis)
            ell = True
            d = max(d, nd - int(rng.integers(0, nd - d + 1)))
        elif d >= nd:
            continue
        elif r < 0.45:
            parts.append(_int_index(rng, shape[d], 0.05))
            d += 1
        else:
            a, b = _bound(rng, shape[d]), _bound(rng, shape[d])
            parts.append(slice(a, b, int(rng.integers(1, 4)) if rng.random() < 0.7 else None))
            d += 1
    return parts[0] if len(parts) == 1 and rng.random() < 0.5 else tuple(parts)


def _bound(rng, n):
    """A slice bound for a dim of size n: often past either end, sometimes None."""
    return int(rng.integers(-n - 3, n + 4)) if rng.random() < 0.7 else None


def _layout_diff(tr, gr) -> str | None:
    """None when gt's result `gr` has torch's values, shape, stride() and storage_offset()."""
    tl, gl = [(tuple(r.shape), tuple(r.stride()), r.storage_offset()) for r in (tr, gr)]
    return diff(gr, tr) or (None if tl == gl else f"(shape, stride, offset) gt {gl} vs torch {tl}")


def test_basic_index_exact_layout():
    rng = seeded("basic-index-layout")
    bad = []
    for _ in range(3000):
        recipe = _layout_recipe(rng)
        tb, gb = _layout_base(torch, recipe), _layout_base(G, recipe)
        idx = _basic_index(rng, recipe[0])
        label = f"{recipe}[{idx}]"
        t, g = outcome(tb.__getitem__, idx), outcome(gb.__getitem__, idx)
        both_returned(label, t, g, bad, _layout_diff)
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


def test_narrow_exact_layout():
    """narrow (and a chain of narrows) on views, lengths 0 included: torch's exact layout."""
    rng = seeded("narrow-layout")
    bad = []
    for _ in range(800):
        recipe = _layout_recipe(rng)
        if not recipe[0]:
            continue  # 0-d: narrow raises in both (test_error_classes)
        tx, gx = _layout_base(torch, recipe), _layout_base(G, recipe)
        steps = []
        for _step in range(2):
            nd = tx.dim()
            d = int(rng.integers(-nd, nd))
            size = tx.shape[d]
            start = int(rng.integers(-size, size + 1)) if size else 0
            s0 = start % size if size and start < 0 else start
            length = int(rng.integers(0, size - s0 + 1))
            steps.append((d, start, length))
            tr, gr = tx.narrow(d, start, length), gx.narrow(d, start, length)
            dd = _layout_diff(tr, gr)
            if dd:
                bad.append(f"{recipe} narrow{steps}: {dd}")
                break
            tx, gx = tr, gr
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


def test_expand_exact_layout():
    """expand on contiguous, transposed and sliced bases: torch's exact strides (size-1 and
    new leading dims included), offset, values, and its error class for bad sizes."""
    rng = seeded("expand-layout")
    bad = []
    for _ in range(600):
        recipe = _layout_recipe(rng)
        tb, gb = _layout_base(torch, recipe), _layout_base(G, recipe)
        sizes = [
            int(rng.choice([0, 1, 3])) if n == 1 else int(rng.choice([-1, n, n, 2]))
            for n in recipe[0]
        ]
        sizes = [int(rng.choice([0, 1, 2, -1])) for _ in range(int(rng.integers(0, 3)))] + sizes
        if not sizes:
            continue  # torch: TypeError for a missing argument list; not a layout question
        if not recipe[0] and -1 in sizes and 0 in sizes:
            continue  # torch 2.13 lets a 0-d tensor take -1 as a new dim of an empty result
            # and reports -1 in its shape (zeros(()).expand(0, -1).shape == (0, -1)): a bug
        label = f"{recipe}.expand{tuple(sizes)}"
        t, g = outcome(tb.expand, *sizes), outcome(gb.expand, *sizes)
        both_returned(label, t, g, bad, _layout_diff)
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


def _setters(tb, gb, idx, gidx, tv, gv):
    """(gt's, torch's) `x[idx] = v` as calls for `compare`: torch's writes into a clone of
    `tb`, gt's into `gb` (a copy of tb already)."""

    def tset():
        t = tb.clone()
        t[idx] = tv
        return t

    def gset():
        gb[gidx] = gv
        return gb

    return gset, tset


def test_setitem_random():
    rng = seeded("setitem")
    bad = []
    for _ in range(300):
        shape = tuple(int(rng.choice([1, 2, 3, 4])) for _ in range(int(rng.integers(1, 4))))
        dname_ = str(rng.choice(["float32", "int64", "bool", "float16"]))
        tb = rand_torch(rng, shape, dname_)
        gb = pair_from_torch(tb)
        idx, _ = _random_index(rng, shape)
        # no duplicate positions: torch leaves the winner of duplicate writes unspecified
        if any(isinstance(p, torch.Tensor) and p.dtype == torch.int64 for p in idx):
            continue
        kind = rng.choice(["int", "float", "tensor", "0dim", "bool"])
        try:
            target_shape = tuple(tb[idx].shape)
        except (IndexError, RuntimeError):
            target_shape = ()
        # advanced-index writes need a value of the tensor's own dtype in torch (pinned in
        # test_index_put_dtype_mismatch); basic-index writes copy from any dtype
        adv = any(isinstance(p, torch.Tensor) for p in idx)
        vd = dname_ if adv else str(rng.choice(["float32", "int64", "float64"]))
        if kind == "tensor":
            vshape = target_shape[int(rng.integers(0, len(target_shape) + 1)) :]
            tv = rand_torch(rng, vshape, vd)
        elif kind == "0dim":
            tv = rand_torch(rng, (), vd)
        else:
            tv = {"int": 7, "float": -2.5, "bool": True}[kind]
        gv = pair_from_torch(tv) if isinstance(tv, torch.Tensor) else tv
        d = compare(*_setters(tb, gb, idx, _g_index(idx), tv, gv))
        if d:
            bad.append(f"x{list(shape)}:{dname_}[{idx}] = {kind} {getattr(tv, 'dtype', '')}: {d}")
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


def test_setitem_int_tensor_index_unique():
    rng = seeded("setitem-adv")
    cases = []
    for _ in range(60):
        n = int(rng.integers(2, 6))
        tb = rand_torch(rng, (n, 3), "float32")
        k = int(rng.integers(1, n + 1))
        rows = torch.from_numpy(rng.permutation(n)[:k].astype(np.int64))
        tv = rand_torch(rng, (k, 3) if rng.random() < 0.5 else (3,), "float32")
        gb, grows, gv = pair_from_torch(tb), pair_from_torch(rows), pair_from_torch(tv)
        cases.append(
            (f"x[{rows.tolist()}] = {tuple(tv.shape)}", *_setters(tb, gb, rows, grows, tv, gv))
        )
        gb2, tb2 = pair_from_torch(tb), tb.clone()
        cases.append(
            (
                "x[:, 0:2] += 1; x[x > 1] -= 1",
                lambda gb2=gb2: _iadd_cols(gb2),
                lambda tb2=tb2: _iadd_cols(tb2),
            )
        )
    check_all(cases)


def _iadd_cols(x):
    x[:, 0:2] += 1
    x[x > 1] -= 1
    return x


# ---------------------------------------------------------------------------------------------
# gather / scatter / index_select / masked_fill


def _gather_case(rng):
    nd = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 5)) for _ in range(nd))
    dim = _dim(rng, nd)
    ishape = tuple(int(rng.integers(1, s + 1)) for s in shape)
    ishape = tuple(int(rng.integers(1, 6)) if i == dim % nd else s for i, s in enumerate(ishape))
    idx = rng.integers(0, shape[dim], size=ishape)
    return shape, dim, torch.from_numpy(idx.astype(np.int64))


def test_gather_scatter_index_select_masked_fill():
    rng = seeded("gather")
    cases = []
    for i in range(60):
        shape, dim, idx = _gather_case(rng)
        d = str(rng.choice(["float32", "int64", "float64", "int32"]))
        t = rand_torch(rng, shape, d)
        g, gi = pair_from_torch(t), pair_from_torch(idx)
        cases.append(
            (
                f"gather({shape}, {dim}, {tuple(idx.shape)})",
                lambda g=g, gi=gi, dim=dim: G.gather(g, dim, gi),
                lambda t=t, idx=idx, dim=dim: torch.gather(t, dim, idx),
            )
        )
        # scatter with a scalar value (positions may repeat: same value, deterministic)
        val = 2.0 if d[0] == "f" else 2
        cases.append(
            (
                f"scatter({shape}, {dim}, {val})",
                lambda g=g, gi=gi, dim=dim, v=val: G.scatter(g, dim, gi, v),
                lambda t=t, idx=idx, dim=dim, v=val: torch.scatter(t, dim, idx, v),
            )
        )
        # scatter_add with a src (sums are order-free)
        src = rand_torch(rng, tuple(idx.shape), d)
        gs = pair_from_torch(src)
        cases.append(
            (
                f"scatter_add({shape}, {dim}, src)",
                lambda g=g, gi=gi, gs=gs, dim=dim: G.scatter_add(g, dim, gi, gs),
                lambda t=t, idx=idx, src=src, dim=dim: torch.scatter_add(t, dim, idx, src),
                {"tol_scale": 4.0},
            )
        )
        sel = torch.from_numpy(
            rng.integers(0, shape[dim], size=int(rng.integers(0, 5))).astype(np.int64)
        )  # (negative indices: test_pinned)
        gsel = pair_from_torch(sel)
        cases.append(
            (
                f"index_select({shape}, {dim}, {sel.tolist()})",
                lambda g=g, s=gsel, dim=dim: G.index_select(g, dim, s),
                lambda t=t, sel=sel, dim=dim: torch.index_select(t, dim, sel),
            )
        )
        mask = torch.from_numpy(np.asarray(rng.random(shape[-1:] if i % 2 else shape) < 0.5))
        gmask = pair_from_torch(mask)
        for val in (1.5, 3, True, torch.tensor(2.25)):
            gval = pair_from_torch(val) if isinstance(val, torch.Tensor) else val
            cases.append(
                (
                    f"masked_fill({shape}:{d}, mask{tuple(mask.shape)}, {val!r})",
                    lambda g=g, m=gmask, v=gval: G.masked_fill(g, m, v),
                    lambda t=t, m=mask, v=val: torch.masked_fill(t, m, v),
                )
            )
    check_all(cases)


# ---------------------------------------------------------------------------------------------
# cat / stack / split / chunk / tensor_split


def test_cat_stack_promotion_and_shapes():
    rng = seeded("cat")
    cases = []
    for _ in range(80):
        nd = int(rng.integers(1, 4))
        shape = [int(rng.integers(0, 4)) for _ in range(nd)]
        dim = _dim(rng, nd)
        ts = []
        for _k in range(int(rng.integers(1, 4))):
            s = list(shape)
            s[dim] = int(rng.integers(0, 4))
            ts.append(rand_torch(rng, tuple(s), str(rng.choice(DTYPES))))
        gs = [pair_from_torch(t) for t in ts]
        label = f"{[(tuple(t.shape), dname(t.dtype)) for t in ts]} dim={dim}"
        cases.append(
            (
                f"cat {label}",
                lambda gs=gs, dim=dim: G.cat(gs, dim),
                lambda ts=ts, dim=dim: torch.cat(ts, dim),
            )
        )
        same = [rand_torch(rng, tuple(shape), str(rng.choice(DTYPES))) for _ in range(2)]
        sdim = _dim(rng, nd, 1)
        gsame = [pair_from_torch(t) for t in same]
        cases.append(
            (
                f"stack {[dname(t.dtype) for t in same]} {shape} dim={sdim}",
                lambda gs=gsame, d=sdim: G.stack(gs, d),
                lambda ts=same, d=sdim: torch.stack(ts, d),
            )
        )
    check_all(cases)


def test_split_chunk_views():
    rng = seeded("split")
    bad = []
    for _ in range(120):
        n = int(rng.integers(1, 9))  # (empty inputs: test_pinned)
        t = torch.arange(n * 3, dtype=torch.float32).reshape(n, 3)
        g = pair_from_torch(t)
        which = rng.choice(["split", "split_list", "chunk", "tensor_split", "tensor_split_idx"])
        if which == "split":
            args = (int(rng.integers(1, 5)),)
        elif which == "split_list":
            parts = _factor(rng, n, 2) if n else [0, 0]
            args = ([int(parts[0]), n - int(parts[0])] if rng.random() < 0.8 else [n + 1],)
            which = "split"
        elif which == "chunk":
            args = (int(rng.integers(1, 6)),)
        elif which == "tensor_split":
            args = (int(rng.integers(1, 6)),)
        else:
            args = (sorted(int(x) for x in rng.integers(0, n + 2, size=2)),)  # (< 0: pinned)
            which = "tensor_split"
        label = f"{which}{args} of {tuple(t.shape)}"
        both = both_returned(
            label, outcome(getattr(t, which), *args), outcome(getattr(g, which), *args), bad
        )
        if both is None:
            continue
        tr, gr = both
        d = diff(list(gr), list(tr))
        if not d:
            ts = [_view_state(torch, r, t) for r in tr]
            gs = [_view_state(G, r, g) for r in gr]
            if ts != gs:
                d = f"layout gt {gs} vs torch {ts}"
        if d:
            bad.append(f"{label}: {d}")
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


# ---------------------------------------------------------------------------------------------
# Pinned cases: one minimal repro per divergence or edge the sweeps leave out. `lib` is G or
# torch; each case returns what is compared (a tensor, a tuple of plain values, ...).


def _nonempty_slice(lib):
    return lib.arange(4)[4:].storage_offset(), lib.arange(4).narrow(0, 4, 0).storage_offset()


def _ellipsis_between(lib):
    x = lib.zeros(5, 2, 2)  # torch: (5, 2), gpu_tensor (2, 5)
    return tuple(x[:, lib.tensor([1, 0]), ..., lib.tensor([1, 0])].shape)


def _index_put_mismatch(lib):
    x = lib.zeros(3)
    x[lib.tensor([True, False, True])] = lib.tensor([1.0, 2.0], dtype=lib.float64)
    return x


def _clone_size1(lib):
    x = lib.zeros(2, 4)[:1, :1]  # (1, 1) stride (4, 1)
    return tuple(x.clone().stride())


def _unsqueeze_size1(lib):
    x = lib.arange(6.0).view(1, 6).t()  # (6, 1) stride (1, 6)
    return tuple(x.unsqueeze(0).stride())


def _view_size1(lib):
    x = lib.arange(4.0)[::2][:1]  # (1,) stride (2,)
    return tuple(x.view(1, 1).stride())


def _max_empty(lib):
    return lib.zeros(0).max()


def _amax_empty(lib):
    return lib.zeros(0).amax()


def _half_mix(lib):
    # -2.3 in float16 rounds to -2.296875 in bfloat16, exactly -3 * 0.765625
    a, b = lib.tensor(-2.3, dtype=lib.float16), lib.tensor([0.765625], dtype=lib.bfloat16)
    return a // b, a % b


PINNED = {
    # name: (fn(lib), known divergence reason or None)
    "tensor_minus_true": (
        lambda lib: lib.tensor([1, 2]) - True,
        known_binary("sub", "bool", "int64"),
    ),
    "bitwise_on_float_error_class": (
        lambda lib: _raises_class(lambda: lib.tensor([1.0]) & lib.tensor([1.0]), exact=True),
        None,
    ),
    "half_bfloat16_operand_rounding": (
        _half_mix,
        known_binary("remainder", "0dim_left", "bfloat16"),
    ),
    "abs_complex_dtype": (
        lambda lib: lib.abs(lib.tensor([3 + 4j])),
        known_unary("abs", "complex64"),
    ),
    "all_uint8_dtype": (
        lambda lib: lib.tensor([1, 2], dtype=lib.uint8).all(),
        known_reduction("all", "uint8"),
    ),
    "max_of_empty_error_class": (lambda lib: _raises_class(lambda: _max_empty(lib)), None),
    "amax_of_empty_error_class": (lambda lib: _raises_class(lambda: _amax_empty(lib)), None),
    "empty_tensor_strides": (
        lambda lib: (tuple(lib.zeros(6, 0).stride()), tuple(lib.zeros(0, 3, 2).stride())),
        None,
    ),
    "empty_slice_offset": (_nonempty_slice, None),
    "none_index_stride": (lambda lib: tuple(lib.zeros(2, 3)[None].stride()), None),
    "unsqueeze_keeps_size1_stride": (_unsqueeze_size1, None),
    "view_size1_stride": (_view_size1, None),
    "clone_keeps_size1_strides": (_clone_size1, None),
    "clone_non_dense_order": (
        lambda lib: tuple(lib.zeros(3, 8)[:, ::2].t().clone().stride()),
        None,
    ),
    "movedim_0d": (lambda lib: lib.tensor(1.0).movedim(0, -1), None),
    "mT_0d": (lambda lib: lib.tensor(1.0).mT, None),
    "unflatten_0d_error_class": (
        lambda lib: _raises_class(lambda: lib.tensor(1.0).unflatten(0, [1])),
        None,
    ),
    "diagonal_same_dims_error_class": (
        lambda lib: _raises_class(lambda: lib.zeros(2, 2).diagonal(0, 1, 1)),
        None,
    ),
    "as_strided_out_of_empty_storage": (
        lambda lib: _raises_class(lambda: lib.zeros(0).as_strided((1, 3), (1, 0))),
        None,
    ),
    "as_strided_out_of_storage": (
        lambda lib: _raises_class(lambda: lib.zeros(4).as_strided((3, 3), (1, 1))),
        None,
    ),
    "index_select_negative": (
        lambda lib: _raises_class(lambda: lib.index_select(lib.arange(3), 0, lib.tensor([-1]))),
        None,
    ),
    "getitem_int_with_tensor_index": (
        lambda lib: tuple(lib.zeros(2, 3, 4)[0, :, lib.tensor([0, 1])].shape),
        None,
    ),
    "getitem_ellipsis_between_tensor_indices": (_ellipsis_between, None),
    "index_put_dtype_mismatch": (lambda lib: _raises_class(lambda: _index_put_mismatch(lib)), None),
    "split_empty": (lambda lib: len(lib.zeros(0, 3).split(3)), None),
    "chunk_empty": (lambda lib: len(lib.zeros(0, 3).chunk(2)), None),
    "tensor_split_negative": (
        lambda lib: [tuple(p.shape) for p in lib.zeros(4, 3).tensor_split([-2, 0])],
        None,
    ),
    "div_trunc_complex": (
        lambda lib: lib.div(lib.tensor([3 + 1j]), lib.tensor([2 + 0j]), rounding_mode="trunc"),
        None,
    ),
    "div_trunc_uint8_by_negative_0dim": (
        lambda lib: lib.div(
            lib.tensor([200, 7], dtype=lib.uint8),
            lib.tensor(-3, dtype=lib.int16),
            rounding_mode="trunc",
        ),
        known_binary("div_trunc", "0dim", "uint8"),
    ),
    "inplace_on_empty": (
        lambda lib: (
            lib.zeros(0, 3).add_(1),
            lib.zeros(2, 0).fill_(1),
            _set(lib.zeros(0, 3), slice(None), 1.0),
        ),
        None,
    ),
    "bool_floor_divide": (
        lambda lib: lib.tensor([True]) // lib.tensor([True]),
        known_binary("floor_divide", "bool", "bool"),
    ),
    "gelu_int": (
        lambda lib: (lib.nn.functional.gelu if lib is torch else lib.gelu)(lib.tensor([1, 2])),
        known_unary("gelu", "int64"),
    ),
    "sigmoid_complex": (
        lambda lib: lib.sigmoid(lib.tensor([1 + 1j])),
        known_unary("sigmoid", "complex64"),
    ),
    "max_complex": (
        lambda lib: lib.tensor([1 + 1j, 2 + 0j]).max(),
        known_reduction("max", "complex64"),
    ),
    "argmax_bool": (
        lambda lib: lib.tensor([False, True]).argmax(),
        known_reduction("argmax", "bool"),
    ),
}


def _raises_class(fn, exact=False):
    """The class name of what fn raises ('none' when it returns): as a comparable value."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__ if exact and isinstance(e, RuntimeError) else _err_kind(e)
    return "none"


@pytest.mark.parametrize(
    "name", [xfail_if({k: v[1] for k, v in PINNED.items() if v[1]}, n, n) for n in PINNED]
)
def test_pinned(name):
    fn = PINNED[name][0]
    check_all([(name, lambda: fn(G), lambda: fn(torch))])


# ---------------------------------------------------------------------------------------------
# Creation: dtype inference from Python data, factory dtypes and sizes, *_like layouts.


def _with_default(lib, dtype_name, fn):
    old = lib.get_default_dtype()
    lib.set_default_dtype(getattr(lib, dtype_name))
    try:
        return fn()
    finally:
        lib.set_default_dtype(old)


CREATION = {
    # Python data -> tensor(): dtype inference, nesting, mixing
    "ints": lambda lib: lib.tensor([1, 2]),
    "floats": lambda lib: lib.tensor([1.0, 2]),
    "bools": lambda lib: lib.tensor([True, False]),
    "bool_int": lambda lib: lib.tensor([True, 1]),
    "int_float_nested": lambda lib: lib.tensor([[1, 2], [3.5, 4]]),
    "complex_mix": lambda lib: lib.tensor([1 + 2j, 1, True]),
    "bool_float": lambda lib: lib.tensor([True, 2.5]),
    "tuple_nested": lambda lib: lib.tensor(((1, 2), [3, 4])),
    "empty_list": lambda lib: lib.tensor([]),
    "empty_nested": lambda lib: lib.tensor([[], []]),
    "scalar_int": lambda lib: lib.tensor(3),
    "scalar_float": lambda lib: lib.tensor(3.0),
    "scalar_bool": lambda lib: lib.tensor(True),
    "scalar_complex": lambda lib: lib.tensor(1j),
    "np_float64_scalar": lambda lib: lib.tensor(np.float64(1.5)),
    "np_int32_scalar": lambda lib: lib.tensor(np.int32(3)),
    "np_float16_array": lambda lib: lib.tensor(np.array([1.5, 2], np.float16)),
    "list_of_np_scalars": lambda lib: lib.tensor([np.float64(1.5), np.float64(2)]),
    "list_of_0d_tensors": lambda lib: lib.tensor([lib.tensor(1.5), lib.tensor(2.5)]),
    "big_int": lambda lib: lib.tensor([2**40, -1]),
    "nan_inf": lambda lib: lib.tensor([float("nan"), float("inf"), -0.0]),
    "dtype_float_to_int": lambda lib: lib.tensor([1.7, -1.7, 2.5], dtype=lib.int64),
    "dtype_int_to_bool": lambda lib: lib.tensor([0, 2, -1], dtype=lib.bool),
    "dtype_bfloat16": lambda lib: lib.tensor([1.1, 2.2], dtype=lib.bfloat16),
    "dtype_complex_from_float": lambda lib: lib.tensor([1.5], dtype=lib.complex128),
    "default_float64_floats": lambda lib: _with_default(
        lib, "float64", lambda: lib.tensor([1.5, 2])
    ),
    "default_float64_complex": lambda lib: _with_default(lib, "float64", lambda: lib.tensor([1j])),
    "default_float64_ints": lambda lib: _with_default(lib, "float64", lambda: lib.tensor([1, 2])),
    "default_float64_arange": lambda lib: _with_default(
        lib, "float64", lambda: lib.arange(0.0, 1.0, 0.25)
    ),
    "default_float64_int_plus_float": lambda lib: _with_default(
        lib, "float64", lambda: lib.tensor([1, 2]) + 2.5
    ),
    "as_tensor_list": lambda lib: lib.as_tensor([1, 2.5]),
    "as_tensor_dtype": lambda lib: lib.as_tensor([1, 2], dtype=lib.float64),
    # factories
    "arange_int": lambda lib: lib.arange(5),
    "arange_start_end": lambda lib: lib.arange(2, 7),
    "arange_step": lambda lib: lib.arange(0, 10, 3),
    "arange_neg_step": lambda lib: lib.arange(10, 0, -3),
    "arange_float_end": lambda lib: lib.arange(0, 5.0),
    "arange_float_step": lambda lib: lib.arange(0, 5, 0.5),
    "arange_float_count": lambda lib: lib.arange(1, 2.5, 0.3),
    "arange_tenths": lambda lib: lib.arange(0, 1, 0.1),
    "arange_negative": lambda lib: lib.arange(-3, 3, 1.5),
    "arange_dtype": lambda lib: lib.arange(5, dtype=lib.float32),
    "arange_int_dtype_float_args": lambda lib: lib.arange(0.5, 4.5, dtype=lib.int64),
    "arange_empty": lambda lib: lib.arange(3, 3),
    "linspace": lambda lib: lib.linspace(0, 1, 5),
    "linspace_int_args": lambda lib: lib.linspace(0, 10, 5),
    "linspace_one": lambda lib: lib.linspace(2, 5, 1),
    "linspace_zero": lambda lib: lib.linspace(2, 5, 0),
    "linspace_int_dtype": lambda lib: lib.linspace(0, 10, 4, dtype=lib.int64),
    "linspace_descending": lambda lib: lib.linspace(3, -3, 7),
    "eye": lambda lib: lib.eye(3),
    "eye_rect": lambda lib: lib.eye(2, 3),
    "eye_dtype": lambda lib: lib.eye(3, dtype=lib.int32),
    "eye_zero": lambda lib: lib.eye(0),
    "full_int": lambda lib: lib.full((2,), 3),
    "full_float": lambda lib: lib.full((2,), 3.0),
    "full_bool": lambda lib: lib.full((2,), True),
    "full_complex": lambda lib: lib.full((2,), 1j),
    "full_dtype": lambda lib: lib.full((2, 2), 7, dtype=lib.float16),
    "zeros_varargs": lambda lib: lib.zeros(2, 3),
    "zeros_tuple": lambda lib: lib.zeros((2, 3)),
    "zeros_list": lambda lib: lib.zeros([2, 3]),
    "zeros_0d": lambda lib: lib.zeros(()),
    "ones_int_dtype": lambda lib: lib.ones(2, dtype=lib.int8),
    "ones_0_size": lambda lib: lib.ones(0, 2),
    "empty_dtype": lambda lib: lib.empty(2, 3, dtype=lib.int16).zero_(),
    "zeros_like_int": lambda lib: lib.zeros_like(lib.tensor([1, 2])),
    "ones_like_dtype": lambda lib: lib.ones_like(lib.tensor([1, 2]), dtype=lib.float64),
    "full_like_int_float_fill": lambda lib: lib.full_like(lib.tensor([1, 2]), 2.7),
    "full_like_bool": lambda lib: lib.full_like(lib.tensor([1.0, 2.0]), True),
    "rand_meta": lambda lib: (dname(lib.rand(2, 3).dtype), tuple(lib.rand(2, 3).shape)),
    "randn_meta": lambda lib: dname(lib.randn(2, dtype=lib.float64).dtype),
    "randint_meta": lambda lib: (
        dname(lib.randint(0, 5, (3,)).dtype),
        tuple(lib.randint(5, (2, 2)).shape),
    ),
    "randperm_meta": lambda lib: (dname(lib.randperm(4).dtype), sorted(lib.randperm(4).tolist())),
    "rand_like_meta": lambda lib: dname(lib.rand_like(lib.zeros(2, dtype=lib.float16)).dtype),
    "tolist": lambda lib: lib.tensor([[1.5, 2], [3, 4]]).tolist(),
    "tolist_int": lambda lib: lib.tensor([[1, 2]], dtype=lib.int8).tolist(),
    "item_types": lambda lib: (
        type(lib.tensor(1).item()).__name__,
        type(lib.tensor(1.5).item()).__name__,
        type(lib.tensor(True).item()).__name__,
    ),
    "element_size_nbytes": lambda lib: (
        lib.zeros(3, dtype=lib.float16).element_size(),
        lib.zeros(3, dtype=lib.float16).nbytes,
    ),
}


def _like_layouts(lib):
    base = lib.zeros(3, 4).t()  # (4, 3) stride (1, 4): non-overlapping and dense
    sliced = lib.zeros(3, 8)[:, ::2].t()  # (4, 3) stride (2, 8): not dense
    cl = lib.zeros(2, 3, 4, 5).contiguous(memory_format=lib.channels_last)
    return [
        tuple(f(x).stride())
        for f in (
            lib.empty_like,
            lib.zeros_like,
            lib.ones_like,
            lambda x: lib.full_like(x, 2),
            lib.rand_like,
        )
        for x in (base, sliced, cl)
    ]


CREATION["like_preserves_layout"] = _like_layouts
CREATION["from_numpy_offset"] = lambda lib: (
    lib.from_numpy(np.arange(6.0)[2:]).storage_offset(),
    tuple(lib.from_numpy(np.arange(12.0).reshape(3, 4)[:, ::2]).stride()),
)
KNOWN_CREATION = {}


@pytest.mark.parametrize("name", [xfail_if(KNOWN_CREATION, n, n) for n in CREATION])
def test_creation(name):
    fn = CREATION[name]
    check_all([(name, lambda: fn(G), lambda: fn(torch))])


# ---------------------------------------------------------------------------------------------
# Bad input: the exception class must be torch's (TypeError / ValueError / IndexError /
# RuntimeError), so `except` clauses written for torch keep working.


def _inplace_into_expanded(lib, how):
    x = lib.zeros(1, 3).expand(2, 3)
    if how == "add_":
        x.add_(1)
    elif how == "fill_":
        x.fill_(1)
    elif how == "copy_":
        x.copy_(lib.ones(2, 3))
    elif how == "setitem":
        x[:, 0] = 5.0
    elif how == "mul_":
        x *= 2


ERRORS = {
    "ragged_list": lambda lib: lib.tensor([[1, 2], [3]]),
    "ragged_deep": lambda lib: lib.tensor([[[1], [2]], [[3], [4, 5]]]),
    "scalar_and_list": lambda lib: lib.tensor([1, [2]]),
    "list_and_scalar": lambda lib: lib.tensor([[2], 1]),
    "str": lambda lib: lib.tensor("a"),
    "list_of_str": lambda lib: lib.tensor(["a"]),
    "none_item": lambda lib: lib.tensor([1, None]),
    "object": lambda lib: lib.tensor(object()),
    "uint8_overflow": lambda lib: lib.tensor(300, dtype=lib.uint8),
    "int64_overflow": lambda lib: lib.tensor([2**63]),
    "view_numel": lambda lib: lib.zeros(6).view(4),
    "view_strides": lambda lib: lib.arange(6).view(2, 3).t().view(6),
    "view_two_minus_one": lambda lib: lib.zeros(6).view(-1, -1),
    "reshape_numel": lambda lib: lib.zeros(6).reshape(4, 2),
    "negative_size": lambda lib: lib.zeros(-1),
    "expand_bad": lambda lib: lib.zeros(2).expand(3, 4),
    "expand_minus_one_new_dim": lambda lib: lib.zeros(2).expand(-1, 2),
    "expand_fewer_dims": lambda lib: lib.zeros(2, 3).expand(3),
    "inplace_expanded_add_": lambda lib: _inplace_into_expanded(lib, "add_"),
    "inplace_expanded_fill_": lambda lib: _inplace_into_expanded(lib, "fill_"),
    "inplace_expanded_copy_": lambda lib: _inplace_into_expanded(lib, "copy_"),
    "inplace_expanded_setitem": lambda lib: _inplace_into_expanded(lib, "setitem"),
    "inplace_expanded_imul": lambda lib: _inplace_into_expanded(lib, "mul_"),
    "inplace_broadcast_grows": lambda lib: lib.zeros(3).add_(lib.zeros(2, 3)),
    "inplace_int_from_float": lambda lib: lib.zeros(3, dtype=lib.int64).add_(1.5),
    "inplace_int_div": lambda lib: lib.ones(3, dtype=lib.int64).div_(2),
    "sum_dim": lambda lib: lib.zeros(2, 3).sum(dim=2),
    "sum_dim_neg": lambda lib: lib.zeros(2, 3).sum(dim=-3),
    "sum_dup_dims": lambda lib: lib.zeros(2, 3).sum(dim=(0, 0)),
    "transpose_dim": lambda lib: lib.zeros(2, 3).transpose(0, 5),
    "unsqueeze_dim": lambda lib: lib.zeros(2, 3).unsqueeze(4),
    "squeeze_dim": lambda lib: lib.zeros(2, 3).squeeze(5),
    "select_index": lambda lib: lib.zeros(2, 3).select(0, 5),
    "select_dim": lambda lib: lib.zeros(2, 3).select(2, 0),
    "narrow_range": lambda lib: lib.zeros(2, 3).narrow(0, 1, 5),
    "narrow_dim": lambda lib: lib.zeros(2, 3).narrow(3, 0, 1),
    "permute_repeat": lambda lib: lib.zeros(2, 3).permute(0, 0),
    "permute_count": lambda lib: lib.zeros(2, 3).permute(0, 1, 2),
    "flatten_range": lambda lib: lib.zeros(2, 3).flatten(1, 0),
    "unflatten_sizes": lambda lib: lib.zeros(2, 6).unflatten(1, (4, 2)),
    "unfold_size": lambda lib: lib.zeros(4).unfold(0, 5, 1),
    "unfold_step": lambda lib: lib.zeros(4).unfold(0, 2, 0),
    "index_int": lambda lib: lib.zeros(2, 3)[5],
    "index_too_many": lambda lib: lib.zeros(2, 3)[0, 0, 0],
    "index_0d": lambda lib: lib.tensor(1.0)[0],
    "index_float_tensor": lambda lib: lib.zeros(3)[lib.tensor([0.0])],
    "index_tensor_out_of_range": lambda lib: lib.zeros(3)[lib.tensor([3])],
    "index_mask_shape": lambda lib: lib.zeros(3)[lib.tensor([True, False])],
    "index_two_ellipsis": lambda lib: lib.zeros(3)[..., ...],
    "index_str": lambda lib: lib.zeros(3)["a"],
    "index_float": lambda lib: lib.zeros(3)[1.0],
    "index_negative_step": lambda lib: lib.zeros(3)[::-1],
    "setitem_shape": lambda lib: lib.zeros(2, 3).__setitem__(0, lib.ones(2)),
    "cat_empty_list": lambda lib: lib.cat([]),
    "cat_shapes": lambda lib: lib.cat([lib.zeros(2, 3), lib.zeros(2, 4)]),
    "cat_dim": lambda lib: lib.cat([lib.zeros(2), lib.zeros(2)], dim=1),
    "cat_ndim": lambda lib: lib.cat([lib.zeros(2, 2), lib.zeros(2)]),
    "stack_shapes": lambda lib: lib.stack([lib.zeros(2), lib.zeros(3)]),
    "split_zero": lambda lib: lib.zeros(4).split(0),
    "chunk_zero": lambda lib: lib.zeros(4).chunk(0),
    "split_sizes_sum": lambda lib: lib.zeros(4).split([1, 2]),
    "gather_out_of_range": lambda lib: lib.gather(lib.zeros(3), 0, lib.tensor([3])),
    "gather_float_index": lambda lib: lib.gather(lib.zeros(3), 0, lib.tensor([0.0])),
    "gather_ndim": lambda lib: lib.gather(lib.zeros(3, 2), 0, lib.tensor([0])),
    "scatter_out_of_range": lambda lib: lib.scatter(lib.zeros(3), 0, lib.tensor([5]), 1.0),
    "index_select_2d_index": lambda lib: lib.index_select(lib.zeros(3), 0, lib.tensor([[0]])),
    "index_select_out_of_range": lambda lib: lib.index_select(lib.zeros(3), 0, lib.tensor([3])),
    "masked_fill_int_mask": lambda lib: lib.zeros(3).masked_fill(lib.tensor([1, 0, 1]), 1.0),
    "masked_fill_tensor_value_1d": lambda lib: lib.zeros(3).masked_fill(
        lib.tensor([True, False, True]), lib.tensor([1.0])
    ),
    "matmul_shapes": lambda lib: lib.zeros(2, 3) @ lib.zeros(2, 3),
    "mm_1d": lambda lib: lib.mm(lib.zeros(3), lib.zeros(3)),
    "matmul_0d": lambda lib: lib.matmul(lib.tensor(1.0), lib.zeros(2)),
    "matmul_dtypes": lambda lib: lib.zeros(2, 2) @ lib.zeros(2, 2, dtype=lib.float64),
    "broadcast_shapes": lambda lib: lib.zeros(2, 3) + lib.zeros(4),
    "int_pow_negative": lambda lib: lib.tensor([2]) ** -1,
    "int_floordiv_zero": lambda lib: lib.tensor([1]) // 0,
    "int_remainder_zero": lambda lib: lib.tensor([1]) % 0,
    "int_floordiv_zero_tensor": lambda lib: lib.tensor([1]) // lib.tensor([0]),
    "mean_int": lambda lib: lib.tensor([1, 2]).mean(),
    "var_int": lambda lib: lib.tensor([1, 2]).var(),
    "item_many": lambda lib: lib.zeros(2).item(),
    "bool_many": lambda lib: bool(lib.zeros(2)),
    "float_many": lambda lib: float(lib.zeros(2)),
    "int_many": lambda lib: int(lib.zeros(2)),
    "index_many": lambda lib: [0, 1][lib.zeros(2, dtype=lib.int64)],
    "index_float_0d": lambda lib: [0, 1][lib.tensor(1.0)],
    "len_0d": lambda lib: len(lib.tensor(1.0)),
    "iter_0d": lambda lib: iter(lib.tensor(1.0)),
    "arange_zero_step": lambda lib: lib.arange(0, 5, 0),
    "arange_wrong_sign": lambda lib: lib.arange(5, 0, 1),
    "linspace_negative_steps": lambda lib: lib.linspace(0, 1, -1),
    "eye_negative": lambda lib: lib.eye(-1),
    "full_str": lambda lib: lib.full((2,), "a"),
    "randint_low_high": lambda lib: lib.randint(5, 2, (2,)),
    "rand_int_dtype": lambda lib: lib.rand(2, dtype=lib.int64),
    "dtype_str_to": lambda lib: lib.zeros(2).to("float31"),
    "where_cond_dtype": lambda lib: lib.where(lib.tensor([1, 0]), lib.zeros(2), lib.ones(2)),
    "clamp_no_bounds": lambda lib: lib.clamp(lib.zeros(2)),
    "numpy_bool_of_many": lambda lib: lib.zeros(2) and 1,
    "view_dtype_size": lambda lib: lib.zeros(3, dtype=lib.float32).view(lib.float64),
    "contiguous_cl_3d": lambda lib: lib.zeros(2, 3, 4).contiguous(memory_format=lib.channels_last),
    "as_strided_negative_stride": lambda lib: lib.zeros(4).as_strided((2,), (-1,)),
    "from_numpy_negative_stride": lambda lib: lib.from_numpy(np.arange(3.0)[::-1]),
    "from_numpy_object": lambda lib: lib.from_numpy(np.array(["a"], dtype=object)),
    "numpy_requires_grad": lambda lib: lib.zeros(2, requires_grad=True).numpy(),
    "requires_grad_int": lambda lib: lib.zeros(2, dtype=lib.int64, requires_grad=True),
}


def _cls(what, torch_cls, gt_cls):
    return f"{what}: torch raises {torch_cls}, gpu_tensor {gt_cls}"


KNOWN_ERRORS = {}


def _error_case(fn, lib):
    def run():
        r = fn(lib)
        return "no error" if not isinstance(r, (lib.Tensor, tuple, list)) else r

    return run


@pytest.mark.parametrize("name", [xfail_if(KNOWN_ERRORS, n, n) for n in ERRORS])
def test_error_classes(name):
    fn = ERRORS[name]
    check_all([(name, _error_case(fn, G), _error_case(fn, torch))])


# ---------------------------------------------------------------------------------------------
# repr: torch's text (dtype shown when not the default for its kind, summarised corners above
# 1000 elements, scientific notation by range). Only 'gpu_tensor.' vs 'torch.' differs.

REPRS = {
    "ints": lambda lib: lib.tensor([1, -2, 300]),
    "floats": lambda lib: lib.tensor([1.5, 2.0]),
    "whole_floats": lambda lib: lib.tensor([1.0, 2.0]),
    "small_large": lambda lib: lib.tensor([0.1, 100.0]),
    "sci_small": lambda lib: lib.tensor([1e-5, 1.0]),
    "sci_large": lambda lib: lib.tensor([1e10, 1.0]),
    "precision": lambda lib: lib.tensor([1.123456789, -0.5]),
    "float64": lambda lib: lib.tensor([1.5, 2.0], dtype=lib.float64),
    "float16": lambda lib: lib.tensor([1.5, 2.0], dtype=lib.float16),
    "bfloat16": lambda lib: lib.tensor([1.5, 2.0], dtype=lib.bfloat16),
    "int32": lambda lib: lib.tensor([1, 2], dtype=lib.int32),
    "uint8": lambda lib: lib.tensor([1, 2], dtype=lib.uint8),
    "bool": lambda lib: lib.tensor([True, False]),
    "complex": lambda lib: lib.tensor([1 + 2j, -0.5j]),
    "complex128": lambda lib: lib.tensor([1 + 2j], dtype=lib.complex128),
    "empty": lambda lib: lib.tensor([]),
    "empty_2d": lambda lib: lib.zeros(0, 3),
    "empty_int": lambda lib: lib.zeros(0, dtype=lib.int64),
    "empty_float64": lambda lib: lib.zeros(2, 0, dtype=lib.float64),
    "zero_dim": lambda lib: lib.tensor(3.5),
    "zero_dim_int": lambda lib: lib.tensor(3),
    "zero_dim_float64": lambda lib: lib.tensor(3.5, dtype=lib.float64),
    "nan_inf": lambda lib: lib.tensor([float("nan"), float("inf"), -float("inf"), 1.5]),
    "negative_zero": lambda lib: lib.tensor([-0.0, 1.0]),
    "matrix": lambda lib: lib.tensor([[1.5, -200.25], [3.0, 4.0]]),
    "3d": lambda lib: lib.arange(12).reshape(2, 3, 2),
    "large": lambda lib: lib.arange(2000.0),
    "large_2d": lambda lib: lib.arange(3000).reshape(30, 100),
    "large_int_values": lambda lib: lib.tensor([2**40, 1]),
    "requires_grad": lambda lib: lib.tensor([1.0, 2.0], requires_grad=True),
    "mixed_sci_int": lambda lib: lib.tensor([123456789.0, 1.0]),
    "all_nan": lambda lib: lib.tensor([float("nan")]),
    "non_contiguous": lambda lib: lib.arange(6.0).view(2, 3).t(),
    "str_is_repr": lambda lib: lib.tensor([1.5]),
}
KNOWN_REPR = {}


@pytest.mark.parametrize("name", [xfail_if(KNOWN_REPR, n, n) for n in REPRS])
def test_repr(name):
    g, t = REPRS[name](G), REPRS[name](torch)
    got = repr(g).replace("gpu_tensor.", "torch.")
    assert got == repr(t), f"gt:\n{got}\ntorch:\n{t!r}"
    if name == "str_is_repr":
        assert str(g).replace("gpu_tensor.", "torch.") == str(t)


# ---------------------------------------------------------------------------------------------
# Chains of view ops (each step compared), and matmul dtypes/shapes.

_CHAIN_OPS = [
    "view",
    "reshape",
    "transpose",
    "permute",
    "narrow",
    "select",
    "expand",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "unfold",
    "t",
    "mT",
    "contiguous",
    "diagonal",
]


def test_view_chains():
    rng = seeded("chains")
    bad = []
    for _ in range(150):
        a = _random_base(rng)
        tb, gb = torch.from_numpy(a), G.from_numpy(a)
        tx, gx, steps = tb, gb, []
        for _step in range(4):
            op = str(rng.choice(_CHAIN_OPS))
            if tx.dim() == 0 and op in ("mT", "unflatten", "t", "diagonal"):
                continue  # 0-d cases: test_pinned
            args = _view_args(op, rng, tuple(tx.shape))
            if op in ("expand", "permute") and not args:
                continue  # torch: TypeError for a missing argument list
            steps.append(f"{op}{args}")
            label = f"{a.shape}/{tb.stride()} -> " + " -> ".join(steps)
            t, g = outcome(_apply_view, torch, tx, op, args), outcome(_apply_view, G, gx, op, args)
            if (both := both_returned(label, t, g, bad)) is None:
                break
            tr, gr = both
            d = _view_diff(tr, gr, tb, gb)
            if d:
                bad.append(f"{label}: {d}")
                break
            tx, gx = tr, gr
    assert not bad, f"{len(bad)} divergence(s):\n" + "\n".join(bad[:_MAX_LISTED])


def test_matmul_dtypes_and_shapes():
    rng = seeded("matmul")
    cases = []
    shapes = [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((2, 3), (5, 3, 4)),
        ((5, 2, 3), (5, 3, 4)),
        ((1, 2, 3), (5, 3, 4)),
        ((2, 1, 2, 3), (5, 3, 4)),
        ((0, 3), (3, 2)),
    ]
    for sa, sb in shapes:
        for da, db in [
            ("float32", "float32"),
            ("int64", "int64"),
            ("float64", "float64"),
            ("int32", "int32"),
            ("complex64", "complex64"),
            ("float16", "float16"),
        ]:
            ta, tb = rand_torch(rng, sa, da), rand_torch(rng, sb, db)
            ga, gb = pair_from_torch(ta), pair_from_torch(tb)
            cases.append(
                (
                    f"{sa}:{da} @ {sb}:{db}",
                    lambda ga=ga, gb=gb: ga @ gb,
                    lambda ta=ta, tb=tb: ta @ tb,
                    {"tol_scale": 10.0},
                )
            )
    ta, tb = rand_torch(rng, (4, 2, 3), "float32"), rand_torch(rng, (4, 3, 5), "float32")
    cases.append(
        ("bmm", lambda: G.bmm(pair_from_torch(ta), pair_from_torch(tb)), lambda: torch.bmm(ta, tb))
    )
    cases.append(
        (
            "mm",
            lambda: G.mm(pair_from_torch(ta[0]), pair_from_torch(tb[0])),
            lambda: torch.mm(ta[0], tb[0]),
        )
    )
    check_all(cases)


def test_cumulative_dtypes():
    rng = seeded("cumsum")
    cases = []
    for d in DTYPES:
        t = rand_torch(rng, (3, 4), d)
        g = pair_from_torch(t)
        for name in ("cumsum", "cumprod"):
            for kw in ({"dim": 0}, {"dim": -1}, {"dim": 1, "dtype": "float64"}):
                cases.append(
                    (
                        f"{name}({d}, {kw})",
                        lambda g=g, kw=kw, n=name: getattr(g, n)(**_fix(kw, G)),
                        lambda t=t, kw=kw, n=name: getattr(t, n)(**_fix(kw, torch)),
                        {"tol_scale": 10.0},
                    )
                )
    check_all(cases)


def test_broadcasting_shapes_and_inplace():
    rng = seeded("broadcast")
    cases = []
    for _ in range(150):
        sa = tuple(int(rng.choice([0, 1, 2, 3])) for _ in range(int(rng.integers(0, 4))))
        sb = tuple(
            int(rng.choice([1, 1, 2, 3])) if rng.random() < 0.3 else (sa[i] if i < len(sa) else 2)
            for i in range(int(rng.integers(0, 4)))
        )
        sb = sb[::-1] if rng.random() < 0.3 else sb
        ta, tb = rand_torch(rng, sa, "float32"), rand_torch(rng, sb, "int64")
        ga, gb = pair_from_torch(ta), pair_from_torch(tb)
        cases.append((f"{sa} + {sb}", lambda ga=ga, gb=gb: ga + gb, lambda ta=ta, tb=tb: ta + tb))
        if ta.numel():  # (in-place on an empty tensor: test_pinned[inplace_on_empty])
            cases.append(
                (
                    f"{sa}.add_({sb})",
                    lambda ga=ga, gb=gb: ga.clone().add_(gb),
                    lambda ta=ta, tb=tb: ta.clone().add_(tb),
                )
            )
        cases.append(
            (
                f"where({sa} > 0, {sa}, {sb})",
                lambda ga=ga, gb=gb: G.where(ga > 0, ga, gb),
                lambda ta=ta, tb=tb: torch.where(ta > 0, ta, tb),
            )
        )
    check_all(cases)


# ---------------------------------------------------------------------------------------------
# Promotion helpers (result_type / promote_types / can_cast) and casts with .to(dtype).


def test_promote_types_and_can_cast_all_pairs():
    bad = []
    for a in DTYPES:
        for b in DTYPES:
            if "float16" in (a, b) and {a, b} & set(COMPLEX):
                continue  # float16 + complex -> complex32: a dtype gpu_tensor does not have
            tp = dname(torch.promote_types(tdt(a), tdt(b)))
            gp = dname(G.promote_types(gdt(a), gdt(b)))
            if tp != gp:
                bad.append(f"promote_types({a}, {b}): gt {gp} vs torch {tp}")
            tc, gc = torch.can_cast(tdt(a), tdt(b)), G.can_cast(gdt(a), gdt(b))
            if tc != gc:
                bad.append(f"can_cast({a}, {b}): gt {gc} vs torch {tc}")
    assert not bad, "\n".join(bad[:_MAX_LISTED])


def test_result_type_tiers():
    rng = seeded("result_type")
    cases = []
    for a in DTYPES:
        ta = rand_torch(rng, (2,), a)
        t0 = rand_torch(rng, (), a)
        for other in DTYPES + list(SCALARS):
            if (
                _chalf(a, other, "0dim")
                or (a in COMPLEX and other == "float16")
                or (a == "float16" and other == "complex")
            ):
                continue
            tb = SCALARS[other] if other in SCALARS else rand_torch(rng, (), other)
            gb = tb if other in SCALARS else pair_from_torch(tb)
            for tx in (ta, t0):
                gx = pair_from_torch(tx)
                cases.append(
                    (
                        f"result_type({a}{list(tx.shape)}, {other})",
                        lambda gx=gx, gb=gb: dname(G.result_type(gx, gb)),
                        lambda tx=tx, tb=tb: dname(torch.result_type(tx, tb)),
                    )
                )
    check_all(cases)


def test_casts_with_to():
    rng = seeded("casts")
    cases = []
    for src in DTYPES:
        t = rand_torch(rng, (3, 4), src)
        if src in FLOATS + COMPLEX:
            t = t * 4  # values in [-16, 16): truncation toward zero, negatives into uint8
            if src not in COMPLEX:
                t[0, :3] = torch.tensor([-0.5, 2.5, -2.5])
        g = pair_from_torch(t)
        for dst in DTYPES:
            if src in FLOATS + COMPLEX and dst == "uint8":
                continue  # negative float -> uint8 is undefined behaviour in C++ (and torch)
            if src in COMPLEX and dst not in COMPLEX:
                continue  # torch warns and drops the imaginary part: see test_pinned
            cases.append(
                (
                    f"{src}.to({dst})",
                    lambda g=g, d=dst: g.to(gdt(d)),
                    lambda t=t, d=dst: t.to(tdt(d)),
                )
            )
    check_all(cases)


# ---------------------------------------------------------------------------------------------
# Tensor semantics a PyTorch user relies on: identity returns, aliasing, metadata types.


def _through_view(lib):
    x = lib.zeros(2, 3)
    v = x[1]
    v.add_(1)
    x.t()[0, 1] = 7
    x.view(6)[2] = 5
    return x


def _identity(lib):
    x = lib.zeros(2, 3)
    return (
        x.contiguous() is x,
        x.to(lib.float32) is x,
        x.to(lib.float64) is x,
        x.to("cpu") is x,
        x.to(lib.float32, copy=True) is x,
        x.cpu() is x,
        x.float() is x,
        x.clone() is x,
        x.detach() is x,
        x.detach().data_ptr() == x.data_ptr(),
        x.reshape(3, 2).data_ptr() == x.data_ptr(),
        x.t().contiguous().data_ptr() == x.data_ptr(),
        x.view_as(x) is x,
    )


MISC = {
    "through_views": _through_view,
    "identity_and_sharing": _identity,
    "size_repr": lambda lib: repr(lib.zeros(2, 3).shape).replace("gpu_tensor", "torch"),
    "size_type": lambda lib: (
        type(lib.zeros(2).shape).__name__,
        lib.zeros(2, 3).size(1),
        lib.zeros(2, 3).size(-1),
        tuple(lib.zeros(2, 3).size()),
        lib.zeros(2, 3).shape.numel(),
    ),
    "dtype_repr": lambda lib: repr(lib.float32).replace("gpu_tensor", "torch"),
    "dtype_attrs": lambda lib: [
        (d.is_floating_point, d.is_complex, d.itemsize, d.is_signed)
        for d in (getattr(lib, n) for n in DTYPES)
    ],
    "device_repr": lambda lib: (
        repr(lib.zeros(1).device),
        str(lib.zeros(1).device),
        lib.zeros(1).device.type,
        lib.zeros(1).is_cuda,
    ),
    "meta_0d": lambda lib: (
        lib.tensor(1.0).dim(),
        lib.tensor(1.0).numel(),
        tuple(lib.tensor(1.0).stride()),
        lib.tensor(1.0).is_contiguous(),
    ),
    "expanded_is_contiguous": lambda lib: (
        lib.zeros(1, 3).expand(2, 3).is_contiguous(),
        tuple(lib.zeros(1, 3).expand(2, 3).stride()),
    ),
    "list_of_rows": lambda lib: [tuple(r.shape) for r in list(lib.zeros(2, 3))],
    "contains": lambda lib: (2 in lib.tensor([1, 2]), 5 in lib.tensor([1, 2])),
    "len": lambda lib: len(lib.zeros(4, 2)),
    "bool_single": lambda lib: (bool(lib.tensor([0.0])), bool(lib.tensor(2))),
    "int_float_conversions": lambda lib: (
        int(lib.tensor(2.7)),
        float(lib.tensor(3)),
        int(lib.tensor([-2.7])),
        complex(lib.tensor(1.5)),
    ),
    "index_with_0d_int_tensor": lambda lib: [10, 20, 30][lib.tensor(1)],
    "clamp_min_gt_max": lambda lib: lib.clamp(lib.tensor([0.0, 5.0, 10.0]), min=6, max=4),
    "clamp_tensor_bounds": lambda lib: lib.clamp(
        lib.tensor([0.0, 5.0, 10.0]), min=lib.tensor([1.0, 6.0, 0.0]), max=lib.tensor(8.0)
    ),
    "std_mean": lambda lib: lib.std_mean(lib.tensor([[1.0, 2.0], [4.0, 8.0]]), dim=0),
    "var_mean_correction": lambda lib: lib.var_mean(lib.tensor([1.0, 2.0, 4.0]), correction=0),
    "max_dim_namedtuple": lambda lib: (
        lambda r: (type(r).__name__, r.values.tolist(), r.indices.tolist())
    )(lib.tensor([[1, 5], [7, 2]]).max(dim=1)),
    "max_binary": lambda lib: lib.tensor([1, 5]).max(lib.tensor([3, 2])),
    "sum_bool_int64": lambda lib: lib.tensor([True, True]).sum(),
    "prod_int8_int64": lambda lib: lib.tensor([100, 100], dtype=lib.int8).prod(),
    "mean_empty_nan": lambda lib: lib.zeros(0).mean(),
    "where_scalar_both": lambda lib: lib.where(lib.tensor([True, False]), 1.5, 2),
    "where_scalar_int_float_tensor": lambda lib: lib.where(
        lib.tensor([True, False]), lib.tensor([1, 2]), 2.5
    ),
    "nonzero": lambda lib: lib.tensor([[0, 1], [2, 0]]).nonzero(),
    "masked_select": lambda lib: lib.masked_select(
        lib.tensor([[1, 2], [3, 4]]), lib.tensor([True, False])
    ),
    "float_int_floordiv_neg": lambda lib: (
        lib.tensor([-7, 7]) // 2,
        lib.tensor([-7, 7]) % 2,
        lib.tensor([-7.5, 7.5]) // 2,
        lib.tensor([-7.5, 7.5]) % -2,
    ),
    "int_div_true": lambda lib: lib.tensor([7, -7]) / lib.tensor([2, 2]),
    "int_overflow_wraps": lambda lib: lib.tensor([127], dtype=lib.int8) + 1,
    "pow_int_scalar_float": lambda lib: lib.tensor([2, 3]) ** 0.5,
    "pow_scalar_base_int": lambda lib: 2 ** lib.tensor([2, 3]),
    "pow_float_base_int_tensor": lambda lib: 2.5 ** lib.tensor([2, 3]),
    "neg_uint8": lambda lib: -lib.tensor([1, 2], dtype=lib.uint8),
    "invert_bool_and_int": lambda lib: (~lib.tensor([True, False]), ~lib.tensor([0, 5])),
    "complex_real_imag": lambda lib: (lib.tensor([1 + 2j]).real, lib.tensor([1 + 2j]).imag),
    "copy_broadcast_cast": lambda lib: lib.zeros(2, 3, dtype=lib.int32).copy_(
        lib.tensor([1.7, -2.7, 3.2])
    ),
    "fill_float_into_int": lambda lib: lib.zeros(3, dtype=lib.int64).fill_(2.9),
    "setitem_float_into_int_slice": lambda lib: _set(
        lib.zeros(3, dtype=lib.int64), slice(0, 2), 2.9
    ),
    "setitem_bool_tensor_from_int": lambda lib: _set(lib.zeros(3, dtype=lib.bool), slice(None), 2),
    "repeat_tile_flip_roll": lambda lib: (
        lib.arange(6).view(2, 3).repeat(2, 1),
        lib.arange(6).view(2, 3).flip(0),
        lib.arange(6).view(2, 3).roll(1, 1),
        lib.tile(lib.arange(3), (2,)),
    ),
    "unbind": lambda lib: lib.arange(6).view(2, 3).unbind(1),
    "hstack_vstack": lambda lib: (
        lib.hstack([lib.zeros(2), lib.ones(3)]),
        lib.vstack([lib.zeros(3), lib.ones(3)]),
    ),
    "type_string": lambda lib: (
        lib.zeros(2).type().replace("gpu_tensor.", "torch."),
        lib.zeros(2, dtype=lib.int64).type().replace("gpu_tensor.", "torch."),
        lib.zeros(2).type(lib.float64).dtype == lib.float64,
    ),
    "new_factories": lambda lib: (
        lib.zeros(2, dtype=lib.int32).new_zeros(3),
        lib.zeros(2, dtype=lib.int32).new_full((2,), 2.7),
        lib.zeros(2, dtype=lib.float16).new_tensor([1, 2]),
        lib.zeros(2, dtype=lib.int8).new_ones((2, 1)),
    ),
    "item_half": lambda lib: (
        lib.tensor(1.5, dtype=lib.float16).item(),
        lib.tensor([1.5], dtype=lib.bfloat16).tolist(),
    ),
    "T_2d_and_mT": lambda lib: (lib.arange(6).view(2, 3).T, lib.arange(12).view(2, 2, 3).mT),
    "expand_as_reshape_as": lambda lib: (
        lib.zeros(3).expand_as(lib.zeros(2, 3)),
        lib.arange(6).reshape_as(lib.zeros(3, 2)),
    ),
    "squeeze_tuple_and_size1": lambda lib: (
        lib.zeros(1, 2, 1).squeeze((0, 2)).shape,
        lib.zeros(1, 2, 1).squeeze(1).shape,
    ),
    "flatten_0d": lambda lib: (
        lib.tensor(1.0).flatten().shape,
        lib.tensor(1.0).view(-1).shape,
        lib.tensor(1.0).reshape(1, 1).shape,
    ),
    "unfold_values": lambda lib: lib.arange(8).unfold(0, 3, 2),
    "norm_fro_and_dtype": lambda lib: (
        lib.tensor([[3.0, 4.0]]).norm(),
        lib.tensor([[3.0, 4.0]]).norm(p="fro"),
        lib.tensor([3.0, 4.0]).norm(p=0),
    ),
    "count_nonzero_logsumexp": lambda lib: (
        lib.count_nonzero(lib.tensor([[0, 1], [2, 0]])),
        lib.logsumexp(lib.tensor([[0.0, 1.0]]), dim=1),
    ),
    "cumsum_bool_int": lambda lib: (
        lib.tensor([True, True]).cumsum(0),
        lib.tensor([1, 2], dtype=lib.int8).cumsum(0),
    ),
    "default_float64_full_linspace": lambda lib: _with_default(
        lib,
        "float64",
        lambda: (
            lib.full((2,), 2.5),
            lib.linspace(0, 1, 3),
            lib.rand(2).dtype == lib.float64,
            lib.ones(2),
            lib.tensor([1, 2]) / 2,
        ),
    ),
}


def _set(x, idx, v):
    x[idx] = v
    return x


KNOWN_MISC = {}


@pytest.mark.parametrize("name", [xfail_if(KNOWN_MISC, n, n) for n in MISC])
def test_tensor_semantics(name):
    fn = MISC[name]
    check_all([(name, lambda: fn(G), lambda: fn(torch))])
