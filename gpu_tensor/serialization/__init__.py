"""`gt.save` / `gt.load`: checkpoints in torch's zip format, readable by torch and from it.

    gt.save(model.state_dict(), "model.pt")       # torch.load("model.pt") reads it
    sd = gt.load("model.pt", map_location="cuda")  # and this reads torch.save's files

The file is torch's (`_zip.py`): data.pkl names each storage once, by key, so views saved
together share their storage again after loading. Tensors are pickled under torch's names
(`_pickler.py`); loading resolves them to gpu_tensor's through an allow-list
(`_unpickler.py`): `weights_only=True` is the default and never runs code from the file.

Memory: loading reads each storage with one `readinto` straight into the tensor's buffer,
so host memory peaks at about the checkpoint's size (profiling/bench_serialization.py);
`mmap=True` maps the file instead (copy-on-write: writes never reach the file). A storage
bound for cuda is read into a pinned-pool buffer and uploaded from it with one async copy.
Saving a cuda tensor stages its storage through pinned memory in 64 MiB pieces (one copy
to host per byte, the next piece's copy overlapping the write of this one).
"""

from __future__ import annotations

import io
import mmap as _mmap
import os
import secrets

import numpy as np

from .. import dtype as _dt
from .._tensor import Tensor
from ..backends import get_backend
from ..backends.cpu import host_ptr
from ..device import CPU, Device, cuda_available, resolve
from ..storage import UntypedStorage
from ._pickler import StorageRef, TorchName, dumps, register_reducer
from ._unpickler import (
    Unpickler,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    register_global,
    safe_globals,
)
from ._zip import ZipReader, ZipWriter, archive_name

__all__ = [
    "save",
    "load",
    "add_safe_globals",
    "get_safe_globals",
    "clear_safe_globals",
    "safe_globals",
    "register_reducer",
    "register_global",
    "StorageRef",
    "TorchName",
]

_VERSION = b"3\n"  # torch's serialization version record
_STAGE_BYTES = 64 << 20  # device -> host staging piece: bounds the pinned memory a save holds
_HUGE_FROM = 2 << 20  # bytes: storages from one huge page on are read into mmap'd memory


def save(
    obj,
    f,
    pickle_module=None,
    pickle_protocol=2,
    _use_new_zipfile_serialization=True,
    _disable_byteorder_record=False,
) -> None:
    """Write `obj` (a tensor, a state_dict, any picklable structure of them) to `f`, a path
    or a writable binary file, in torch's zip format."""
    if not _use_new_zipfile_serialization:
        raise NotImplementedError(
            "gt.save writes torch's zip format only; "
            "_use_new_zipfile_serialization=False is not supported"
        )
    if pickle_protocol != 2:
        raise NotImplementedError("gt.save writes pickle protocol 2, as torch does")
    opened = isinstance(f, (str, os.PathLike))
    if not opened and not hasattr(f, "write"):  # torch's check, before anything is written
        raise AttributeError(
            "expected 'f' to be string, path, or a file-like object with a 'write' attribute"
        )
    data = io.BytesIO()
    storages = dumps(obj, data)
    fh = open(f, "wb") if opened else f
    try:
        out = ZipWriter(fh, archive_name(f))
        out.write_bytes("data.pkl", data.getvalue())
        out.write_bytes(".format_version", b"1")
        out.write_bytes(".storage_alignment", b"64")
        if not _disable_byteorder_record:
            out.write_bytes("byteorder", b"little")
        for key, ref in storages.values():
            st = ref.storage
            out.write(f"data/{key}", _storage_bytes(st), st.nbytes())
        out.write_bytes("version", _VERSION)
        out.write_bytes(".data/serialization_id", str(secrets.randbits(128)).encode())
        out.close()
    finally:
        if opened:
            fh.close()


def _storage_bytes(st: UntypedStorage):
    """The storage's bytes as buffers to write: host memory as it is; device memory staged
    through pinned memory a piece at a time, the next piece's copy queued before this one
    is written (transfer.to_host(non_blocking=True) lands in the pinned pool)."""
    if st.device.type == "cpu":
        yield memoryview(st._buf)
        return
    from .. import transfer

    whole = Tensor._make(st._buf, st.device, _dt.uint8, st)
    n = st.nbytes()
    pieces = [(lo, min(lo + _STAGE_BYTES, n)) for lo in range(0, n, _STAGE_BYTES)]
    ahead = None
    for i, (lo, hi) in enumerate(pieces):
        if ahead is None:
            ahead = transfer.to_host(whole[lo:hi], non_blocking=True)
        current = ahead
        ahead = (
            transfer.to_host(whole[pieces[i + 1][0] : pieces[i + 1][1]], non_blocking=True)
            if i + 1 < len(pieces)
            else None
        )
        transfer.wait_ready(current)
        yield memoryview(current.numpy())
        del current


def _check_seekable(f) -> None:
    """torch's check of a file object given to load, before anything reads it (zipfile, given
    a non-file, fails half-built and then complains again when collected)."""
    try:
        f.seek(f.tell())
    except (io.UnsupportedOperation, AttributeError) as e:
        raise type(e)(
            f"{e}. You can only torch.load from a file that is seekable. Please pre-load the "
            "data into a buffer like io.BytesIO and try to load from it instead."
        ) from None


def load(
    f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args
):
    """Read a checkpoint written by gt.save or torch.save.

    `map_location`: None (each storage where it was saved), a device or its name, a dict
    {saved location: new location}, or `fn(storage, location)` returning a storage (given
    a cpu one). `weights_only` (default True): only tensors, containers and plain values;
    any other global in the file is refused before it runs. `mmap=True`: tensors view a
    copy-on-write map of the file (needs a path)."""
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    opened = isinstance(f, (str, os.PathLike))
    if mmap and not opened:
        raise ValueError("f must be a file path in order to use the mmap argument")
    if not opened:
        _check_seekable(f)
    fh = open(f, "rb") if opened else f
    try:
        reader = ZipReader(fh)
        order = reader.read("byteorder") if reader.has("byteorder") else b"little"
        if order != b"little":
            raise NotImplementedError(
                f"the checkpoint's byte order is {order.decode()!r}; "
                "gpu_tensor reads little-endian checkpoints only"
            )
        mapped = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_COPY) if mmap else None

        def load_storage(key, location):
            return _read_storage(reader, key, location, map_location, mapped)

        unpickler = Unpickler(io.BytesIO(reader.read("data.pkl")), load_storage, weights_only)
        return unpickler.load()
    finally:
        if opened:
            fh.close()


def _read_storage(reader, key, location, map_location, mapped):
    if callable(map_location) and not isinstance(map_location, (str, Device)):
        st = _read_host(reader, key, mapped)
        moved = map_location(st, location)
        if isinstance(moved, UntypedStorage) or moved is None:
            return st if moved is None else moved
        return _to_device(st, _target(str(moved)))
    if map_location is None:
        where = location
    elif isinstance(map_location, dict):
        where = map_location.get(location, location)
    else:
        where = map_location
    dev = _target(where)
    if dev.type == "meta":  # shapes only: the bytes stay in the file
        _, size = reader.record(f"data/{key}")
        meta = get_backend(dev)
        return meta.storage_of(meta.empty((size,), np.uint8)[0])
    if dev.type == "cpu":
        return _read_host(reader, key, mapped)
    return _read_device(reader, key, dev)


def _target(where) -> Device:
    name = str(where)
    if name.startswith("cuda") and not cuda_available():
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but gt.cuda.is_available() "
            "is False. If you are running on a CPU-only machine, please use gt.load with "
            "map_location=gt.device('cpu') to map your storages to the CPU."
        )
    return resolve(where)


def _read_host(reader, key, mapped) -> UntypedStorage:
    name = f"data/{key}"
    if mapped is not None:
        offset, size = reader.record(name)
        buf = np.frombuffer(mapped, np.uint8, size, offset)
        return UntypedStorage(buf, host_ptr(buf), CPU)
    _, size = reader.record(name)
    backend = get_backend(CPU)
    buf = _huge_pages(size) if size >= _HUGE_FROM else backend.empty((size,), np.uint8)[0]
    reader.readinto(name, buf)
    return backend.storage_of(buf)


def _huge_pages(size: int) -> np.ndarray:
    """A fresh host buffer for a large storage, asking for transparent huge pages: the
    read into it page-faults 512x less often (a 16 x 16 MiB load measured 1.75 s with
    numpy's buffers, 0.68 s with these, on the dev machine). Freed with its last view."""
    region = _mmap.mmap(-1, size)
    if hasattr(region, "madvise") and hasattr(_mmap, "MADV_HUGEPAGE"):
        region.madvise(_mmap.MADV_HUGEPAGE)
    return np.frombuffer(region, np.uint8, size)


def _read_device(reader, key, dev) -> UntypedStorage:
    """File -> pinned-pool buffer -> device: one read, one async upload."""
    from .. import transfer

    name = f"data/{key}"
    _, size = reader.record(name)
    staged = transfer.empty_pinned((size,), _dt.uint8)
    reader.readinto(name, staged.numpy())
    return transfer.to_device(staged, dev)._storage


def _to_device(st: UntypedStorage, dev: Device) -> UntypedStorage:
    if st.device == dev:
        return st
    from .. import transfer

    flat = Tensor._make(st._buf, st.device, _dt.uint8, st)
    moved = transfer.to_device(flat, dev) if dev.type == "cuda" else transfer.to_host(flat)
    return moved._storage
