"""profiling/harness.py: clocks, statistics, records, results file; the GPU path through a
fake cupy (CPU counterpart of the real-GPU test at the end)."""

from __future__ import annotations

import json
import math
import time
import types

import numpy as np
import pytest

from profiling import harness
from profiling.harness import NOISE_THRESHOLD, Suite, Timing
from profiling.machine import Peer, probe_cupy_gpu


def make_suite(tmp_path, *args, name="demo"):
    return Suite(name, ["--out", str(tmp_path), *args])


# -- statistics --------------------------------------------------------------------------------
def test_timing_percentiles_match_numpy():
    rng = np.random.default_rng(0)
    xs = list(rng.uniform(1.0, 2.0, size=37))
    t = Timing.from_samples(xs)
    assert t.median == pytest.approx(np.percentile(xs, 50))
    assert t.p10 == pytest.approx(np.percentile(xs, 10))
    assert t.p90 == pytest.approx(np.percentile(xs, 90))
    assert (t.n, t.min, t.mean) == (37, min(xs), pytest.approx(np.mean(xs)))


def test_timing_flags_noise_above_threshold():
    steady = Timing.from_samples([1.0] * 9 + [1.05])
    noisy = Timing.from_samples([1.0, 1.0, 1.0, 1.5, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert not steady.noisy and steady.spread <= NOISE_THRESHOLD
    assert noisy.noisy and noisy.spread > NOISE_THRESHOLD
    with pytest.raises(ValueError):
        Timing.from_samples([])


def test_timing_positional_contract():
    t = Timing(2.0, 1.0, 3.0, 5, False)  # CONTRACTS: Timing(median, p10, p90, n, noisy)
    assert (t.median, t.p10, t.p90, t.n, t.noisy) == (2.0, 1.0, 3.0, 5, False)
    assert t.spread == pytest.approx(1.0) and t.as_dict()["spread"] == pytest.approx(1.0)


# -- argv, peers, budget -----------------------------------------------------------------------
def test_argv_parsing_and_defaults(tmp_path):
    s = make_suite(tmp_path, "--quick", "--budget", "12")
    assert s.quick and s.budget_s == 12 and s.out_dir == tmp_path
    assert s.choose(full=1 << 30, quick=1 << 20) == 1 << 20
    assert s.device in ("cpu", "cuda")
    full = Suite("demo", [])
    assert not full.quick and full.out_dir == harness.RESULTS_DIR
    assert Suite("demo", ["--quick"]).out_dir == harness.QUICK_RESULTS_DIR
    with pytest.raises(SystemExit):
        Suite("demo", ["--bogus"])
    with pytest.raises(ValueError, match="lowercase"):
        Suite("Bad Name", [])


def test_benchmark_options_can_be_added(tmp_path):
    def add(parser):
        parser.add_argument("--sizes", default="1,2")

    s = Suite("demo", ["--out", str(tmp_path), "--sizes", "4"], add_arguments=add)
    assert s.args.sizes == "4" and s.args.out == tmp_path


def test_device_cpu_flag_hides_gpu(tmp_path):
    s = make_suite(tmp_path, "--device", "cpu")
    assert s.device == "cpu" and not s.has_cupy_gpu and s.cupy is None
    assert s.peer_reason("cupy_gpu")
    assert isinstance(s.has_torch, bool) and s.peer_reason("torch")
    with pytest.raises(KeyError):
        s.peer_reason("jax")


def test_time_counts_calls_and_respects_max_time(tmp_path):
    s = make_suite(tmp_path, "--device", "cpu")
    calls = []
    t = s.time(lambda: calls.append(1), sync="cpu", warmup=2, repeat=7, number=3)
    assert len(calls) == 2 + 7 * 3 and t.n == 7 and t.number == 3 and t.clock == "perf_counter"
    slow = s.time(lambda: time.sleep(0.01), sync="cuda", warmup=0, repeat=100, max_time=0.0)
    assert slow.n == harness.MIN_REPEATS and slow.median >= 0.009
    with pytest.raises(ValueError, match="sync"):
        s.time(lambda: None, sync="gpu")


def test_time_calibrates_number_for_tiny_work(tmp_path):
    s = make_suite(tmp_path, "--device", "cpu")
    t = s.time(lambda: None, sync="cpu", warmup=1, repeat=5, number=None)
    assert t.number > 1 and t.median * t.number >= harness.CALIBRATE_TARGET_S / 4


def test_over_budget_shrinks_repeats_and_warns(tmp_path):
    s = make_suite(tmp_path, "--device", "cpu", "--budget", "0")
    assert s.over_budget and s.time_left() <= 0
    calls = []
    t = s.time(lambda: calls.append(1), sync="cpu", warmup=5, repeat=50)
    assert t.n == harness.MIN_REPEATS and len(calls) == 1 + harness.MIN_REPEATS
    assert any("budget" in w for w in s.warnings)
    assert math.isinf(make_suite(tmp_path).time_left())


# -- records and results -----------------------------------------------------------------------
def test_record_computes_bandwidth_and_ceiling_share(tmp_path):
    s = make_suite(tmp_path, "--device", "cpu")
    t = Timing.from_samples([0.5, 0.5, 0.5])
    row = s.record(
        "copy",
        "gpu_tensor",
        seconds=t,
        nbytes=2_000_000_000,
        ceiling=8.0,
        dtype=np.dtype("float32"),
        shape=(2, 3),
        k=np.int64(4),
    )
    assert row["gbps"] == pytest.approx(4.0) and row["pct_of_ceiling"] == pytest.approx(0.5)
    assert (row["dtype"], row["shape"], row["k"]) == ("float32", [2, 3], 4)
    assert row["seconds"] == 0.5 and row["n"] == 3 and row["noisy"] is False
    plain = s.record("copy", "numpy", seconds=1.0, nbytes=1e9)
    assert plain["gbps"] == pytest.approx(1.0) and "p10" not in plain
    gpu_only = s.record("copy", "cupy", seconds=1.0, nbytes=1e9, ceiling="d2d")
    assert "pct_of_ceiling" not in gpu_only  # no GPU: no d2d ceiling, no share
    skipped = s.skip("copy", "torch", "torch is not installed")
    assert skipped["skipped"] == "torch is not installed" and "seconds" not in skipped
    with pytest.raises(ValueError, match="gbps"):
        s.record("copy", "x", seconds=1.0, gbps=3)


def test_noisy_record_warns(tmp_path):
    s = make_suite(tmp_path, "--device", "cpu")
    s.record("c", "i", seconds=Timing.from_samples([1.0, 2.0, 3.0, 1.0]))
    assert any("noisy" in w for w in s.warnings)


def test_results_file_is_rewritten_per_row_and_finished(tmp_path, capsys):
    s = make_suite(tmp_path, "--device", "cpu", "--quick")
    assert s.path.parent == tmp_path
    assert s.path.name.startswith("demo-") and s.path.name.endswith("-cpu.json")
    s.record("a", "gpu_tensor", seconds=1e-3)
    partial = json.loads(s.path.read_text())
    assert partial["complete"] is False and len(partial["rows"]) == 1
    s.record("a", "numpy", seconds=2e-3)
    result = s.finish()
    saved = json.loads(s.path.read_text())
    assert saved["complete"] is True and saved == json.loads(json.dumps(result, default=str))
    assert saved["benchmark"] == "demo" and saved["quick"] is True and saved["device"] == "cpu"
    for key in ("date", "cpu", "numpy", "python", "cupy", "torch", "gpu"):
        assert key in saved["machine"]
    assert set(saved["peers"]) == {"cupy_gpu", "torch", "torch_cuda"}
    out = capsys.readouterr().out
    assert "| case | impl | median" in out and "| a | gpu_tensor | 1.000 ms" in out
    assert str(s.path) in out


def test_ceilings_on_cpu(tmp_path):
    s = make_suite(tmp_path, "--device", "cpu", "--quick")
    assert s.ceiling("d2d") is None and s.ceiling("h2d") is None and s.ceiling("d2h") is None
    host = s.ceiling("host")
    assert host > 0 and s.ceiling("host") == host  # measured once per run
    rec = json.loads(s.path.read_text())["ceilings"]
    assert rec["d2d"] is None and rec["host"]["convention"] == "read+write"
    assert rec["host"]["bytes_counted"] == 2 * rec["host"]["buffer_bytes"]
    with pytest.raises(ValueError, match="unknown ceiling"):
        s.ceiling("nvlink")


# -- the GPU path, through a fake cupy ---------------------------------------------------------
class FakeCupy:
    """Just enough of cupy for the harness: events, streams, raw memory, properties."""

    __version__ = "0.0-fake"

    def __init__(self, copy_seconds=1e-3):
        self.copy_seconds = copy_seconds
        self.live, self.calls, self.synced = set(), [], 0
        fake = self
        rt = types.SimpleNamespace()

        def malloc(n):
            ptr = 0x1000 + len(fake.calls) * 0x100000
            fake.live.add(ptr)
            fake.calls.append(("malloc", n))
            return ptr

        rt.malloc = malloc
        rt.hostAlloc = lambda n, flags: malloc(n)
        rt.free = rt.freeHost = lambda p: fake.live.remove(p)
        rt.memset = lambda p, v, n: None
        rt.deviceSynchronize = lambda: None
        rt.memcpyAsync = lambda d, s, n, kind, stream: (
            fake.calls.append(("memcpy", kind, n)),
            time.sleep(fake.copy_seconds),
        )
        rt.getDeviceCount = lambda: 1
        rt.getDeviceProperties = lambda i: {
            "name": b"Fake GPU X",
            "totalGlobalMem": 1 << 30,
            "multiProcessorCount": 2,
            "major": 9,
            "minor": 0,
        }
        rt.runtimeGetVersion = lambda: 13000
        rt.driverGetVersion = lambda: 13010

        class Event:
            def record(self, stream=None):
                self.t = time.perf_counter()

            def synchronize(self):
                fake.synced += 1

        class Device:
            def synchronize(self):
                fake.synced += 1

        self.cuda = types.SimpleNamespace(
            runtime=rt,
            Event=Event,
            Device=Device,
            get_current_stream=lambda: types.SimpleNamespace(ptr=0),
            get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3,
        )


@pytest.fixture
def fake_gpu(monkeypatch):
    cp = FakeCupy()
    monkeypatch.setattr(
        harness,
        "probe_cupy_gpu",
        lambda: (Peer("cupy", True, "1 CUDA device(s)", cp.__version__), cp),
    )
    return cp


def test_fake_gpu_uses_events_and_raw_buffers(tmp_path, fake_gpu):
    s = make_suite(tmp_path, "--quick")
    assert s.device == "cuda" and s.has_cupy_gpu and s.path.name.endswith("-fake-gpu-x.json")
    t = s.time(lambda: time.sleep(2e-3), sync="cuda", warmup=1, repeat=4)
    assert t.clock == "cuda-event" and t.median >= 2e-3 and t.wall_median >= t.median * 0.5
    assert s.time(lambda: None, sync="cpu").clock == "perf_counter"
    d2d, h2d = s.ceiling("d2d"), s.ceiling("h2d")
    nbytes = harness._ceilings.QUICK_BYTES["d2d"]
    copy_s = {k: s.result()["ceilings"][k]["timing"]["median"] for k in ("d2d", "h2d")}
    assert min(copy_s.values()) >= 1e-3  # each fake copy sleeps 1 ms inside the events
    assert d2d == pytest.approx(2 * nbytes / copy_s["d2d"] / 1e9)  # read + write
    assert h2d == pytest.approx(nbytes / copy_s["h2d"] / 1e9)  # bytes moved once
    kinds = {c[1] for c in fake_gpu.calls if c[0] == "memcpy"}
    assert kinds == {3, 1} and not fake_gpu.live  # every raw buffer freed
    row = s.record("copy", "gpu_tensor", seconds=t, nbytes=nbytes, ceiling="d2d")
    assert row["ceiling_kind"] == "d2d" and row["pct_of_ceiling"] > 0
    result = s.finish()
    gpu = result["machine"]["gpu"]
    assert gpu["name"] == "Fake GPU X" and gpu["cuda_runtime"] == "13.0"
    assert result["ceilings"]["h2d"]["convention"] == "bytes moved once"


# -- the real thing ----------------------------------------------------------------------------
_PEER, _ = probe_cupy_gpu()


@pytest.mark.cuda
@pytest.mark.skipif(not _PEER.available, reason=f"needs a real CUDA GPU: {_PEER.reason}")
def test_real_gpu_ceilings_and_event_clock(tmp_path):
    s = make_suite(tmp_path, "--quick")
    cp = s.cupy
    x = cp.ones(1 << 24, dtype=cp.float32)
    t = s.time(lambda: x.copy(), sync="cuda", repeat=5)
    assert s.device == "cuda" and t.clock == "cuda-event" and t.median > 0
    assert s.ceiling("d2d") > 100 and s.ceiling("h2d") > 1 and s.ceiling("d2h") > 1
    assert s.finish()["machine"]["gpu"]["name"]
