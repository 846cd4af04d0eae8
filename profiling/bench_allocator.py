"""Allocator benchmark: warm alloc+free latency, and fragmentation on allocation traces.

    .venv/bin/python -m profiling.bench_allocator [--quick] [--out DIR] [--trace SNAPSHOT]

Latency: `free(malloc(n))` pairs with the pool warm (a hit every time), per size, and the
calls of real training steps (tests/memory/data/training_traces.json), for
the allocator as it is and as it was at BASELINE_COMMIT (its allocator.py read from git
and run over today's helpers, so only the hot path differs), in the same run.
CPU: our allocator over host memory. GPU: ours (direct, and as CuPy sees it through
the installed hook) vs cupy.cuda.MemoryPool vs raw cudaMalloc+cudaFree. Each of our
rows carries `driver_calls`: raw allocations + frees during the timing (goal: 0).

Fragmentation = peak reserved / peak allocated (torch's max_memory_reserved /
max_memory_allocated) while a trace replays. Traces (fixed seeds): a transformer
training loop with a varying sequence length (activations allocated forward and
freed in reverse in backward, persistent weights, grads and Adam state, temporaries);
an RMM-style random trace; the N-then-2N growing-size example from torch's
expandable-segments note; the trace recorded from an MLP training loop written with
gpu_tensor ops (run in a subprocess, emulated cuda without a GPU); any snapshot given with --trace (its alloc/free_requested
entries; torch's _dump_snapshot pickles work too); and the generated families of
alloc_traces.py (transformer training, KV-cache inference, a prefetching data loader),
from several seeds. Policies: ours (the default: expandable segments that restitch free
pages, memory/expandable.py), ours with cudaMalloc segments (the default before; with
peak_guard on too), torch's policy run by the same code (fixed segments; and torch's
expandable segments, which map pages at the end and never restitch); on a GPU also torch
itself and CuPy's MemoryPool replaying the same trace. Each row carries driver_calls: raw
allocations + frees (maps/unmaps), steady_frees: frees after the first 10% of the trace
(each a device sync on a GPU), and restitched_mib: pages mapped again elsewhere (no sync).
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import pickle
import random
import subprocess
import time
from pathlib import Path

from gpu_tensor.memory import live
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.raw import HostRawSource, RawOutOfMemory
from profiling import alloc_traces
from profiling.harness import Suite

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
BASELINE_COMMIT = "6bb6b18"  # the allocator before parked frees (memory/reuse.py)
TORCH_POLICY = (
    "release_on_miss:False,adaptive_segments:False,peak_guard:False,expandable_segments:False"
)
POLICIES = {  # impl name -> (GPU_TENSOR_ALLOC_CONF, whether the source may restitch pages)
    # the default: expandable segments with restitching (the replay source maps pages)
    "gpu_tensor": ("", True),
    "gpu_tensor cudaMalloc segments": ("expandable_segments:False", False),
    "gpu_tensor peak_guard": ("peak_guard:True,expandable_segments:False", False),
    "torch policy (our code)": (TORCH_POLICY, False),
    # torch's expandable segments: pages mapped at the end only, never restitched
    "torch policy expandable_segments": (
        TORCH_POLICY.replace("expandable_segments:False", "expandable_segments:True"),
        False,
    ),
}


class AddressSpace:
    """Raw source handing out fresh addresses and no memory: replays measure policy only."""

    def __init__(self, capacity: int = 1 << 46):
        self.capacity, self.used, self._next, self._sizes = capacity, 0, 1 << 30, {}

    def alloc(self, nbytes):
        if self.used + nbytes > self.capacity:
            raise RawOutOfMemory("address space full")
        ptr, self._next = self._next, self._next + nbytes + 2 * MiB
        self._sizes[ptr] = nbytes
        self.used += nbytes
        return ptr

    def free(self, ptr):
        self.used -= self._sizes.pop(ptr)

    def mem_get_info(self):
        return self.capacity - self.used, self.capacity

    # expandable segments: address ranges, pages counted when mapped
    def reserve(self, nbytes):
        ptr, self._next = self._next, self._next + nbytes + 2 * MiB
        return ptr

    def map(self, ptr, nbytes, handle_size=None):
        if self.used + nbytes > self.capacity:
            raise RawOutOfMemory("address space full")
        self.used += nbytes

    def unmap(self, ptr, nbytes):  # only the replays' empty_cache unmaps, after restitching none
        self.used -= nbytes

    def unreserve(self, ptr):
        pass


class StitchingAddressSpace(AddressSpace):
    """An AddressSpace that can also map mapped pages again elsewhere (memory/expandable.py
    restitches free pages with it): no new memory, counted in `restitched` bytes."""

    restitched = 0

    def alias(self, dst, src, nbytes):
        self.restitched += nbytes


# ---------------------------------------------------------------------------------- traces
class _Trace:
    def __init__(self):
        self.ops, self._ids, self.sizes = [], itertools.count(), {}

    def alloc(self, size, stream=0):
        key = next(self._ids)
        self.ops.append(("a", key, int(size), stream))
        self.sizes[key] = int(size)
        return key

    def free(self, key):
        self.ops.append(("f", key, 0, 0))


def transformer_trace(steps, layers=8, hidden=1024, batch=4, heads=16, vocab=8192, seed=0):
    """A training loop whose sequence length changes every step (256..2048 tokens)."""
    rng = random.Random(seed)
    t = _Trace()
    f32 = 4
    params = [t.alloc(12 * hidden * hidden * f32) for _ in range(layers)]
    params.append(t.alloc(vocab * hidden * f32))
    sizes = {p: 0 for p in params}
    sizes.update({p: 12 * hidden * hidden * f32 for p in params[:-1]})
    sizes[params[-1]] = vocab * hidden * f32
    grads = None
    for _ in range(steps):
        tokens = batch * rng.randrange(256, 2049, 128)

        def act(width, tokens=tokens):
            return t.alloc(tokens * width * f32)

        saved = []
        x = act(hidden)
        for _layer in range(layers):
            layer = [act(hidden), act(3 * hidden)]  # layernorm out, qkv
            work = t.alloc(batch * heads * tokens // batch * 64 * f32)  # attention workspace
            layer += [t.alloc(tokens * heads // batch * f32 * batch), act(hidden)]  # lse, attn
            t.free(work)
            layer += [act(hidden), act(4 * hidden), act(4 * hidden), act(hidden)]  # ln, mlp, out
            layer.append(t.alloc(tokens * 2 * f32))  # layernorm statistics
            saved.append(layer)
        logits = act(vocab)
        loss = t.alloc(f32)
        if grads is None:  # first step: grads and Adam state persist from here on
            grads = [t.alloc(sizes[p]) for p in params]
            for _moment in ("exp_avg", "exp_avg_sq"):
                for p in params:
                    t.alloc(sizes[p])
        grad_x = act(vocab)
        t.free(logits)
        t.free(loss)
        for layer in reversed(saved):  # backward: gradients of each activation, reverse order
            for a in reversed(layer):
                g = t.alloc(t.sizes[a])
                t.free(a)
                t.free(grad_x)
                grad_x = g
        t.free(grad_x)
        t.free(x)
        for p in params:  # optimizer step: one temporary per parameter
            t.free(t.alloc(sizes[p]))
    return t.ops


def random_trace(events, target_live=2 * GiB, seed=1):
    """RMM random_allocations style: log-uniform 256 B..256 MiB, random free order."""
    rng = random.Random(seed)
    t, live_keys, live_bytes = _Trace(), [], 0
    for _ in range(events):
        if live_keys and (live_bytes > target_live or rng.random() < 0.45):
            key = live_keys.pop(rng.randrange(len(live_keys)))
            live_bytes -= t.sizes[key]
            t.free(key)
        else:
            size = int(math.exp(rng.uniform(math.log(256), math.log(256 * MiB))))
            live_keys.append(t.alloc(size))
            live_bytes += size
    for key in live_keys:
        t.free(key)
    return t.ops


def growing_trace():
    """torch's expandable-segments example: 8 x 16 MiB, free them, then 4 x 32 MiB."""
    t = _Trace()
    first = [t.alloc(16 * MiB) for _ in range(8)]
    for k in first:
        t.free(k)
    for k in [t.alloc(32 * MiB) for _ in range(4)]:
        t.free(k)
    return t.ops


# An MLP training-like loop written with gpu_tensor ops, batch size varying per step; run in
# a subprocess on the cuda device (emulated when there is no GPU) with history recording on.
_WORKLOAD = """
import random, sys
import gpu_tensor.creation as c
import gpu_tensor.cuda.memory as m
m._record_memory_history("all", context=None)
rng = random.Random(0)
width, layers = 512, 6
weights = [c.randn((width, width), device="cuda") for _ in range(layers)]
for step in range(int(sys.argv[2])):
    x = c.randn((rng.randrange(64, 1025, 64), width), device="cuda")
    saved = []
    for w in weights:  # forward: keep what backward needs
        saved.append(x)
        x = (x @ w).relu()
    g = x * 2.0
    for w, a in zip(reversed(weights), reversed(saved)):  # backward
        gw = a.transpose(0, 1) @ g
        g = (g @ w.transpose(0, 1)) * (a > 0)
        w -= gw * 1e-3
        del gw
    del saved, x, g
m._dump_snapshot(sys.argv[1])
"""


def workload_trace(steps):
    """Record the trace of _WORKLOAD; (ops, None) or (None, reason it could not run)."""
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "workload.pickle")
        env = dict(os.environ, GPU_TENSOR_FALLBACK="1")
        proc = subprocess.run(
            [sys.executable, "-c", _WORKLOAD, path, str(steps)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            return None, f"workload failed: {proc.stderr.strip().splitlines()[-1:]}"
        return snapshot_trace(path), None


def snapshot_trace(path):
    """alloc / free_requested entries of a saved snapshot (ours or torch's), as a trace."""
    with open(path, "rb") as f:
        snap = pickle.load(f)
    t, by_addr = _Trace(), {}
    for device_trace in snap.get("device_traces", []):
        for e in device_trace:
            if e["action"] == "alloc":
                by_addr[e["addr"]] = t.alloc(e["size"], e.get("stream", 0))
            elif e["action"] == "free_requested" and e["addr"] in by_addr:
                t.free(by_addr.pop(e["addr"]))
    return t.ops


# ---------------------------------------------------------------------------------- replays
def replay_ours(ops, conf, raw=None, restitch=True):
    live.set_enabled(False)  # policy and bookkeeping only; site capture is timed above
    raw = raw or (StitchingAddressSpace() if restitch else AddressSpace())
    a = CachingAllocator(raw, 0, config=parse_alloc_conf(conf), kind="bench")
    blocks = {}
    warm, warm_frees = len(ops) // 10, 0  # the first 10% of a trace is its warm-up
    t0 = time.perf_counter()
    for i, (op, key, size, stream) in enumerate(ops):
        if i == warm:
            warm_frees = a.stats()["num_device_free"]
        if op == "a":
            blocks[key] = a.malloc(size, stream)
        else:
            a.free(blocks.pop(key))
    seconds = (time.perf_counter() - t0) / len(ops)
    s = a.stats()
    a.empty_cache()
    live.set_enabled(None)
    return seconds, {
        "peak_reserved": s["reserved_bytes.all.peak"],
        "peak_allocated": s["allocated_bytes.all.peak"],
        "driver_calls": s["num_device_alloc"] + s["num_device_free"],
        # each a cudaFree, which synchronises the device: 0 is the goal once warm
        "steady_frees": s["num_device_free"] - warm_frees,
        "restitched_mib": getattr(raw, "restitched", 0) / MiB,
    }


def replay_torch(torch, ops):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    tensors = {}
    t0 = time.perf_counter()
    for op, key, size, _stream in ops:
        if op == "a":
            tensors[key] = torch.empty(size, dtype=torch.uint8, device="cuda")
        else:
            del tensors[key]
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - t0) / len(ops)
    s = torch.cuda.memory_stats()
    torch.cuda.empty_cache()
    return seconds, {
        "peak_reserved": s["reserved_bytes.all.peak"],
        "peak_allocated": s["allocated_bytes.all.peak"],
        "driver_calls": s.get("num_device_alloc", 0) + s.get("num_device_free", 0),
    }


def replay_cupy_pool(cp, ops):
    pool = cp.cuda.MemoryPool()
    ptrs, peak_total, peak_used = {}, 0, 0
    t0 = time.perf_counter()
    for op, key, size, _stream in ops:
        if op == "a":
            ptrs[key] = pool.malloc(size)
            peak_total = max(peak_total, pool.total_bytes())
            peak_used = max(peak_used, pool.used_bytes())
        else:
            del ptrs[key]
    seconds = (time.perf_counter() - t0) / len(ops)
    pool.free_all_blocks()
    return seconds, {"peak_reserved": peak_total, "peak_allocated": peak_used}


def _record_replay(suite, case, impl, result):
    seconds, r = result
    suite.record(
        case,
        impl,
        seconds=seconds,
        fragmentation=round(r["peak_reserved"] / r["peak_allocated"], 4),
        peak_reserved_mib=r["peak_reserved"] / MiB,
        peak_allocated_mib=r["peak_allocated"] / MiB,
        driver_calls=r.get("driver_calls"),
        steady_frees=r.get("steady_frees"),
        restitched_mib=r.get("restitched_mib"),
        unit="s/op",
    )


def fragmentation(suite, traces):
    for name, ops in traces.items():
        case = f"fragmentation {name} ({len(ops)} ops)"
        for impl, (conf, restitch) in POLICIES.items():
            _record_replay(suite, case, impl, replay_ours(ops, conf, restitch=restitch))
        if suite.has_torch_cuda:
            _record_replay(suite, case, "torch", replay_torch(suite.torch, ops))
        else:
            suite.skip(case, "torch", suite.peer_reason("torch_cuda"))
        if suite.has_cupy_gpu:
            _record_replay(suite, case, "cupy MemoryPool", replay_cupy_pool(suite.cupy, ops))
        else:
            suite.skip(case, "cupy MemoryPool", suite.peer_reason("cupy_gpu"))


# ---------------------------------------------------------------------------------- latency
def _ours_pair(suite, case, a, n, impl, fn=None):
    before = a.stats()
    fn = fn or (lambda: a.free(a.malloc(n)))
    fn()  # warm: the segment exists from here on
    before = a.stats()
    t = suite.time(fn, sync="cpu", number=None)
    after = a.stats()
    calls = sum(after[k] - before[k] for k in ("num_device_alloc", "num_device_free"))
    suite.record(case, impl, seconds=t, driver_calls=calls)


def baseline_allocator():
    """(CachingAllocator class as of BASELINE_COMMIT, None) or (None, why not)."""
    root = Path(__file__).resolve().parent.parent
    try:
        proc = subprocess.run(
            ["git", "show", f"{BASELINE_COMMIT}:gpu_tensor/memory/allocator.py"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except OSError as exc:
        return None, f"git not available: {exc}"
    if proc.returncode != 0:
        return None, f"git show {BASELINE_COMMIT} failed: {proc.stderr.strip()}"
    spec = importlib.util.spec_from_loader(
        f"gpu_tensor.memory._allocator_{BASELINE_COMMIT}", loader=None
    )
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "gpu_tensor.memory"  # its relative imports find today's helpers
    exec(
        compile(proc.stdout, f"{BASELINE_COMMIT}:gpu_tensor/memory/allocator.py", "exec"),
        module.__dict__,
    )
    return module.CachingAllocator, None


def latency(suite, sizes):
    before_class, before_reason = baseline_allocator()
    if suite.has_cupy_gpu:
        from gpu_tensor.backends import cuda_memory

        cp = suite.cupy
        ours = cuda_memory.create_allocator(0, parse_alloc_conf(""))
        pool = cp.cuda.MemoryPool()
        stream = cp.cuda.get_current_stream().ptr
    else:
        ours = CachingAllocator(
            HostRawSource(8 * GiB), 0, config=parse_alloc_conf(""), kind="emulated"
        )
        stream = 0
    before = before_class and before_class(
        ours.raw, 0, event_factory=ours._event_factory, config=parse_alloc_conf(""), kind=ours.kind
    )
    before_impl = f"gpu_tensor allocator before ({BASELINE_COMMIT})"
    for n in sizes:
        case = f"warm alloc+free {_fmt(n)}"
        live.set_enabled(False)
        _ours_pair(
            suite,
            case,
            ours,
            n,
            "gpu_tensor allocator",
            lambda n=n: ours.free(ours.malloc(n, stream)),
        )
        if before is not None:
            _ours_pair(
                suite,
                case,
                before,
                n,
                before_impl,
                lambda n=n: before.free(before.malloc(n, stream)),
            )
        else:
            suite.skip(case, before_impl, before_reason)
        live.set_enabled(True)
        _ours_pair(
            suite,
            case,
            ours,
            n,
            "gpu_tensor allocator + creation site",
            lambda n=n: ours.free(ours.malloc(n, stream)),
        )
        if before is not None:
            _ours_pair(
                suite,
                case,
                before,
                n,
                before_impl + " + creation site",
                lambda n=n: before.free(before.malloc(n, stream)),
            )
        live.set_enabled(None)
        if suite.has_cupy_gpu:
            _ours_pair(
                suite,
                case,
                ours,
                n,
                "gpu_tensor via cupy MemoryPointer hook",
                lambda n=n: cuda_memory.memory_pointer(ours, n, stream, 0),
            )
            pool.malloc(n)
            suite.record(
                case,
                "cupy MemoryPool",
                seconds=suite.time(lambda n=n: pool.malloc(n), sync="cpu", number=None),
            )
            suite.record(
                case,
                "raw cudaMalloc+cudaFree",
                seconds=suite.time(
                    lambda n=n, rt=cp.cuda.runtime: rt.free(rt.malloc(n)), sync="cpu", repeat=10
                ),
            )
        else:
            reason = suite.peer_reason("cupy_gpu")
            suite.skip(case, "cupy MemoryPool", reason)
            suite.skip(case, "raw cudaMalloc+cudaFree", reason)
    live.set_enabled(None)


TRAINING_TRACES = Path(__file__).resolve().parent.parent / "tests/memory/data/training_traces.json"


def training_latency(suite):
    """Time per call replaying the malloc/free calls of bench_train's models on emulated
    cuda (tests/memory/data/training_traces.json: a malloc is its byte count, a free
    -(1 + the index of the malloc it frees)), the allocator warm (each replay frees what
    it holds at the end, as a training step does), creation sites off: the split, merge
    and stats paths real training takes, where the warm pair above takes the parked one."""
    import json

    before_class, before_reason = baseline_allocator()
    before_impl = f"gpu_tensor allocator before ({BASELINE_COMMIT})"
    traces = json.loads(TRAINING_TRACES.read_text())
    live.set_enabled(False)
    try:
        for model, ops in sorted(traces.items()):
            case = f"training trace {model}: {len(ops)} calls"
            for impl, cls in (
                ("gpu_tensor allocator", CachingAllocator),
                (before_impl, before_class),
            ):
                if cls is None:
                    suite.skip(case, impl, before_reason)
                    continue
                a = cls(HostRawSource(8 * GiB), 0, config=parse_alloc_conf(""), kind="emulated")

                def replay(a=a, ops=ops):
                    held, n = {}, 0
                    for op in ops:
                        if op >= 0:
                            held[n] = a.malloc(op)
                            n += 1
                        else:
                            a.free(held.pop(-1 - op))
                    for block in held.values():
                        a.free(block)

                replay()  # warm: the segments exist from here on
                t = suite.time(replay, sync="cpu", number=None)
                suite.record(case, impl, seconds=t, ns_per_call=round(t.median / len(ops) * 1e9))
    finally:
        live.set_enabled(None)


def _fmt(n):
    for unit, div in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= div:
            return f"{n // div} {unit}"
    return f"{n} B"


def main(argv=None):
    suite = Suite(
        "allocator",
        argv,
        description=__doc__.splitlines()[0],
        add_arguments=lambda p: p.add_argument(
            "--trace", action="append", default=[], help="snapshot pickle to replay (repeatable)"
        ),
    )
    sizes = suite.choose(
        [512, 4 * KiB, 64 * KiB, MiB, 16 * MiB, 256 * MiB, 2 * GiB], [512, 64 * KiB, 16 * MiB]
    )
    latency(suite, sizes)
    training_latency(suite)
    traces = {
        "transformer": transformer_trace(steps=suite.choose(40, 12)),
        "random": random_trace(suite.choose(20000, 4000)),
        "growing 8x16MiB then 4x32MiB": growing_trace(),
    }
    ops, reason = workload_trace(suite.choose(30, 8))
    if ops:
        traces["recorded gt MLP workload"] = ops
    else:
        suite.skip("fragmentation recorded gt MLP workload", "gpu_tensor", reason)
    for path in suite.args.trace:
        traces[f"snapshot {path}"] = snapshot_trace(path)
    for family, make in alloc_traces.FAMILIES.items():  # generated: not tuned on
        for seed in suite.choose(
            [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 24, 25, 26, 27], [0, 1]
        ):  # 20-27: a second set, as in the allocator note
            traces[f"{family} seed {seed}"] = make(seed)
    fragmentation(suite, traces)
    return suite.finish()


if __name__ == "__main__":
    main()
