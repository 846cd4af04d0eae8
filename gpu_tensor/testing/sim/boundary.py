"""A clock at the simulator's boundary: how long gpu_tensor spends inside the simulated CuPy.

`BoundaryTimer().install()` wraps every function and method the simulator defines (module
functions, the `cupy` namespace and its sub-namespaces, the methods and properties of its
classes) so that a call from outside adds its perf_counter_ns duration to `ns` and one to
`crossings`. Only the outermost simulator frame is timed: a simulator function calling
another is inside the first one's window already, so nested calls are counted once. A
function of ours the simulator calls back (the allocator given to `cuda.set_allocator`)
stops the clock while it runs: that time is ours.

It is how `profiling/bench_host_cost.py` measures gpu_tensor's own host time per op without
a GPU: wall time minus `ns`, minus the wrapper's own cost outside the window per crossing
(`overhead_ns`, measured on a wrapped no-op in the same process). `uncovered(fn)` lists
simulator functions that `fn()` reached without a wrapper (a name bound before `install`),
so a measurement can check that nothing slipped past the clock.

Install it after the warm-up: names the simulator binds lazily (cupy's generic routines,
bound on first use) are wrapped only if they exist when `install()` runs.
"""

from __future__ import annotations

import os
import sys
import time
import types

__all__ = ["BoundaryTimer"]

_SIM = os.path.dirname(os.path.abspath(__file__)) + os.sep
_HERE = os.path.abspath(__file__)
# methods Python calls during class machinery, not on an op's path; wrapping them buys nothing
_SKIP = frozenset(("__new__", "__init_subclass__", "__set_name__", "__class_getitem__"))


def _is_sim_function(obj) -> bool:
    return (
        type(obj) is types.FunctionType
        and obj.__code__.co_filename.startswith(_SIM)
        and obj.__code__.co_filename != _HERE
    )


class BoundaryTimer:
    """Time spent inside the simulator, outermost frames only (see the module docstring)."""

    def __init__(self):
        self.ns = 0  # nanoseconds inside the simulator since the last reset()
        self.crossings = 0  # outermost calls into it since the last reset()
        self.inside = False
        self._wrapped: dict = {}  # id(original function) -> its wrapper
        self._undo: list = []  # (owner, attribute name, original value)

    def reset(self) -> None:
        self.ns = self.crossings = 0

    # -- wrappers ---------------------------------------------------------------------------------
    def wrap(self, fn):
        """`fn` timed as a simulator entry point (the same wrapper for the same function)."""
        w = self._wrapped.get(id(fn))
        if w is None:
            w = self._wrapped[id(fn)] = self._clocked(fn, True)
            self._wrapped[id(w)] = w  # wrapping a wrapper gives it back
        return w

    def outward(self, fn):
        """`fn`, one of ours the simulator calls, with the clock stopped while it runs."""
        return self._clocked(fn, False)

    def _clocked(self, fn, into: bool):
        """`fn` entering the simulator (`into`: its time added, one crossing) or leaving it
        (its time taken back out); a call already on that side runs as is."""
        clock, sign = time.perf_counter_ns, 1 if into else -1

        def clocked(*args, **kwargs):
            if self.inside is into:  # already on that side: nested simulator calls
                return fn(*args, **kwargs)
            self.inside = into
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.ns += sign * (clock() - t0)
                self.crossings += into
                self.inside = not into

        clocked.__wrapped__ = fn
        clocked.__name__, clocked.__qualname__ = fn.__name__, fn.__qualname__
        clocked.__doc__ = fn.__doc__
        return clocked

    # -- installing -------------------------------------------------------------------------------
    def install(self) -> BoundaryTimer:
        """Wrap the simulator's entry points (idempotent; `uninstall()` restores them)."""
        from . import module
        from .machine import machine

        module()  # every submodule loaded, ndarray's methods attached
        seen: set = set()
        for name, mod in list(sys.modules.items()):
            if name.startswith(__package__ + ".") and mod is not None and mod.__name__ != __name__:
                self._walk(mod, seen)
        m = machine()
        if m.allocator is not None and not getattr(m.allocator, "_gt_outward", False):
            self._set(m, "allocator", self.outward(m.allocator))
            m.allocator._gt_outward = True
        return self

    def uninstall(self) -> None:
        for owner, name, value in reversed(self._undo):
            setattr(owner, name, value)
        self._undo.clear()
        self._wrapped.clear()

    def _set(self, owner, name, value) -> None:
        # the raw attribute, not getattr's: a class's staticmethod must come back as one
        self._undo.append((owner, name, vars(owner)[name]))
        setattr(owner, name, value)

    def _walk(self, obj, seen: set) -> None:
        """Wrap the simulator's functions reachable as attributes of `obj` (a module, a
        namespace or a class of the simulator), recursing into namespaces and classes."""
        if id(obj) in seen:
            return
        seen.add(id(obj))
        for name, value in list(vars(obj).items()):
            if name in _SKIP:
                continue
            if _is_sim_function(value):
                self._set(obj, name, self.wrap(value))
            elif isinstance(obj, type) and isinstance(value, (staticmethod, classmethod)):
                if _is_sim_function(value.__func__):
                    self._set(obj, name, type(value)(self.wrap(value.__func__)))
            elif isinstance(obj, type) and isinstance(value, property):
                fs = [f and (self.wrap(f) if _is_sim_function(f) else f)
                      for f in (value.fget, value.fset, value.fdel)]  # fmt: skip
                self._set(obj, name, property(*fs, value.__doc__))
            elif isinstance(value, (types.ModuleType, types.SimpleNamespace)):
                if isinstance(value, types.ModuleType) and not _in_sim(value):
                    continue  # numpy, functools...: not the simulator's
                self._walk(value, seen)
            elif isinstance(value, type) and value.__module__.startswith(__package__):
                self._walk(value, seen)
            elif _in_sim_instance(value):
                self._walk(type(value), seen)

    # -- calibration and checking -----------------------------------------------------------------
    def overhead_ns(self, loops: int = 200, samples: int = 50) -> float:
        """The wrapper's cost per crossing outside its window: a loop calling a wrapped
        no-op, less its window time, less the same loop calling the bare no-op (the 10th
        percentile of `samples` loops)."""

        def noop(x):
            return x

        timed = self.wrap(noop)
        clock = time.perf_counter_ns
        out = []
        for _ in range(samples):
            t0 = clock()
            for _ in range(loops):
                noop(0)
            bare = clock() - t0
            before = self.ns
            t0 = clock()
            for _ in range(loops):
                timed(0)
            wrapped = clock() - t0 - (self.ns - before)
            out.append((wrapped - bare) / loops)
        self._wrapped.pop(id(noop), None)
        self._wrapped.pop(id(timed), None)
        return max(sorted(out)[len(out) // 10], 0.0)

    def uncovered(self, fn) -> list[str]:
        """What would make the clock wrong for `fn()`: simulator functions entered from
        outside it without a wrapper (their time would be charged to gpu_tensor), and
        functions of gpu_tensor run while the clock is inside the simulator without
        `outward` (their time would be charged to it). Settings (gpu_tensor/_env.py) the
        simulator reads are its own. Empty when the measurement is sound."""
        missed = []
        pkg = os.path.dirname(os.path.dirname(_SIM.rstrip(os.sep))) + os.sep
        env = pkg + "_env.py"

        def prof(frame, event, arg):
            if event != "call":
                return
            f = frame.f_code.co_filename
            name = f"{f[len(pkg) :] if f.startswith(pkg) else f}:{frame.f_code.co_name}"
            if f.startswith(_SIM):
                up = frame.f_back
                if f != _HERE and (up is None or not _sim_frame(up)):
                    missed.append(f"entered unwrapped: {name}")
            elif self.inside and f.startswith(pkg) and f != env:
                if frame.f_back is not None and _sim_frame(frame.f_back):
                    missed.append(f"ours inside the clock: {name}")

        sys.setprofile(prof)
        try:
            fn()  # its result is dropped under the check too: freeing is on the op's path
        finally:
            sys.setprofile(None)
        return missed


def _sim_frame(frame) -> bool:
    """A frame of the simulator's code, or of a wrapper entering it."""
    f = frame.f_code.co_filename
    return f.startswith(_SIM) and (f != _HERE or frame.f_code.co_name == "clocked")


def _in_sim(mod) -> bool:
    """A simulator module, or the `cupy` module it makes (a module subclass of its own)."""
    if type(mod).__module__.startswith(__package__ + "."):
        return True
    return (getattr(mod, "__file__", None) or "").startswith(_SIM)


def _in_sim_instance(value) -> bool:
    """An instance of a simulator class held as a namespace attribute (cupy.cuda.runtime)."""
    t = type(value)
    return not isinstance(value, type) and (t.__module__ or "").startswith(__package__ + ".")
