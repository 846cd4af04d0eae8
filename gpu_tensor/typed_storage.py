"""`Tensor.storage()`: torch's TypedStorage, a dtype-aware view of the tensor's
UntypedStorage (the whole buffer, not just the tensor's elements; `storage_offset`
counts from its start). Legacy in torch, still common in older code that checks
`a.storage().data_ptr() == b.storage().data_ptr()` to see whether two tensors share memory."""

from __future__ import annotations

import numpy as np

__all__ = ["TypedStorage"]


class TypedStorage:
    def __init__(self, tensor):
        self._untyped = tensor.untyped_storage()
        self.dtype = tensor.dtype
        self.device = tensor.device
        self._tensor = tensor

    def untyped(self):
        return self._untyped

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def size(self) -> int:
        return self._untyped.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def _flat(self):
        """The whole buffer as a 1-D tensor of this dtype (a view: writes go through)."""
        t = self._tensor
        return t.as_strided((self.size(),), (1,), 0)

    def tolist(self) -> list:
        return self._flat().tolist()

    def __getitem__(self, i):
        return self._flat()[i].item()

    def __setitem__(self, i, value) -> None:
        self._flat()[i] = value

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist()[:20])
        more = "\n ..." if self.size() > 20 else ""
        return (
            f"{body}{more}\n[gpu_tensor.storage.TypedStorage(dtype={self.dtype}, device="
            f"{self.device}) of size {self.size()}]"
        )

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.tolist(), dtype=dtype)
