"""Count the verdicts of the hostile-input catalogue against torch: ok / garbage (we return a
value where torch raises, or a different value) / refused (we raise where torch returns) /
wrong class / hang. Each case runs in a worker thread with a deadline, so a hang is
reported rather than inherited.

    GPU_TENSOR_FALLBACK=1 .venv/bin/python profiling/bad_input_verdicts.py [--device cuda]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys
import threading
import warnings

os.environ.setdefault("GPU_TENSOR_FALLBACK", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.setrecursionlimit(10_000)

from bad_input_cases import CASES  # noqa: E402

import gpu_tensor as gt  # noqa: E402

HANG_S = 10.0


def outcome(m, fn, device):
    """('value', normalised result) or ('raise', exception class) or ('hang', None)."""
    box = {}

    def work():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                box["r"] = ("value", normalise(fn(m, device)))
        except BaseException as exc:  # noqa: BLE001  (the class is the measurement)
            box["r"] = ("raise", type(exc))

    th = threading.Thread(target=work, daemon=True)
    th.start()
    th.join(HANG_S)
    return box.get("r", ("hang", None))


def normalise(r):
    if hasattr(r, "tolist") and hasattr(r, "shape"):
        return ("tensor", tuple(r.shape), str(r.dtype).split(".")[-1], _nan_safe(r.tolist()))
    if isinstance(r, tuple):
        return tuple(normalise(x) for x in r)
    return _nan_safe(r)


def _nan_safe(v):
    if isinstance(v, list):
        return [_nan_safe(x) for x in v]
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return v


def verdict(ours, theirs):
    kind, val = ours
    tkind, tval = theirs
    if kind == "hang":
        return "hang"
    if tkind == "raise":
        if kind == "value":
            return "garbage"
        return (
            "ok"
            if issubclass(val, tval)
            or issubclass(tval, val)
            and (tval.__module__.startswith("torch"))
            else "wrong class"
        )
    if kind == "raise":
        return "refused"
    return "ok" if val == tval else "garbage"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import torch

    counts = collections.Counter()
    rows = []
    for c in CASES:
        if c.no_torch:
            theirs = ("raise", c.expect) if c.expect else ("value", None)
        else:
            theirs = outcome(torch, c.fn, "cpu")
        ours = outcome(gt, c.fn, args.device)
        v = verdict(ours, theirs)
        counts[v] += 1
        if v != "ok":
            rows.append((c.name, v, ours, theirs))
    for name, v, ours, theirs in rows:
        print(f"{v:12s} {name}: ours={ours!s:.100} torch={theirs!s:.100}")
    print(dict(counts), "of", len(CASES))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": args.device, "counts": counts, "cases": len(CASES)}, f)
    os._exit(0)  # a hung worker thread must not keep the interpreter alive


if __name__ == "__main__":
    main()
