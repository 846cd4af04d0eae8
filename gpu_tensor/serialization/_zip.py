"""torch's checkpoint container: an uncompressed zip whose records start on 64-byte marks.

    <archive>/data.pkl               the pickled object; tensors name their storage by key
    <archive>/.format_version        "1"
    <archive>/.storage_alignment     "64"
    <archive>/byteorder              "little"
    <archive>/data/<key>             one storage's raw bytes each
    <archive>/version                "3\\n" (the serialization version torch checks)
    <archive>/.data/serialization_id a random id, as torch writes

Records are stored, never compressed, so a storage's bytes sit at a known offset in the
file: loading reads them with one `readinto` into the tensor's own buffer (no temporary
the size of the storage) or maps them (mmap=True). Each record's local header carries a
padding extra field (id b"FB", as torch's writer uses) so its data starts on a multiple of
64 bytes: a mapped storage is then aligned for every dtype.
"""

from __future__ import annotations

import os
import struct
import zipfile

__all__ = ["ZipWriter", "ZipReader", "ALIGNMENT"]

ALIGNMENT = 64  # torch's .storage_alignment: every data record starts on this boundary
_LOCAL_HEADER = 30  # fixed part of a zip local file header
_ZIP64_EXTRA = 20  # zipfile adds this extra field to a local header written as zip64
_ZIP64_FROM = 0x7FFFFFFF  # zipfile's ZIP64_LIMIT: records at least this big need zip64


class ZipWriter:
    """Writes the records of one checkpoint into `fileobj` (a seekable binary file)."""

    def __init__(self, fileobj, archive: str):
        self.archive = archive
        self._zip = zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def write(self, name: str, chunks, nbytes: int) -> None:
        """One record of `nbytes` bytes, written from the buffers `chunks` yields (so a
        device storage can be staged a piece at a time)."""
        info = zipfile.ZipInfo(f"{self.archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        zip64 = nbytes >= _ZIP64_FROM
        start = self._zip.fp.tell()
        fixed = _LOCAL_HEADER + len(info.filename.encode()) + (_ZIP64_EXTRA if zip64 else 0)
        pad = -(start + fixed + 4) % ALIGNMENT  # 4: the padding field's own id and size
        info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        written = 0
        with self._zip.open(info, "w", force_zip64=zip64) as out:
            for chunk in chunks:
                out.write(chunk)
                written += memoryview(chunk).nbytes
        if written != nbytes:
            raise RuntimeError(f"record {name}: wrote {written} bytes, expected {nbytes}")

    def write_bytes(self, name: str, data: bytes) -> None:
        self.write(name, (data,), len(data))

    def close(self) -> None:
        self._zip.close()


class ZipReader:
    """Reads a checkpoint: the archive prefix, small records, and where each data record's
    bytes start in the file."""

    def __init__(self, fileobj):
        self._fp = fileobj
        try:
            self._zip = zipfile.ZipFile(fileobj, "r")
        except zipfile.BadZipFile:
            raise RuntimeError(
                "not a checkpoint in torch's zip format (torch.save since 1.6 writes one); "
                "files written with _use_new_zipfile_serialization=False are not supported: "
                "re-save them with torch.save's defaults"
            ) from None
        names = self._zip.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkl:
            raise RuntimeError(
                "the zip file holds no <archive>/data.pkl record: it is not "
                "a checkpoint written by torch.save or gt.save"
            )
        self.archive = pkl[0].rpartition("/")[0]
        self._infos = {n: self._zip.getinfo(n) for n in names}

    def has(self, name: str) -> bool:
        return f"{self.archive}/{name}" in self._infos

    def read(self, name: str) -> bytes:
        return self._zip.read(f"{self.archive}/{name}")

    def record(self, name: str) -> tuple[int, int]:
        """(file offset of the record's first byte, its size) for a stored record."""
        full = f"{self.archive}/{name}"
        info = self._infos.get(full)
        if info is None:
            raise RuntimeError(
                f"the checkpoint has no record {full}: the file is truncated "
                "or was not written by torch.save / gt.save"
            )
        if info.compress_type != zipfile.ZIP_STORED:
            raise RuntimeError(
                f"record {full} is compressed; torch's format stores storages uncompressed"
            )
        self._fp.seek(info.header_offset)
        header = self._fp.read(_LOCAL_HEADER)
        if len(header) != _LOCAL_HEADER or header[:4] != b"PK\x03\x04":
            raise RuntimeError(f"record {full}: bad zip local header (a truncated file?)")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        return info.header_offset + _LOCAL_HEADER + name_len + extra_len, info.file_size

    def readinto(self, name: str, buf) -> None:
        """Fill `buf` (a writable buffer of the record's size) with the record's bytes."""
        offset, size = self.record(name)
        view = memoryview(buf).cast("B")
        if view.nbytes != size:
            raise RuntimeError(
                f"record {name}: {size} bytes in the file, {view.nbytes} expected from the pickle"
            )
        fd = self._fd()
        if fd is None:
            self._fp.seek(offset)
        got = 0
        while got < size:
            # a file: pread straight into the buffer (the buffered reader's readinto was
            # 4x slower on a 256 MiB record here); a file object: its own readinto
            n = (
                os.preadv(fd, [view[got:]], offset + got)
                if fd is not None
                else self._fp.readinto(view[got:])
            )
            if not n:
                raise RuntimeError(
                    f"record {name}: the file ends after {got} of {size} bytes (truncated?)"
                )
            got += n

    def _fd(self):
        try:
            return self._fp.fileno() if hasattr(os, "preadv") else None
        except (AttributeError, OSError, ValueError):  # BytesIO & co: no descriptor
            return None

    def close(self) -> None:
        self._zip.close()


def archive_name(f) -> str:
    """torch's archive prefix: the file's name without its extension, or 'archive' for a
    file object."""
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        return stem or "archive"
    return "archive"
