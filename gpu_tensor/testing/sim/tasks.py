"""Stream tasks for cupy routines: each one reads its array arguments (and writes the
arrays it is told it writes) on the current stream, runs after everything ordered before it,
and its numpy result becomes a device array, or a view when numpy made a view."""

from __future__ import annotations

import numpy as np

from .machine import machine
from .ndarray import _alloc, check_dtype, ndarray, new_like

__all__ = ["run", "view_or_run", "wrap", "to_host", "array_from_host", "sim_arrays", "host_compute"]


def sim_arrays(obj, found):
    if isinstance(obj, ndarray):
        found.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            sim_arrays(o, found)
    elif isinstance(obj, dict):
        for o in obj.values():
            sim_arrays(o, found)
    return found


def to_host(obj):
    if isinstance(obj, ndarray):
        return obj._host()
    if isinstance(obj, tuple):
        return tuple(to_host(o) for o in obj)
    if isinstance(obj, list):
        return [to_host(o) for o in obj]
    if isinstance(obj, dict):
        return {k: to_host(v) for k, v in obj.items()}
    return obj


def _view_of(r: np.ndarray, arrays):
    """The sim view that numpy result `r` is (it points into an input's memory), or None."""
    if r.size == 0:
        return _empty_view_of(r, arrays)
    ptr = r.__array_interface__["data"][0]
    for a in arrays:
        mem = a.data.mem
        if mem.ptr <= ptr < mem.ptr + max(mem.size, 1):
            check_dtype(r.dtype)
            return ndarray(r.shape, r.dtype, memptr=a.data + (ptr - a.data.ptr), strides=r.strides)
    return None


def _empty_view_of(r: np.ndarray, arrays):
    """The sim view that an empty numpy result is, or None. cupy keeps a view of an empty
    array at that array's pointer (`_view_getitem`: `if a.size != 0: v.data = a.data +
    offset`; transpose, reshape and the other views copy `data`); an empty view of a
    non-empty array points where numpy's does, up to the buffer's end (basic indexing puts
    it where cupy's does: indexing.getitem)."""
    root = r
    while getattr(root, "base", None) is not None:
        root = root.base
    ptr = r.__array_interface__["data"][0]
    for a in arrays:
        if a.size == 0:
            if a.__dict__.get("_empty_root") is root:  # a view of a's host view (ndarray._host)
                check_dtype(r.dtype)
                return ndarray(r.shape, r.dtype, memptr=a.data, strides=r.strides)
            continue
        mem = a.data.mem
        if r.base is not None and mem.ptr <= ptr <= mem.ptr + mem.size:
            check_dtype(r.dtype)
            return ndarray(r.shape, r.dtype, memptr=a.data + (ptr - a.data.ptr), strides=r.strides)
    return None


def wrap(r, arrays, task):
    """A numpy result as cupy would return it (see the module docstring)."""
    if isinstance(r, np.generic):
        r = np.asarray(r)
    if isinstance(r, np.ndarray):
        view = _view_of(r, arrays)
        if view is not None:
            return view
        check_dtype(r.dtype)
        out = new_like(r)
        if out.size:
            lo, hi = out.extent()
            machine().sched.access(task, lo, hi, True, out.buffer_name())
            out._host()[...] = r
        return out
    if isinstance(r, list):
        return [wrap(x, arrays, task) for x in r]
    if isinstance(r, tuple):  # plain, as cupy returns: not numpy 2's SlogdetResult/SVDResult
        return tuple(wrap(x, arrays, task) for x in r)
    return r


def run(label, fn, args, kwargs, writes=()):
    """One cupy routine: a task on the current stream reading its array arguments (writing
    `writes`), run after everything ordered before it; results become device arrays."""
    from .streams import get_current_stream

    m = machine()
    m.count("cupy_routines")
    arrays = sim_arrays((args, kwargs), [])
    accesses = []
    for a in arrays:
        lo, hi = a.extent()
        accesses.append((lo, hi, any(a is w for w in writes), a.buffer_name()))
    queue = get_current_stream()._queue()
    if queue.capture is not None:
        return _run_captured(queue, label, fn, args, kwargs, arrays, accesses)
    task = m.sched.enqueue(queue, None, label, accesses)
    m.sched.run_through(task)
    with np.errstate(all="ignore"):
        r = host_compute(fn, args, kwargs)
    return wrap(r, arrays, task)


def _run_captured(queue, label, fn, args, kwargs, arrays, accesses):
    """A cupy routine on a capturing stream (graph.py): its results are allocated now, as
    cupy allocates before it launches, and computed only when the graph runs. The shapes
    come from a trial run over copies of the inputs, so nothing of the device's changes."""
    copies = {id(a): a._host().copy(order="K") for a in arrays}

    def substitute(obj):
        if isinstance(obj, ndarray):
            return copies[id(obj)]
        if isinstance(obj, (list, tuple)):
            return type(obj)(substitute(o) for o in obj)
        if isinstance(obj, dict):
            return {k: substitute(v) for k, v in obj.items()}
        return obj

    with np.errstate(all="ignore"):
        trial = fn(*substitute(args), **substitute(kwargs))
    outs = []  # result leaves: ("new", device array) or ("view", the input array it is)

    def build(r):
        if isinstance(r, np.generic):
            r = np.asarray(r)
        if isinstance(r, np.ndarray):
            for a in arrays:  # an out= argument handed back: the caller's own array
                if r is copies[id(a)]:
                    outs.append(("view", a))
                    return a
            check_dtype(r.dtype)
            out = new_like(r)
            outs.append(("new", out))
            return out
        if isinstance(r, (list, tuple)):
            return type(r)(build(x) for x in r)
        return r

    result = build(trial)
    writes = [(*o.extent(), True, o.buffer_name()) for kind, o in outs if kind == "new" and o.size]

    def replay():
        with np.errstate(all="ignore"):
            r = host_compute(fn, args, kwargs)
        leaves = []
        _leaves(r, leaves)
        for (kind, out), value in zip(outs, leaves, strict=True):
            if kind == "new" and out.size:
                out._host()[...] = value

    machine().sched.enqueue(queue, replay, label, list(accesses) + writes)
    return result


def _leaves(r, found):
    if isinstance(r, (np.ndarray, np.generic)):
        found.append(r)
    elif isinstance(r, (list, tuple)):
        for x in r:
            _leaves(x, found)


def host_compute(fn, args=(), kwargs=None):
    """numpy's `fn` over the host views. cupy allocates a routine's result on the device
    before it computes, so a result the host cannot hold is first asked of the current
    allocator, which refuses it as it would on a GPU (numpy's MemoryError only if not)."""
    try:
        return fn(*to_host(args), **to_host(kwargs or {}))
    except MemoryError as exc:
        nbytes = getattr(exc, "_total_size", 0)  # numpy's _ArrayMemoryError says its size
        if nbytes:
            _alloc(nbytes)
        raise


def view_or_run(label, fn, args, kwargs):
    """A routine that is a view when numpy can make one (reshape, transpose, ...): no memory
    touched, nothing launched; otherwise it copies, as one task (`run`)."""
    arrays = sim_arrays((args, kwargs), [])
    r = host_compute(fn, args, kwargs)
    if isinstance(r, np.ndarray):
        view = _view_of(r, arrays)
        if view is not None:
            return view
    return run(label, fn, args, kwargs)


def array_from_host(h: np.ndarray, label="host-to-device copy") -> ndarray:
    """cupy.array(numpy_array): a new device array with h's values (a staged copy)."""
    m = machine()
    h = np.asarray(h)
    check_dtype(h.dtype)
    out = new_like(h)
    m.count("bytes_copied", h.nbytes)
    m.count("memcpy_calls")
    src = h.copy()
    from .streams import get_current_stream

    lo, hi = out.extent()

    def copy():
        out._host()[...] = src

    task = m.sched.enqueue(
        get_current_stream()._queue(),
        copy,
        label,
        [(lo, hi, True, out.buffer_name())] if out.size else [],
    )
    m.sched.run_through(task)
    return out
