"""A legacy DLPack producer: a bare "dltensor" PyCapsule (what `torch.utils.dlpack.to_dlpack`
and old libraries hand out) wrapped so `np.from_dlpack` / `cupy.from_dlpack` accept it."""

from __future__ import annotations

import ctypes

__all__ = ["LegacyCapsule"]

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensorHead(ctypes.Structure):
    # DLManagedTensor starts with its DLTensor: data pointer, then the device (dlpack.h)
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice)]


class LegacyCapsule:
    """`__dlpack__` returns the capsule itself; `__dlpack_device__` reads it from the
    DLTensor. RuntimeError (torch's class) for a capsule already consumed or not DLPack's."""

    def __init__(self, capsule):
        if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
            raise RuntimeError(
                "from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
                "consumed only once, so you might have already constructed a tensor from it "
                "once; make a new capsule (x.__dlpack__()) for each tensor"
            )
        head = _DLTensorHead.from_address(_api.PyCapsule_GetPointer(capsule, b"dltensor"))
        self._capsule = capsule
        self._device = (int(head.device.device_type), int(head.device.device_id))

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device
