"""Profiler overhead per op: gt.profiler on vs off, beside torch.profiler where installed.

    .venv/bin/python -m profiling.bench_profiler [--quick] [--out DIR]

Each case is one tiny op (4 elements: pure overhead) in a calibrated loop, timed with the
profiler off, then inside a recording profile (CPU only; with profile_memory and
record_shapes; on the emulated cuda device, whose ops also record a timing event pair).
`added_us` is on minus off, the cost the profiler adds per op (goal, issue 25: <= 5 us on
cpu; torch 2.13 adds about 10 us). Also `record_function` entered and left outside any
profile (torch's costs ~6 us). Off and on are interleaved per case, the better of 3 rounds.
"""

from __future__ import annotations

import os

from profiling.harness import Suite


def _cases(lib, device="cpu"):
    a = lib.ones(4, device=device)
    b = lib.ones(4, device=device)
    return {
        "a.add(1)": lambda: a.add(1),
        "a * b": lambda: a * b,
        "a.view(2, 2)": lambda: a.view(2, 2),
        "a.sum()": lambda: a.sum(),
    }


def _time(suite, fn):
    return suite.time(fn, sync="cpu", warmup=20, repeat=suite.choose(15, 7), number=None)


def _measure(suite, lib, label, device="cpu", configs=None):
    prof_mod = lib.profiler
    acts = [prof_mod.ProfilerActivity.CPU]
    if device == "cuda":
        acts.append(prof_mod.ProfilerActivity.CUDA)
    configs = configs or {"on": {}}
    for case, fn in _cases(lib, device).items():
        best = {}
        for _ in range(suite.choose(3, 2)):
            off = _time(suite, fn)
            best["off"] = min(best.get("off", off), off, key=lambda t: t.median)
            for name, kw in configs.items():
                with prof_mod.profile(activities=acts, **kw):
                    on = _time(suite, fn)
                best[name] = min(best.get(name, on), on, key=lambda t: t.median)
        suite.record(f"{case} [4]", f"{label} profiler off", seconds=best["off"])
        for name in configs:
            added = (best[name].median - best["off"].median) * 1e6
            suite.record(
                f"{case} [4]",
                f"{label} profiler {name}",
                seconds=best[name],
                added_us=round(added, 2),
            )


def _record_function(suite, lib, label):
    rf = lib.profiler.record_function

    def enter_exit():
        with rf("label"):
            pass

    suite.record("record_function outside a profile", label, seconds=_time(suite, enter_exit))


def main(argv=None):
    suite = Suite("profiler", argv, description=__doc__)
    import gpu_tensor as gt

    configs = {"on": {}, "on, memory+shapes": {"profile_memory": True, "record_shapes": True}}
    _measure(suite, gt, "gpu_tensor (cpu)", configs=configs)
    _record_function(suite, gt, "gpu_tensor")
    os.environ.setdefault("GPU_TENSOR_FALLBACK", "1")
    if gt.cuda.is_available():
        label = (
            "gpu_tensor (emulated cuda)" if gt.device.cuda_is_emulated() else "gpu_tensor (cuda)"
        )
        _measure(suite, gt, label, device="cuda")
    if suite.has_torch:
        torch = suite.torch
        _measure(suite, torch, "torch (cpu)", configs=configs)
        _record_function(suite, torch, "torch")
    else:
        suite.skip("all cases", "torch", suite.peer_reason("torch"))
    return suite.finish()


if __name__ == "__main__":
    main()
