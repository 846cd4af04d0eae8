"""Peak memory and time of `gpu-tensor memory-summary` on a large generated snapshot (text,
--json, --html), against the file's size. The target: peak RSS within 2x the file size.

    .venv/bin/python -m profiling.bench_snapshot_memory [--quick] [--mb 200] [--out DIR]

The snapshot is written under /tmp (never the repo): segments of 20 MiB with 64 blocks
each, every block with 4 creation frames (what `_record_memory_history` records), and a
trace event per block, so its shape is that of a real long training run's snapshot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from profiling.harness import Suite

REPO = Path(__file__).resolve().parents[1]


def _frames(i):
    i %= 500  # a training run allocates from a few hundred code sites
    return [
        {
            "filename": f"/home/user/project/model/layer_{i % 97}.py",
            "line": 10 + i % 300,
            "name": f"forward_{i % 13}",
        }
        for _ in range(4)
    ]


def write_snapshot(path: Path, target_bytes: int) -> int:
    """Stream a snapshot of about `target_bytes` to `path`; returns its size."""
    with open(path, "w") as f:
        f.write('{"segments": [')
        seg = 0
        addr = 1 << 40
        events = []
        while f.tell() < target_bytes * 0.8:
            blocks = []
            cursor = addr
            for b in range(64):
                size = 327680
                state = ("active_allocated", "inactive", "active_pending_free")[b % 3]
                blocks.append(
                    {
                        "address": cursor,
                        "size": size,
                        "requested_size": size - 100,
                        "state": state,
                        "frames": _frames(seg * 64 + b),
                    }
                )
                if len(events) < 200_000:
                    events.append(
                        {
                            "action": "alloc",
                            "addr": cursor,
                            "size": size,
                            "stream": 0,
                            "time_us": len(events),
                            "frames": _frames(b),
                        }
                    )
                cursor += size
            f.write(
                ("," if seg else "")
                + json.dumps(
                    {
                        "device": 0,
                        "address": addr,
                        "total_size": cursor - addr,
                        "stream": 0,
                        "segment_type": "large",
                        "blocks": blocks,
                    }
                )
            )
            addr = cursor + (1 << 21)
            seg += 1
        f.write('], "device_traces": [')
        f.write(json.dumps(events))
        f.write("]}")
    return path.stat().st_size


def measure(path: Path, mode: list[str]) -> tuple[float, int]:
    """(seconds, peak RSS bytes) of one CLI run in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork+exec, so a child would
    # report this (large) parent's peak; VmHWM belongs to the child's own address space
    script = (
        "import sys\nfrom gpu_tensor.cli.main import main\n"
        f"code = main(['memory-summary', {str(path)!r}, *{mode!r}])\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "sys.stderr.write(hwm.split()[1])\n"
        "sys.exit(code)\n"
    )
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"run failed: {proc.stderr[-500:]}")
    return dt, int(proc.stderr.strip().splitlines()[-1]) * 1024


def main(argv=None):
    suite = Suite(
        "snapshot_memory",
        argv,
        description=__doc__,
        add_arguments=lambda p: p.add_argument(
            "--mb", type=int, default=None, help="snapshot size (default 200, --quick 20)"
        ),
    )
    mb = suite.args.mb or suite.choose(200, 20)
    path = Path("/tmp/gpu_tensor_bench_snapshot.json")
    html = "/tmp/gpu_tensor_bench_snapshot.html"
    try:
        size = write_snapshot(path, mb * 2**20)
        for name, mode in (("text", []), ("--json", ["--json"]), ("--html", ["--html", html])):
            dt, rss = measure(path, mode)
            suite.record(
                f"memory-summary {name} ({size / 2**20:.0f} MiB)",
                "gpu-tensor CLI",
                seconds=dt,
                peak_rss_bytes=rss,
                rss_over_file=round(rss / size, 2),
                target="<= 2.0",
            )
    finally:
        path.unlink(missing_ok=True)
        Path(html).unlink(missing_ok=True)
    return suite.finish()


if __name__ == "__main__":
    main()
