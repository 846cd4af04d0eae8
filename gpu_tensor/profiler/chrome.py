"""`export_chrome_trace`: the recording as Chrome trace JSON, in torch's (Kineto's) schema,
so Perfetto, chrome://tracing and tools written for torch's traces read it.

- host: one `cpu_op` X event per op and a `user_annotation` per record_function range, on
  (pid = this process, tid = the thread); they nest perfectly (Perfetto's rule for JSON);
- device: a `kernel` X event per op that ran on a cuda stream with none of its children
  timed there (the leaves, which do not overlap on a stream), on (pid = device index, tid =
  stream), with an `ac2g` flow arrow from the op that launched it;
- memory: torch's `[memory]` instants (Addr, Bytes, Total Allocated, Total Reserved, Device
  Type, Device Id) and a counter track of the bytes allocated per device.
Timestamps are microseconds (3 decimals: nanosecond precision) from the recording's start.
A `.gz` path is written gzipped.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
import uuid

__all__ = ["trace_dict", "write"]


def _us(ns):
    return round(ns / 1e3, 3)


def trace_dict(results):
    s = results.session
    base = s.start_ns
    pid, tid = s.pid, s.tid
    out = [
        {
            "name": "process_name",
            "ph": "M",
            "ts": 0,
            "pid": pid,
            "tid": 0,
            "args": {"name": "python3"},
        },
        {
            "name": "process_labels",
            "ph": "M",
            "ts": 0,
            "pid": pid,
            "tid": 0,
            "args": {"labels": "CPU"},
        },
        {
            "name": "process_sort_index",
            "ph": "M",
            "ts": 0,
            "pid": pid,
            "tid": 0,
            "args": {"sort_index": 0},
        },
        {
            "name": "thread_name",
            "ph": "M",
            "ts": 0,
            "pid": pid,
            "tid": tid,
            "args": {"name": f"thread {tid} (python)"},
        },
    ]
    events = results.events
    devices, streams = set(), set()
    flow = 0
    has_timed_child = set()
    for op in s.ops:
        if op.ev0 is not None and op.parent is not None:
            has_timed_child.add(id(op.parent))
    for i, (op, e) in enumerate(zip(s.ops, events, strict=False)):
        args = {"External id": i + 1, "Record function id": 0, "Ev Idx": i}
        if op.shapes is not None:
            args["Input Dims"] = op.shapes
        if op.waits:
            args["Host syncs"] = op.waits
        cat = "user_annotation" if op.annotation else "cpu_op"
        name = op.name if op.annotation else e.name
        out.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": pid,
                "tid": tid,
                "ts": _us(op.t0 - base),
                "dur": _us(op.t1 - op.t0),
                "args": args,
            }
        )
        if op.ev0 is None or id(op) in has_timed_child or not results.use_device:
            continue
        dev, stream = op.stream
        devices.add(dev)
        streams.add((dev, stream))
        flow += 1
        start = round(op.ev0 - base / 1e3, 3)
        out.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": e.name.replace("aten::", "") + "_kernel",
                "pid": dev,
                "tid": stream,
                "ts": start,
                "dur": round(max(0.0, op.ev1 - op.ev0), 3),
                "args": {
                    "External id": i + 1,
                    "device": dev,
                    "stream": stream,
                    "correlation": flow,
                },
            }
        )
        out.append(
            {
                "ph": "s",
                "id": flow,
                "pid": pid,
                "tid": tid,
                "ts": _us(op.t0 - base),
                "cat": "ac2g",
                "name": "ac2g",
            }
        )
        out.append(
            {
                "ph": "f",
                "id": flow,
                "pid": dev,
                "tid": stream,
                "ts": start,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )
    for ns, addr, nbytes, total, reserved, dev, _ in s.memory:
        devices.add(dev)
        ts = _us(ns - base)
        out.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "s": "t",
                "name": "[memory]",
                "pid": pid,
                "tid": tid,
                "ts": ts,
                "args": {
                    "Total Reserved": reserved,
                    "Total Allocated": total,
                    "Bytes": nbytes,
                    "Addr": addr,
                    "Device Type": 1,
                    "Device Id": dev,
                },
            }
        )
        out.append(
            {
                "ph": "C",
                "name": f"Memory cuda:{dev}",
                "pid": pid,
                "tid": 0,
                "ts": ts,
                "args": {"Allocated": total, "Reserved": reserved},
            }
        )
    for dev in sorted(devices):
        out += [
            {
                "name": "process_name",
                "ph": "M",
                "ts": 0,
                "pid": dev,
                "tid": 0,
                "args": {"name": "python3"},
            },
            {
                "name": "process_labels",
                "ph": "M",
                "ts": 0,
                "pid": dev,
                "tid": 0,
                "args": {"labels": f"GPU {dev}"},
            },
            {
                "name": "process_sort_index",
                "ph": "M",
                "ts": 0,
                "pid": dev,
                "tid": 0,
                "args": {"sort_index": 5000000 + dev},
            },
        ]
    for dev, stream in sorted(streams):
        out.append(
            {
                "name": "thread_name",
                "ph": "M",
                "ts": 0,
                "pid": dev,
                "tid": stream,
                "args": {"name": f"stream {stream} "},
            }
        )
    end = _us(s.end_ns - base)
    out += [
        {
            "ph": "X",
            "cat": "Trace",
            "ts": 0,
            "dur": end,
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)",
            "args": {"Op count": 0},
        },
        {
            "name": "process_sort_index",
            "ph": "M",
            "ts": 0,
            "pid": "Spans",
            "tid": 0,
            "args": {"sort_index": 536870912},
        },
        {
            "name": "Iteration Start: PyTorch Profiler",
            "ph": "i",
            "s": "g",
            "pid": "Traces",
            "tid": "Trace PyTorch Profiler",
            "ts": 0,
        },
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": end},
    ]
    return {
        "schemaVersion": 1,
        "deviceProperties": [],
        "record_shapes": int(s.record_shapes),
        "profile_memory": int(s.profile_memory),
        "with_stack": int(s.with_stack),
        "trace_id": uuid.uuid4().hex.upper(),
        "host_name": socket.gethostname(),
        "distributedInfo": {"backend": "", "rank": 0, "world_size": 1},
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": time.time_ns() - (time.perf_counter_ns() - base),
        "traceEvents": out,
        "traceName": "",
    }


def write(results, path):
    data = trace_dict(results)
    data["traceName"] = os.path.abspath(path)
    text = json.dumps(data)
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return path
