"""What a loaded snapshot may contain before anything renders it.

`check_tree` walks the whole object once, without recursion: a bounded node count, a
bounded number of shared references (a 12 KB pickle can name one block 9 million times),
no cycles, string keys, and leaves that are str / int (64-bit) / finite float / bool /
None. `check_fields` then checks the type of every optional field the views read, so a
renderer never meets a wrong-typed value. Every problem is one `SnapshotError` line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._errors import SnapshotError

__all__ = ["Limits", "check_tree", "check_fields"]

_INT_MAX = 2**64  # addresses and sizes are 64-bit; a 5,001-digit integer is not a size


@dataclass(frozen=True)
class Limits:
    """Bounds on what a snapshot file may expand into (each has a CLI flag to raise it)."""

    max_bytes: int = 2**30  # --max-snapshot-bytes: 1 GiB, five times a large real snapshot
    max_nodes: int = 50_000_000  # --max-snapshot-nodes: containers and values, expanded
    max_shared: int = 100_000  # --max-shared-refs: repeat visits of one list or dict


_LEAVES = (str, int, float, bool, type(None))


def _leaf_problem(v) -> str | None:
    t = type(v)
    if t is str or t is bool or v is None:
        return None
    if t is int:
        return None if -_INT_MAX < v < _INT_MAX else "an integer beyond 64 bits"
    if t is float:
        return None if math.isfinite(v) else f"a non-finite number ({v})"
    return f"a {t.__name__} value (a snapshot holds only text, numbers, lists and dicts)"


def check_tree(root, limits: Limits) -> None:
    """Walk `root` (an unpickled object) once; SnapshotError at the first problem, naming
    it and the limit flag. Parsed JSON needs no walk: it is always a tree of plain values."""
    nodes = shared = 0
    seen: set[int] = set()
    path: set[int] = set()  # containers on the walk's current branch: a repeat is a cycle
    stack = [(root, False)]
    while stack:
        obj, leaving = stack.pop()
        if leaving:
            path.discard(id(obj))
            continue
        key = id(obj)
        if key in path:
            raise SnapshotError(
                "the data contains itself (a reference cycle); a memory snapshot is a tree"
            )
        if key in seen:
            shared += 1
            if shared > limits.max_shared:
                raise SnapshotError(
                    f"over {limits.max_shared} shared references (one list or dict "
                    "reused again and again expands far beyond the file); raise the "
                    "limit with --max-shared-refs"
                )
        seen.add(key)
        path.add(key)
        stack.append((obj, True))
        items = obj.items() if isinstance(obj, dict) else ((None, v) for v in obj)
        for k, v in items:
            nodes += 1
            if k is not None and type(k) is not str:
                raise SnapshotError(
                    f"a dict key is {type(k).__name__} ({k!r:.40}); snapshot keys are strings"
                )
            t = type(v)
            if t is dict or t is list or t is tuple:
                stack.append((v, False))
            elif t is not str:
                problem = _leaf_problem(v)
                if problem is not None:
                    raise SnapshotError(f"{problem} where a snapshot field was expected")
        if nodes > limits.max_nodes:
            raise SnapshotError(
                f"over {limits.max_nodes} values; raise the limit with --max-snapshot-nodes"
            )


def _typed(d: dict, key: str, kinds, where: str, low: int | None = 0, none_ok=True):
    if key not in d:
        return
    v = d[key]
    if v is None and none_ok:
        return
    if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise SnapshotError(f"{where}: {key!r} is {type(v).__name__} ({v!r:.40}), expected {names}")
    if low is not None and isinstance(v, int) and v < low:
        raise SnapshotError(f"{where}: {key!r} is {v}, expected >= {low}")


def _frames(frames, where: str) -> None:
    if frames is None:
        return
    if not isinstance(frames, (list, tuple)):
        raise SnapshotError(f"{where}: 'frames' is {type(frames).__name__}, expected a list")
    for i, f in enumerate(frames):
        if (
            type(f) is dict
            and type(f.get("filename", "")) is str
            and type(f.get("line", 0)) is int
            and type(f.get("name", "")) is str
        ):
            continue  # the common, well-formed frame: no per-field calls
        if not isinstance(f, dict):
            raise SnapshotError(f"{where} frame {i} is {type(f).__name__}, expected a dict")
        _typed(f, "filename", (str,), f"{where} frame {i}")
        _typed(f, "name", (str,), f"{where} frame {i}")
        _typed(f, "line", (int,), f"{where} frame {i}", None)


def check_fields(snap: dict) -> None:
    """Types of the optional fields the text, --json and --html views read."""
    for i, seg in enumerate(snap["segments"]):
        where = f"segment {i}"
        _typed(seg, "segment_type", (str,), where, none_ok=False)
        _typed(seg, "stream", (int,), where, none_ok=False)
        _typed(seg, "device", (int,), where, none_ok=False)
        if seg["address"] < 0:
            raise SnapshotError(f"{where} has a negative address")
        for j, b in enumerate(seg["blocks"]):
            bwhere = f"segment {i} block {j}"
            _typed(b, "address", (int,), bwhere, none_ok=False)
            _typed(b, "requested_size", (int,), bwhere, none_ok=False)
            _frames(b.get("frames"), bwhere)
    for d, trace in enumerate(snap.get("device_traces") or []):
        for k, e in enumerate(trace):
            where = f"device {d} trace event {k}"
            if not isinstance(e, dict):
                raise SnapshotError(f"{where} is {type(e).__name__}, expected a dict")
            _typed(e, "action", (str,), where)
            for key in ("size", "addr", "device_free", "stream"):
                _typed(e, key, (int,), where, None)
            _typed(e, "time_us", (int, float), where, None)
            _frames(e.get("frames"), where)
    ext = snap.get("gpu_tensor") or {}
    _typed(ext, "device", (int,), "the 'gpu_tensor' key")
    stats = ext.get("memory_stats")
    if stats is not None:
        if not isinstance(stats, dict):
            raise SnapshotError("'memory_stats' is not a dict")
        for k, v in stats.items():  # every memory_stats() value is a count or a byte size
            if type(v) is not int:
                raise SnapshotError(
                    f"stat {k!r} is {type(v).__name__} ({v!r:.40}), expected "
                    "an integer (a count or a number of bytes)"
                )
    tensors = ext.get("live_tensors")
    if tensors is not None and not isinstance(tensors, list):
        raise SnapshotError("'live_tensors' is not a list")
    for i, t in enumerate(tensors or []):
        where = f"live tensor {i}"
        if not isinstance(t, dict):
            raise SnapshotError(f"{where} is {type(t).__name__}, expected a dict")
        for key in ("dtype", "site"):
            _typed(t, key, (str,), where)
        shape = t.get("shape")
        if shape is not None and (
            not isinstance(shape, (list, tuple))
            or not all(isinstance(s, int) and not isinstance(s, bool) for s in shape)
        ):
            raise SnapshotError(f"{where}: 'shape' is not a list of ints")
        _frames(t.get("frames"), where)
