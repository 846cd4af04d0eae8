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

The simulator's objects: install() gives each simulator class a clocked `__new__`, so an
object's allocation is timed with its `__init__` (and its `__del__`, if any). Python's
dispatch between those and the freeing of the object after them are not: `objects_ns(fn)`
measures that share for the objects `fn()` makes and drops outside the clock, in a
calibration loop of the same process (see there), for the benchmark to take out as well.

Install it after the warm-up: names the simulator binds lazily (cupy's generic routines,
bound on first use) are wrapped only if they exist when `install()` runs.
"""

from __future__ import annotations

import os
import sys
import time
import types
import weakref

__all__ = ["BoundaryTimer"]

_SIM = os.path.dirname(os.path.abspath(__file__)) + os.sep
_HERE = os.path.abspath(__file__)
# methods Python calls during class machinery, not on an op's path; wrapping them buys nothing
_SKIP = frozenset(("__new__", "__init_subclass__", "__set_name__", "__class_getitem__"))
_ABSENT = object()  # the original of a __new__ that install() added to a class


def _plain_new(cls, *args, **kwargs):
    """What a simulator class's `__new__` is after `uninstall()`: object's, as it was.
    Deleting the clocked one would not do: CPython then keeps calling a `__new__` found by
    name (the slot stays), and object's refuses the constructor's arguments."""
    if (args or kwargs) and cls.__init__ is object.__init__:
        raise TypeError(f"{cls.__name__}() takes no arguments")
    return object.__new__(cls)


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
        self._made = None  # while objects_made() runs: called with each new simulator object
        self._new = self._clocked(self._allocate, True)  # every simulator class's __new__

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

    def _allocate(self, cls, *args, **kwargs):
        """A simulator class's `__new__` (object's, which takes no arguments) in the clock."""
        obj = object.__new__(cls)
        if self._made is not None:
            self._made(obj, args, kwargs)
        return obj

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
            if value is _ABSENT:  # a __new__ added by install: see _plain_new
                setattr(owner, name, staticmethod(_plain_new))
            else:
                setattr(owner, name, value)
        self._undo.clear()
        self._wrapped.clear()

    def _set(self, owner, name, value) -> None:
        # the raw attribute, not getattr's: a class's staticmethod must come back as one
        self._undo.append((owner, name, vars(owner).get(name, _ABSENT)))
        setattr(owner, name, value)

    def _walk(self, obj, seen: set) -> None:
        """Wrap the simulator's functions reachable as attributes of `obj` (a module, a
        namespace or a class of the simulator), recursing into namespaces and classes."""
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, type) and obj.__new__ in (object.__new__, _plain_new):
            # the instance's allocation inside the clock too, not only its __init__
            self._set(obj, "__new__", staticmethod(self._new))
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

    # -- the simulator's own objects ---------------------------------------------------------------
    def objects_ns(self, fn, loops: int = 100, samples: int = 20) -> tuple[float, list]:
        """(ns, classes): what the simulator objects that `fn()` both makes and drops
        outside the clock cost outside it, per call of `fn`, and their classes (one entry
        per object). The clock times such an object's `__new__`, `__init__` and `__del__`,
        but not Python's dispatch between them nor the freeing of the object after its
        `__del__`: that is measured here, per class, by making and dropping one with the
        arguments `fn()` gave it, in a loop, less the same loop calling a no-op, less the
        windows and the wrapper's cost per crossing (`_lifecycle_ns`). Objects made or
        dropped inside the simulator are inside the clock already; objects that cannot be
        followed (no weak references) and classes whose making or dropping runs code of
        anyone but the simulator (a callback of ours, an owner's finaliser) count 0 ns here:
        what is left over stays gpu_tensor's."""
        classes = self._made_and_dropped_outside(fn)
        unit, per_crossing = {}, self.overhead_ns()
        for cls, (args, kwargs) in self._arguments(fn, set(classes)).items():
            unit[cls] = self._lifecycle_ns(cls, args, kwargs, per_crossing, loops, samples)
        return sum(unit.get(cls, 0.0) for cls in classes), classes

    def _made_and_dropped_outside(self, fn) -> list:
        """The class of each simulator object `fn()` makes outside the clock (called from
        code not the simulator's) and that dies outside it before `fn()` returns."""
        live: dict = {}  # id(weak reference) -> (it, the class)
        dropped = []

        def died(ref):
            _, cls = live.pop(id(ref))
            if not self.inside:
                dropped.append(cls)

        def made(obj, args, kwargs):
            if _made_inside():
                return
            try:
                ref = weakref.ref(obj, died)
            except TypeError:  # __slots__ without __weakref__: not followed, counted as ours
                return
            live[id(ref)] = (ref, type(obj))

        self._watching(made, fn)
        return dropped

    def _arguments(self, fn, classes: set) -> dict:
        """class -> (args, kwargs) `fn()` first made one of `classes` with, from outside."""
        seen: dict = {}

        def made(obj, args, kwargs):
            if type(obj) in classes and type(obj) not in seen and not _made_inside():
                seen[type(obj)] = (args, dict(kwargs))

        self._watching(made, fn)
        return seen

    def _watching(self, made, fn) -> None:
        """Run `fn()` (its result dropped) with `made(obj, args, kwargs)` told of every
        simulator object made meanwhile."""
        self._made = made
        try:
            fn()
        finally:
            self._made = None

    def _lifecycle_ns(self, cls, args, kwargs, per_crossing, loops: int, samples: int) -> float:
        """ns outside the clock to make and drop one `cls(*args, **kwargs)` (10th
        percentile); 0 if doing so runs any Python code outside the clock other than its
        wrappers (then that time is not the simulator's to take)."""
        foreign = []

        def prof(frame, event, arg):
            if event == "call" and not self.inside and frame.f_code.co_filename != _HERE:
                foreign.append(frame.f_code.co_name)

        sys.setprofile(prof)
        try:
            cls(*args, **kwargs)
        finally:
            sys.setprofile(None)
        if foreign:
            return 0.0
        noop, clock, out = "".format, time.perf_counter_ns, []  # C: takes any arguments
        for _ in range(samples):
            t0 = clock()
            for _ in range(loops):
                noop(*args, **kwargs)
            bare = clock() - t0
            ns, crossings = self.ns, self.crossings
            t0 = clock()
            for _ in range(loops):
                cls(*args, **kwargs)
            wall = clock() - t0 - (self.ns - ns) - per_crossing * (self.crossings - crossings)
            out.append((wall - bare) / loops)
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


def _made_inside() -> bool:
    """Whether the simulator object being made (by `_allocate`) is made by the simulator:
    the first frame above the clock's own frames is the simulator's."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == _HERE:
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(_SIM)


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
