"""The protocol every backend implements, named once.

Core code reaches a device through `get_backend(device)`: the hooks and attributes below.
Arrays are numpy ndarrays (cpu, emulated cuda) or cupy ndarrays (cuda); an op that needs an
array routine no hook offers calls the backend's array module `xp` directly, and asks the
attributes (`host_arrays`, `fills_by_pieces`, `casts_in_kernel`) rather than testing which
kind of device it runs on (ARCHITECTURE.md, "Who decides what cuda is").
"""

from __future__ import annotations

__all__ = ["Backend", "PIECE"]

# Elements numpy computes at once where a result is filled piece by piece (the emulated
# device; the drawn factories on every device). Below it a result is computed whole: its
# temporaries are small. One number, so every path that cuts by it cuts the same way.
PIECE = 1 << 16


class Backend:
    """Hooks: allocation, adoption of computed arrays, storage views, host copies, sync."""

    xp = None  # the array module (numpy or cupy)
    is_emulated = False
    # the cuda kind that made this backend (backends/kinds.py); None for cpu and meta
    kind = None
    # arrays are numpy ndarrays over host memory (cpu, emulated cuda): numpy computes on
    # them and they can be read in place, with no copy to the host
    host_arrays = False
    # numpy's results must never exist whole in host memory (emulated cuda: its memory is
    # the allocator's): a composite fills a large result piece by piece (by_pieces)
    fills_by_pieces = False
    # True where ops whose operands need no conversion may skip the generic dispatch and
    # call `elementwise` directly (real cuda); cpu has its own inline fast path
    device_fast_path = False
    # True where `elementwise` takes operands in their own dtypes and casts inside its kernel
    # (real cuda): the dispatcher then passes them as they are, never through `astype`
    casts_in_kernel = False
    device = None
    # cupy: out-of-range integer-array indices wrap around instead of raising (its documented
    # departure from numpy), so callers check bounds themselves where this is True
    wraps_indices = False

    def empty(self, shape, np_dtype):
        """Fresh uninitialised array `(array, storage)` on this device."""
        raise NotImplementedError

    def adopt(self, array):
        """Make a freshly computed xp array this device's: `(array, storage or None)`.
        None means the storage is derived lazily from the array on first request."""
        raise NotImplementedError

    def storage_of(self, array):
        """An UntypedStorage over the buffer `array` lives in (for lazily made storages)."""
        raise NotImplementedError

    def ptr(self, array) -> int:
        """Address of the array's first element."""
        raise NotImplementedError

    def from_storage(self, storage, shape, strides, offset, np_dtype):
        """An array view over `storage` (strides and offset in elements)."""
        raise NotImplementedError

    def from_host(self, host_array):
        """Copy a numpy array onto this device: `(array, storage or None)`."""
        raise NotImplementedError

    def to_host(self, array):
        """Copy an array of this device into a new numpy array (blocking)."""
        raise NotImplementedError

    def copy_(self, dst, src) -> None:
        """dst[...] = src with broadcasting and casting (strided on both sides)."""
        raise NotImplementedError

    def contiguous(self, array):
        """A C-contiguous copy of `array`."""
        raise NotImplementedError

    def astype(self, array, np_dtype):
        """A new array with `array`'s values converted to `np_dtype`."""
        raise NotImplementedError

    def elementwise(self, key, fn, args, out_np, params=None):
        """Apply the numpy-semantics function `fn` (op table key `key`, keyword `params`)
        to arrays/scalars `args`. The result should have numpy dtype `out_np` (callers cast
        when a backend returns the compute dtype).

        Operands arrive in the compute dtype, except on a backend with `casts_in_kernel`:
        there they arrive in their own dtypes (Python scalars as they are) and the kernel
        converts each as it loads it, so a mixed-dtype op is one launch with no temporary;
        such a backend returns its result already allocated and tagged as its own (nothing
        to `adopt`)."""
        raise NotImplementedError

    def compute_into(self, fn, operands, plan):
        """`fn(*operands)` for a routine that takes `out=` (a reduction, a product, a join).
        `plan()` gives the result's (shape, dtype, c_order), or None; a backend whose arrays
        numpy does not allocate (emulated cuda) allocates that result and passes `out=`.
        Here: `fn(*operands)` as given (the array module allocates the result)."""
        return fn(*operands)

    def by_pieces(self, fn, operands, shape, np_dtype, whole=()):
        """`fn(*operands)` for a routine with no `out=` whose result (C order, `shape`,
        `np_dtype`) is computed independently along every dim but those in `whole` (a sort
        along its dim, a gather; or a reduction, whose result keeps them at size 1): a
        piece of the result is `fn` of the operands' same piece. A backend whose arrays
        numpy does not allocate (emulated cuda) allocates the result and fills it piece by
        piece, so numpy's temporaries stay piece-sized. Here: `fn(*operands)` as given."""
        return fn(*operands)

    def host_memory_error(self, exc: MemoryError, what: str) -> RuntimeError:
        """torch's error for numpy's MemoryError while computing `what` here: the host
        allocator's RuntimeError (a device allocator raises gt.OutOfMemoryError itself)."""
        return RuntimeError(
            f"DefaultCPUAllocator: can't allocate memory computing {what}: "
            f"{exc}; use smaller tensors, or chunk the computation"
        )

    def index_add_(self, array, index, values) -> None:
        """array[index] += values, repeated indices accumulating (numpy's add.at)."""
        self.xp.add.at(array, index, values)

    def index_mul_(self, array, index, values) -> None:
        """array[index] *= values, repeated indices multiplying (numpy's multiply.at)."""
        self.xp.multiply.at(array, index, values)

    def synchronize(self) -> None:
        pass
