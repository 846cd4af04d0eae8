"""Grad mode: whether ops on tensors that require grad record a graph (`no_grad`,
`enable_grad`, `set_grad_enabled`, `is_grad_enabled`), thread-local as in torch.

Each is a context manager and a decorator. `set_grad_enabled(False)` also works as a plain
call (it switches the mode at once, and restores it only when used with `with`).
"""

from __future__ import annotations

import functools

from .._grad import STATE  # the flag the ops read at call time (a leaf module)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


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


class no_grad(_Mode):  # noqa: N801  (torch's name)
    """Ops inside record no graph: results have requires_grad=False (inference, SGD steps)."""

    _mode = False


class enable_grad(_Mode):  # noqa: N801
    """Re-enable graph recording inside a `no_grad` region."""

    _mode = True


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
