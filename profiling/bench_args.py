"""The cost of the argument checks on well-formed calls: factories, views, fill_ and
integer scalars, per call (median of repeats, timeit). Run it on two trees to compare:

    PYTHONPATH=/tmp/old_tree .venv/bin/python profiling/bench_args.py --json old.json
    .venv/bin/python profiling/bench_args.py --json new.json --compare old.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import timeit

import gpu_tensor as gt

x = gt.zeros(16)
i8 = gt.zeros(16, dtype=gt.int64)
CASES = {
    "empty(16)": lambda: gt.empty(16),
    "ones(2, 3)": lambda: gt.ones(2, 3),
    "zeros((4, 4))": lambda: gt.zeros((4, 4)),
    "full((2,), 1.0)": lambda: gt.full((2,), 1.0),
    "arange(10)": lambda: gt.arange(10),
    "linspace(0, 1, 5)": lambda: gt.linspace(0, 1, 5),
    "tensor([1, 2, 3])": lambda: gt.tensor([1, 2, 3]),
    "x.view(4, -1)": lambda: x.view(4, -1),
    "x.reshape((2, 8))": lambda: x.reshape((2, 8)),
    "x.expand(3, 16)": lambda: x.expand(3, 16),
    "x.fill_(1.0)": lambda: x.fill_(1.0),
    "int64 + 3": lambda: i8 + 3,
    "x.var()": lambda: x.var(),
    "x.cumsum(0)": lambda: x.cumsum(0),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--compare")
    args = ap.parse_args()
    out = {}
    for name, fn in CASES.items():
        n = 2000
        runs = timeit.repeat(fn, number=n, repeat=7)
        out[name] = statistics.median(runs) / n * 1e9
    old = json.load(open(args.compare)) if args.compare else {}
    print("| call | ns/call | before | ratio |\n|---|---|---|---|")
    for name, ns in out.items():
        b = old.get(name)
        row = f"| {b:.0f} | {ns / b:.2f} |" if b else "| | |"
        print(f"| {name} | {ns:.0f} {row}")
    if args.json:
        json.dump(out, open(args.json, "w"))


if __name__ == "__main__":
    main()
