"""Grad mode: whether ops on tensors that require grad record a graph (`no_grad`,
`enable_grad`, `set_grad_enabled`, `is_grad_enabled`, `inference_mode`,
`is_inference_mode_enabled`), thread-local as in torch.

Each is a context manager and a decorator, with parentheses or without (`@no_grad`, as
torch takes it). `set_grad_enabled(False)` also works as a plain call (it switches the mode
at once, and restores it only when used with `with`). `inference_mode(True)` is grad mode
off plus a flag that `is_inference_mode_enabled()` reads; tensors made under it are not
marked as inference tensors (torch's `Tensor.is_inference()` and its refusals are not here).
"""

from __future__ import annotations

import functools
import threading

from .._grad import STATE  # the flag the ops read at call time (a leaf module)

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
    "is_inference_mode_enabled",
]

_INFERENCE = threading.local()  # .on: inside inference_mode(True) on this thread


def is_grad_enabled() -> bool:
    return STATE.enabled


class _Mode:
    """Base: a context manager that sets grad mode to `self._mode` and restores it."""

    _mode = True

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._mode

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        return False

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = STATE.enabled
            STATE.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                STATE.enabled = prev

        return wrapper

    def clone(self):
        return type(self)()


class _NoArgMode(_Mode):
    """A mode that takes no argument, so that `@no_grad` (no parentheses) decorates the
    function it is given, as torch's does."""

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if func is None:
            return self
        if not callable(func):
            raise TypeError(
                f"{cls.__name__}() takes no arguments (use it as `with {cls.__name__}():`, "
                f"`@{cls.__name__}()` or `@{cls.__name__}`)"
            )
        return self(func)


class no_grad(_NoArgMode):  # noqa: N801  (torch's name)
    """Ops inside record no graph: results have requires_grad=False (inference, SGD steps)."""

    _mode = False


class enable_grad(_NoArgMode):  # noqa: N801
    """Re-enable graph recording inside a `no_grad` region."""

    _mode = True


def is_inference_mode_enabled() -> bool:
    return getattr(_INFERENCE, "on", False)


class inference_mode(_Mode):  # noqa: N801
    """`inference_mode(mode=True)`: grad mode off and `is_inference_mode_enabled()` True
    inside (mode False: grad mode on and the flag off, as torch's guard sets both);
    `@inference_mode` without parentheses decorates the function it is given."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):  # @inference_mode, bare
            self.__init__()
            return self(mode)
        return self

    def __init__(self, mode=True):
        self._on = bool(mode)
        self._mode = not self._on

    def __enter__(self):
        self._prev_on = is_inference_mode_enabled()
        _INFERENCE.on = self._on
        super().__enter__()

    def __exit__(self, *exc):
        _INFERENCE.on = self._prev_on
        return super().__exit__(*exc)

    def __call__(self, fn):
        # each call enters a fresh copy (both flags, restored on the way out, by the
        # __enter__/__exit__ above): one wrapper, where _Mode's sets grad mode alone
        clone = self.clone

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)(self._on)


class set_grad_enabled(_Mode):  # noqa: N801
    """`set_grad_enabled(mode)`: switch grad mode now; as `with`, restore it on exit."""

    def __init__(self, mode: bool):
        self._mode = bool(mode)
        self._prev = STATE.enabled
        STATE.enabled = self._mode

    def __enter__(self):
        pass  # already switched in __init__; _prev was taken there

    def __call__(self, fn):
        STATE.enabled = self._prev  # as a decorator it must not switch the mode right away
        return super().__call__(fn)

    def clone(self):
        return type(self)(self._mode)
