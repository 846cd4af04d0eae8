"""Load a memory snapshot file (our JSON, or the torch-format pickle) and check its shape.

The pickle is read with a restricted unpickler: a snapshot is only dicts, lists,
strings and numbers, so any pickle that asks for a class or a function is refused
before anything runs. Every problem becomes a `SnapshotError` carrying one line that
names the file and what is wrong with it; the CLI prints it and exits with code 2.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import stat
import sys
from pathlib import Path

from ._errors import SnapshotError
from .snapshot_check import _INT_MAX, Limits, check_fields, check_tree
from .snapshot_json import read_json

__all__ = ["Limits", "SnapshotError", "load_snapshot", "validate_snapshot"]

# Containers a pickler may name by reference (protocol < 4 pickles sets and
# OrderedDicts through REDUCE). Scalars need no global at all, and constructors such
# as bytes/int/str are left out on purpose: bytes(10**12) from a hostile file would
# exhaust memory.
_ALLOWED_GLOBALS = frozenset(
    {
        ("builtins", "dict"),
        ("builtins", "list"),
        ("builtins", "tuple"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("collections", "OrderedDict"),
    }
)

_PICKLE_SUFFIXES = (".pickle", ".pkl")
_BLOCK_STATES = ("active_allocated", "active_pending_free", "inactive")
# torch's docstring calls the pending state this; its code writes active_pending_free.
_STATE_ALIASES = {"active_awaiting_free": "active_pending_free"}


class _SnapshotUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise SnapshotError(
            f"the pickle asks to load {module}.{name}; a memory snapshot holds only plain "
            "data, so it was refused (nothing was executed)"
        )

    def persistent_load(self, pid):
        raise SnapshotError("the pickle uses persistent ids; it is not a memory snapshot")


def _read_pickle(data: bytes) -> object:
    try:
        return _SnapshotUnpickler(io.BytesIO(data)).load()
    except SnapshotError:
        raise
    except MemoryError:
        raise SnapshotError("the pickle is too large to load") from None
    except Exception as exc:  # malformed pickles raise many types; all mean "not readable"
        raise SnapshotError(f"not a readable pickle ({type(exc).__name__}: {exc})") from None


def _refuse_constant(name: str):
    raise SnapshotError(f"the JSON holds {name}, which is not a number a snapshot can hold")


def _json_int(text: str) -> int:
    """json parse_int: the pickle path's 64-bit rule (check_tree), for JSON's integers."""
    v = int(text) if len(text) <= 21 else None  # 2**64 has 20 digits (and a sign)
    if v is None or not -_INT_MAX < v < _INT_MAX:
        raise SnapshotError(
            f"an integer beyond 64 bits ({text[:24]}{'...' if len(text) > 24 else ''}"
            f", {len(text)} characters) where a snapshot field was expected"
        )
    return v


def _json_float(text: str) -> float:
    """json parse_float: 1e400 would read as inf, which no snapshot field can hold."""
    v = float(text)
    if not math.isfinite(v):
        raise SnapshotError(f"the JSON holds {text[:24]}, beyond the range of a float")
    return v


def _object_hook(max_nodes: int):
    """json object_hook: counts objects against the node limit, and keeps one object per
    distinct creation frame (a long run's snapshot repeats the same few hundred frames in
    every block; sharing them keeps the loaded snapshot smaller than its file)."""
    cache = {}
    stacks = {}  # frame lists, keyed by the identity of their (already shared) frames
    count = [0]

    def hook(d: dict):
        count[0] += 1
        if count[0] > max_nodes:
            raise SnapshotError(
                f"over {max_nodes} objects; raise the limit with --max-snapshot-nodes"
            )
        if len(d) == 3 and "filename" in d and "line" in d and "name" in d:
            try:
                return cache.setdefault((d["filename"], d["line"], d["name"]), d)
            except TypeError:  # an unhashable value: check_fields reports it
                return d
        frames = d.get("frames")
        if type(frames) is list and frames:
            d["frames"] = stacks.setdefault(tuple(map(id, frames)), frames)
        for key in ("state", "action", "segment_type"):  # a few words, repeated per entry
            v = d.get(key)
            if type(v) is str:
                d[key] = sys.intern(v)
        return d

    return hook


def _stat_checked(path: Path, limits: Limits) -> None:
    """Only a regular file no larger than the limit is read (/dev/zero would never end, a
    FIFO would block forever)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such file") from None
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise SnapshotError(f"{path}: is a directory, expected a snapshot file")
    if not stat.S_ISREG(st.st_mode):
        raise SnapshotError(
            f"{path}: not a regular file (a device, FIFO or socket); save the "
            "snapshot to a file first"
        )
    if st.st_size > limits.max_bytes:
        raise SnapshotError(
            f"{path}: {st.st_size} bytes is over the {limits.max_bytes}-byte "
            "limit for a snapshot; raise it with --max-snapshot-bytes"
        )


def _load(f, path: Path, limits: Limits):
    head = f.read(4096)
    first = head.lstrip()[:1]
    if head[:1] == b"\x80" or path.suffix.lower() in _PICKLE_SUFFIXES:
        data = head + f.read(limits.max_bytes + 1 - len(head))  # bounded if the file grows
        if len(data) > limits.max_bytes:
            raise SnapshotError(
                f"over the {limits.max_bytes}-byte limit for a snapshot; "
                "raise it with --max-snapshot-bytes"
            )
        if not data.strip():
            raise SnapshotError("the file is empty")
        obj = _read_pickle(data)
        del data
        check_tree(obj, limits)  # a pickle can share, cycle and hold any leaf
        return obj
    if first in (b"{", b"["):
        f.seek(0)
        # parsed JSON is a tree of plain values: no tree walk; NaN/Infinity are refused
        # while parsing, and the views read only the fields check_fields has typed
        decoder = json.JSONDecoder(
            object_hook=_object_hook(limits.max_nodes),
            parse_constant=_refuse_constant,
            parse_int=_json_int,
            parse_float=_json_float,
        )
        return read_json(f, decoder)
    if not first and len(head) < 4096:
        raise SnapshotError("the file is empty")
    raise SnapshotError(
        "unknown format; expected a snapshot saved as JSON (save_snapshot) "
        "or as a pickle (_dump_snapshot)"
    )


def load_snapshot(path: str | Path, limits: Limits | None = None) -> dict:
    """Read and validate a snapshot file; returns the snapshot dict.

    The format is sniffed from the content (a binary pickle starts with 0x80, JSON
    with '{' or '['), so a renamed file still loads. `limits` bounds the file size, the
    node count and the shared references a pickle may expand into. JSON is parsed a piece
    at a time (snapshot_json), so its text is never in memory whole.
    """
    path = Path(path)
    limits = limits or Limits()
    _stat_checked(path, limits)
    try:
        try:
            with open(path, "rb") as f:
                obj = _load(f, path, limits)
        except OSError as exc:
            raise SnapshotError(f"cannot read ({exc.strerror or exc})") from None
        return validate_snapshot(obj)
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: {exc}") from None


def _need(mapping: dict, key: str, kinds: type | tuple, where: str) -> object:
    if key not in mapping:
        raise SnapshotError(f"{where} has no {key!r}; this is not a memory snapshot")
    value = mapping[key]
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise SnapshotError(f"{where}: {key!r} is {type(value).__name__}, not a memory snapshot")
    return value


def validate_snapshot(obj: object) -> dict:
    """Check the torch snapshot structure; returns a dict with 'segments' and 'device_traces'.

    torch.cuda.memory_snapshot() returns the bare segment list, so a list is accepted
    as {'segments': list}. Extra keys are kept; missing optional ones get defaults.
    """
    if isinstance(obj, list):
        obj = {"segments": obj}
    if not isinstance(obj, dict):
        raise SnapshotError(f"holds {type(obj).__name__}, not a memory snapshot dict")
    segments = _need(obj, "segments", list, "the snapshot")
    for i, seg in enumerate(segments):
        where = f"segment {i}"
        if not isinstance(seg, dict):
            raise SnapshotError(f"{where} is {type(seg).__name__}, not a segment dict")
        _need(seg, "address", int, where)
        if _need(seg, "total_size", int, where) < 0:
            raise SnapshotError(f"{where} has a negative total_size")
        blocks = _need(seg, "blocks", list, where)
        for j, block in enumerate(blocks):
            bwhere = f"segment {i} block {j}"
            if not isinstance(block, dict):
                raise SnapshotError(f"{bwhere} is {type(block).__name__}, not a block dict")
            if _need(block, "size", int, bwhere) < 0:
                raise SnapshotError(f"{bwhere} has a negative size")
            state = _need(block, "state", str, bwhere)
            if state in _STATE_ALIASES:
                block["state"] = state = _STATE_ALIASES[state]
            if state not in _BLOCK_STATES:
                raise SnapshotError(f"{bwhere} has unknown state {state!r}")
    traces = obj.get("device_traces", [])
    if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        raise SnapshotError("'device_traces' is not a list of per-device event lists")
    ext = obj.get("gpu_tensor")
    if ext is not None and not isinstance(ext, dict):
        raise SnapshotError("the 'gpu_tensor' key is not a dict")
    check_fields(obj)
    out = dict(obj)
    out.setdefault("device_traces", [])
    return out
