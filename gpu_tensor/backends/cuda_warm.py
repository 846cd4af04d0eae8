"""The cuda backend's warm entries: one elementwise op on operands of one layout, as one
Python frame that allocates the result, packs the arguments and launches.

ops/_dispatch.py keys a warm op by (op, operand dtypes, shapes, layouts, alignment) and
finds, in the backend's plan cache, the entry `bind` made for that key the first time:
`entry(a)` or `entry(a, b)` (the operator's own operands, arrays or a Python scalar)
returns the result array, `entry.out` is its gpu_tensor dtype and `entry.scalar_to` the
conversion of a number second operand (None: none). The plan itself (the
kernel, grid, block, argument layout) is fusion/eager.py's `_Launch`, from its cache: an
entry only binds it to this backend's allocator and cupy's classes, which is what
`run_planned` and `CudaBackend._result` do on every call, once.

`bind_copy` makes the same kind of entry for a copy (a cast, `clone()`, `contiguous()`):
`entry(a)` returns a fresh array laid out as the general path's first result was, filled by
the copy kernel's one launch (or one memcpy) that kernel/copy.py `fresh_copy` planned.

Written out per argument order (one array; two arrays; an array then a scalar; any other
order), each a few lines that are the same on purpose: a shared helper would be one more
frame per op, which is what this file saves (tests/fusion/test_warm_entry.py compares every
order with apply()). The result's strides are the plan's: None for C order, else torch's
layout of non-contiguous operands, such as `x.t().exp()` (fusion/eager.py `_plan`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

__all__ = ["bind", "bind_copy"]


def bind(backend, launch, out_np, swap: bool):
    """The warm entry of `launch` (eager's plan of the op over operands in the kernel's
    order) on `backend`, for an operator whose operands come `swap`ped (a reflected op).
    `out_np`: the result's numpy dtype."""
    shape, call, tail = launch.shape, launch.call, launch.tail
    stored, nbytes, tag, strides = backend._layout(shape, out_np, launch)
    if call is None or not nbytes:  # nothing to compute: an empty result
        result = backend._result

        def empty(a, b=None):
            return result(shape, out_np, launch)

        entry = _current(backend, empty)
        entry.scalar_to = None
        return entry
    # `cuda.get_current_stream` is looked up on each call: the current stream can change,
    # and bench_host_cost's clock wraps the function where it is found.
    # malloc's `inside`: the frames from the entry up that are gpu_tensor's for sure (the
    # entry, the device's `with` where there are several, the operator that called it)
    inside = 2 if backend._one_device else 3
    alloc = backend._alloc
    malloc, cuda = alloc.malloc, backend._cuda
    unowned, pointer, ndarray = backend._unowned, backend._pointer, backend._ndarray
    owner, index = backend._owner, backend.index
    # where each kernel argument comes from, as positions in the operator's (a, b)
    arrays = tuple(1 - i if swap else i for i in launch.arrays)
    scalars = tuple((1 - i if swap else i, to) for i, to in launch.scalars)

    if arrays == (0,) and not scalars:  # x.exp(), or an op of an array alone

        def run(a, b=None):
            block = malloc(nbytes, cuda.get_current_stream().ptr, inside)
            block.tag = tag  # one dict per layout, shared: tags are replaced, never edited
            out = ndarray(shape, stored, pointer(unowned(block.ptr, nbytes, owner((alloc, block)), index), 0), strides)  # fmt: skip
            call((a, out) + tail)
            return out

    elif arrays == (0, 1) and not scalars:  # x + y

        def run(a, b):
            block = malloc(nbytes, cuda.get_current_stream().ptr, inside)
            block.tag = tag
            out = ndarray(shape, stored, pointer(unowned(block.ptr, nbytes, owner((alloc, block)), index), 0), strides)  # fmt: skip
            call((a, b, out) + tail)
            return out

    elif arrays == (0,) and len(scalars) == 1 and scalars[0][0] == 1:  # x * 2.0, 2.0 - x
        to = scalars[0][1]

        def run(a, b):
            s = to(b)  # before the block: a number out of the kernel's range raises here
            block = malloc(nbytes, cuda.get_current_stream().ptr, inside)
            block.tag = tag
            out = ndarray(shape, stored, pointer(unowned(block.ptr, nbytes, owner((alloc, block)), index), 0), strides)  # fmt: skip
            call((a, out, s) + tail)
            return out

    else:  # any other order (a reflected pair of arrays, an array the kernel reads twice)

        def run(a, b=None):
            operands = (a, b)
            args = [operands[i] for i in arrays]
            scalar_args = [to(operands[i]) for i, to in scalars]
            block = malloc(nbytes, cuda.get_current_stream().ptr, inside)
            block.tag = tag
            out = ndarray(shape, stored, pointer(unowned(block.ptr, nbytes, owner((alloc, block)), index), 0), strides)  # fmt: skip
            call((*args, out, *scalar_args, *tail))
            return out

    entry = _current(backend, run)
    # the number's conversion, for ops/_kernel_out._checked (a number out of range is
    # refused before the op's own check, as the entry converts it before the block)
    entry.scalar_to = next((to for i, to in scalars if i == 1), None)
    return entry


def _current(backend, run):
    """`run` itself with one device (always the current one); else `run` inside the
    backend's device (a frame more)."""
    if backend._one_device:
        return run
    device = backend._dev

    def on_device(a, b=None):
        with device:
            return run(a, b)

    return on_device


def bind_copy(backend, out, tag, how, callers=1):
    """The warm entry of a copy whose general path gave `out` (a fresh array: its shape,
    strides and dtype are every later result's) with block tag `tag`, run as `how`
    (kernel/copy.py `fresh_copy`: one launch or one memcpy, planned for a fresh block,
    which the allocator aligns to 512 bytes). `callers`: the frames above the entry that are
    gpu_tensor's for sure (the cast method: 1; clone() or contiguous() and _layout's `_warm`: 2)."""
    shape, stored, nbytes = out.shape, out.dtype, out.nbytes
    strides = None if out.strides == _c_strides(shape, stored.itemsize) else out.strides
    inside = callers + (1 if backend._one_device else 2)  # the entry (its device's `with`)
    alloc = backend._alloc
    malloc, cuda = alloc.malloc, backend._cuda
    unowned, pointer, ndarray = backend._unowned, backend._pointer, backend._ndarray
    owner, index = backend._owner, backend.index
    if how[0] == "memcpy":
        _, size, doff, soff = how
        rt = cuda.runtime  # memcpyAsync looked up per call, as get_current_stream is
        kind = rt.memcpyDeviceToDevice

        def run(a, b=None):
            stream = cuda.get_current_stream().ptr
            block = malloc(nbytes, stream, inside)
            block.tag = tag  # one dict per layout, shared: tags are replaced, never edited
            out = ndarray(shape, stored, pointer(unowned(block.ptr, nbytes, owner((alloc, block)), index), 0), strides)  # fmt: skip
            rt.memcpyAsync(block.ptr + doff, a.data.ptr + soff, size, kind, stream)
            return out

        return _current(backend, run)
    _, fn, grid, block_dim, doff, soff, tail = how
    call = partial(fn, grid, block_dim)
    tail = tuple(tail)
    if doff or soff:  # a source walked from its end (a negative stride): addresses
        uint64 = np.uint64

        def run(a, b=None):
            block = malloc(nbytes, cuda.get_current_stream().ptr, inside)
            block.tag = tag
            out = ndarray(shape, stored, pointer(unowned(block.ptr, nbytes, owner((alloc, block)), index), 0), strides)  # fmt: skip
            call((uint64(block.ptr + doff), uint64(a.data.ptr + soff)) + tail)
            return out

    else:  # the kernel takes the arrays (cupy passes an array as its data pointer)

        def run(a, b=None):
            block = malloc(nbytes, cuda.get_current_stream().ptr, inside)
            block.tag = tag
            out = ndarray(shape, stored, pointer(unowned(block.ptr, nbytes, owner((alloc, block)), index), 0), strides)  # fmt: skip
            call((out, a) + tail)
            return out

    return _current(backend, run)


def _c_strides(shape, itemsize) -> tuple:
    """cupy's strides of a C-contiguous array of `shape` (what ndarray() gives unasked)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))
