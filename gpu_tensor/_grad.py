"""Call-time autograd: where an op decides whether to record a graph node.

Every differentiable op decides when it is called: does an input's `_requires_grad` slot
say so, and is grad mode on (thread-local, as in torch)? Only then is the recorder
(`autograd/record.py`) asked to run the op and record its node, from the formula
registered for it (torch's node names, `autograd/formulas_*.py`). Tensors that need no
grad pay the slot reads (~12 ns each) and nothing more, whether or not autograd was ever
used. Nothing is rebound: `gt.mul`, `Tensor.__add__` and `Tensor.view` are the same objects
for the life of the process, wherever they were imported from.

- The elementwise dispatcher inlines the check in its hot paths (ops/_dispatch.py).
- Every other differentiable op is decorated where it is defined: `@differentiable`, or
  `@differentiable(first=True)` for ops differentiable in their first argument only
  (views, reductions), whose check reads one slot. The hottest views (`view`, `reshape`,
  `transpose`, ...) check inline instead (`@checks_inline`): no wrapper frame.
- In-place methods are wrapped by `inplace` where the method table binds them; `@gt.fuse`
  functions check in `Fused.__call__`.

This module is a leaf: it imports nothing from the package, and reads the slot by name so
it needs no Tensor class. Its one upward edge is the recorder, imported on the first call
that records (a function-local import; by then the package is loaded).
"""

from __future__ import annotations

import inspect
import threading

from ._modes import PASS, intercept, watch

__all__ = [
    "STATE",
    "differentiable",
    "checks_inline",
    "inplace",
    "record",
    "record_inplace",
    "record_fused",
    "any_requires_grad",
    "out_grad_error",
]

MODES_ON = watch(globals())  # the modes word, read first by every op here (_modes.py)


class _State(threading.local):
    enabled = True  # class default: every new thread starts with grad mode on, as in torch


STATE = _State()
_recorder = None


def _load():
    """The recorder module, with its formulas registered (once, on the first record)."""
    global _recorder
    from .autograd import record as recorder  # upward edge, at call time (see docstring)

    recorder.load_formulas()
    _recorder = recorder
    return recorder


def record(fn, plain, args, kwargs):
    """Run the differentiable op `fn` on `args` and record its node. `plain`: the
    undecorated function (None when `fn` checks inline: it is then re-entered with grad
    mode off)."""
    if kwargs and kwargs.get("out") is not None:
        raise out_grad_error(fn.__name__)
    return (_recorder or _load()).record(fn, plain, args, kwargs)


def out_grad_error(name):
    """torch's error for `out=` on an op whose inputs require grad under grad mode."""
    return RuntimeError(
        f"{name}(): functions with out=... arguments don't support automatic "
        f"differentiation, but one of the arguments requires grad. Call it under "
        f"gt.no_grad(), or drop out= and use the returned tensor."
    )


def record_inplace(name, plain, self, args, kwargs):
    """Run the in-place method `name` (`plain` unwrapped) as its out-of-place op on a copy,
    carrying self's history."""
    return (_recorder or _load()).record_inplace(name, plain, self, args, kwargs)


def record_fused(fused, args, out):
    """`fused(*args)` for arguments that require grad (a fused backward node)."""
    return (_recorder or _load()).record_fused(fused, args, out)


def _rg(x) -> bool:
    try:
        return x._requires_grad
    except AttributeError:
        return False


def any_requires_grad(args, kwargs=None) -> bool:
    """Does any argument, an element of a list/tuple argument (cat, stack) or a keyword
    argument require grad? (Grad mode is the caller's to check.)"""
    for a in args:
        c = a.__class__
        if c is list or c is tuple:
            for t in a:
                if _rg(t):
                    return True
        elif _rg(a):
            return True
    if kwargs:
        for a in kwargs.values():
            if _rg(a):
                return True
    return False


def _takes_out(plain) -> bool:
    """plain(a, b, out=None): a trailing `out` (torch's out=, see gpu_tensor/_out.py) and
    no other default."""
    code = plain.__code__
    return (
        plain.__defaults__ == (None,)
        and code.co_argcount in (2, 3)
        and code.co_varnames[code.co_argcount - 1] == "out"
    )


def _fixed_arity(plain):
    """1 or 2 when `plain` takes exactly that many positional arguments and nothing else
    (but a trailing `out=None`): those get a wrapper without *args (a frame and a tuple
    cheaper)."""
    code = getattr(plain, "__code__", None)
    if code is None or code.co_kwonlyargcount:
        return None
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    if _takes_out(plain):
        return code.co_argcount - 1
    if plain.__defaults__:
        return None
    return code.co_argcount if code.co_argcount in (1, 2) else None


def _no_keywords(fn) -> bool:
    """fn(a, *rest) takes everything positionally: no defaults, keyword-only arguments or
    **kwargs (a call with a keyword would then fail in fn as well)."""
    code = fn.__code__
    return (
        not (fn.__defaults__ or code.co_kwonlyargcount or code.co_flags & inspect.CO_VARKEYWORDS)
        and code.co_argcount == 1
    )


# the op's torch name where the function's own differs (the name modes handlers are given)
_NAMES = {
    "getitem": "__getitem__",
    "_T": "numpy_T",
    "astype": "to",
    "move": "to",
    "_copy_oop": "copy",
    "_fill_oop": "fill",
    "_zero_oop": "zero",
    "_index_put_copy": "index_put",
}


def _public_name(name):
    return _NAMES.get(name, name)


def differentiable(fn=None, *, first=False):
    """Make `fn` record a node (from its registered formula) when called on a tensor that
    requires grad with grad mode on. `first=True`: only the first argument (or `input=`)
    can require grad, so only its slot is read."""
    if fn is None:
        return lambda f: differentiable(f, first=first)
    n = _fixed_arity(fn)
    state = STATE
    name = _public_name(fn.__name__)
    takes_out = n is not None and _takes_out(fn)
    if takes_out and first:
        n = None  # the generic wrappers below pass out= through
    # out=None: positional-or-keyword, as in fn (a keyword-only one costs ~90 ns a call)
    if n == 2 and takes_out:  # matmul(a, b, out=None)

        def wrapper(a, b, out=None):
            if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
                r = intercept(name, wrapper, (a, b), None if out is None else {"out": out})
                if r is not PASS:
                    return r
            if (_rg(a) or _rg(b)) and state.enabled:
                return record(wrapper, fn, (a, b), {} if out is None else {"out": out})
            return fn(a, b) if out is None else fn(a, b, out=out)
    elif n == 1 and takes_out:

        def wrapper(a, out=None):
            if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
                r = intercept(name, wrapper, (a,), None if out is None else {"out": out})
                if r is not PASS:
                    return r
            if _rg(a) and state.enabled:
                return record(wrapper, fn, (a,), {} if out is None else {"out": out})
            return fn(a) if out is None else fn(a, out=out)
    elif n == 1:

        def wrapper(a):
            if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
                r = intercept(name, wrapper, (a,), None)
                if r is not PASS:
                    return r
            if getattr(a, "_requires_grad", False) and state.enabled:
                return record(wrapper, fn, (a,), {})
            return fn(a)
    elif n == 2 and not first:

        def wrapper(a, b):
            if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
                r = intercept(name, wrapper, (a, b), None)
                if r is not PASS:
                    return r
            if (_rg(a) or _rg(b)) and state.enabled:
                return record(wrapper, fn, (a, b), {})
            return fn(a, b)
    elif n == 2:  # first only: getitem(self, index)

        def wrapper(a, b):
            if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
                r = intercept(name, wrapper, (a, b), None)
                if r is not PASS:
                    return r
            if getattr(a, "_requires_grad", False) and state.enabled:
                return record(wrapper, fn, (a, b), {})
            return fn(a, b)
    elif first and _no_keywords(fn):  # view(self, *shape): no keyword dict to pack

        def wrapper(a, *args):
            if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
                r = intercept(name, wrapper, (a, *args), None)
                if r is not PASS:
                    return r
            if getattr(a, "_requires_grad", False) and state.enabled:
                return record(wrapper, fn, (a, *args), {})
            return fn(a, *args)
    elif first:

        def wrapper(*args, **kwargs):
            if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
                r = intercept(name, wrapper, args, kwargs)
                if r is not PASS:
                    return r
            try:
                rg = (args[0] if args else kwargs["input"])._requires_grad
            except (AttributeError, KeyError):
                rg = False
            if rg and state.enabled:
                return record(wrapper, fn, args, kwargs)
            return fn(*args, **kwargs)
    else:

        def wrapper(*args, **kwargs):
            if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
                r = intercept(name, wrapper, args, kwargs)
                if r is not PASS:
                    return r
            if state.enabled and any_requires_grad(args, kwargs):
                return record(wrapper, fn, args, kwargs)
            return fn(*args, **kwargs)

    wrapper.__name__ = fn.__name__
    wrapper.__qualname__ = fn.__qualname__
    wrapper.__module__ = fn.__module__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    wrapper.__gt_differentiable__ = True
    if n in (1, 2):
        wrapper.__code__ = _named_like(wrapper.__code__, fn.__code__, n)
    return wrapper


def _named_like(code, model, n: int):
    """`code` with its first n arguments renamed to `model`'s: the fixed-arity wrappers
    then take torch's keywords (gt.matmul(input=a, other=b)) at no cost per call."""
    names = model.co_varnames[:n]
    taken = set(code.co_varnames[n:]) | set(code.co_freevars) | set(code.co_cellvars)
    if set(names) & taken or len(set(names)) != n:
        return code  # a clash with the wrapper's own names: keep its positional names
    return code.replace(co_varnames=names + code.co_varnames[n:])


def checks_inline(fn):
    """Mark `fn` as a differentiable op that makes the check itself, first thing (the hot
    views: `_views._handed_off` when a mode is on or self requires grad), saving the
    wrapper's frame. The recorder re-enters it with grad mode off."""
    fn.__gt_differentiable__ = True
    return fn


def inplace(name, plain):
    """The Tensor method `name` (an in-place op, `plain`), recording through its
    out-of-place form when self or an argument requires grad and grad mode is on."""
    state = STATE

    def method(self, *args, **kwargs):
        if MODES_ON:  # a mode is on somewhere (gpu_tensor/_modes.py)
            r = intercept(name, method, (self, *args), kwargs)
            if r is not PASS:
                return r
        if state.enabled and (self._requires_grad or any_requires_grad(args, kwargs)):
            return record_inplace(name, plain, self, args, kwargs)
        return plain(self, *args, **kwargs)

    method.__name__ = getattr(plain, "__name__", name)
    method.__qualname__ = method.__name__
    method.__doc__ = getattr(plain, "__doc__", None)
    method.__wrapped__ = plain
    return method
