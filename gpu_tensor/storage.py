"""UntypedStorage: who owns a tensor's bytes.

Every view of a tensor shares one storage. The storage holds `_buf`, a flat uint8 array
(numpy or cupy) over the whole buffer; keeping it alive keeps the memory alive, and the
memory goes back to its allocator when the last array over it dies (so a numpy view a
user took out of a tensor stays valid too).

The storage also carries the version counter that all its views share (torch keeps one
counter per base tensor for the same reason: an in-place write through any view must be
visible to autograd's saved-tensor checks on every other view).
"""

from __future__ import annotations

__all__ = ["UntypedStorage"]


class UntypedStorage:
    """A flat byte buffer on a device (torch.UntypedStorage's counterpart)."""

    __slots__ = ("_buf", "_ptr", "device", "_version", "_block", "__weakref__")

    def __init__(self, buf, ptr: int, device, block=None):
        self._buf = buf  # flat uint8 array over the whole buffer (numpy or cupy)
        self._ptr = ptr
        self.device = device
        self._version = 0
        self._block = block  # allocator Block when the bytes come from our allocator

    def __call__(self, *args, **kwargs):
        # Tensor._storage is this object (an internal slot); torch tensors have no _storage,
        # so code calling t._storage() gets torch's AttributeError, not "not callable"
        raise AttributeError(
            "'Tensor' object has no attribute '_storage' (the storage is t.untyped_storage())"
        )

    def data_ptr(self) -> int:
        return self._ptr

    def nbytes(self) -> int:
        return int(self._buf.shape[0])

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def __repr__(self) -> str:
        return (
            f"UntypedStorage(nbytes={self.nbytes()}, device='{self.device}', "
            f"data_ptr=0x{self._ptr:x})"
        )
