"""profiling/bench_host_cost.py measures the real CudaBackend over the simulator (a null
device) in a worker process and writes every row it promises."""

from __future__ import annotations

import json

from profiling import bench_host_cost


def test_quick_run_counts_calls_and_launches_beside_numpy(tmp_path, capsys):
    bench_host_cost.main(
        [
            "--quick",
            "--device",
            "cpu",
            "--cases",
            "x + y,x + int tensor",
            "--calls",
            "20",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert "| op (32×32, warm) |" in out and "| x + int tensor |" in out
    (path,) = tmp_path.glob("host_cost-*.json")
    rows = json.loads(path.read_text())["rows"]
    ours = {r["case"]: r for r in rows if r["impl"] == "gpu_tensor (cuda, sim)"}
    assert set(ours) == {"x + y", "x + int tensor"}, rows
    for r in ours.values():  # the simulator's counts are exact; the times only positive
        assert r["launches"] == 1 and 0 < r["calls"] <= 20, r
        # own time: wall time less the simulator's, measured at its boundary
        assert 0 < r["own_us"] < r["total_us"] and r["crossings"] > 0, r
        # the result's ndarray, MemoryPointer and UnownedMemory: made and dropped by us, their
        # life outside the clock is the simulator's (BoundaryTimer.objects_ns)
        assert r["objects"] == 3 and r["objects_us"] > 0, r
        assert r["bytecodes"] > 10 * r["calls"], r  # exact: our instructions in one op
    assert all(r["seconds"] > 0 for r in rows if r["impl"] == "numpy")
    # torch rows are timed when torch is importable here, else skipped with the reason
    torch_rows = [r for r in rows if r["impl"].startswith("torch")]
    assert len(torch_rows) == 2
    assert all("seconds" in r or "torch" in r["skipped"] for r in torch_rows)


def test_a_call_counter_counts_only_our_frames():
    calls = bench_host_cost.count_calls(lambda: json.dumps({"a": [1, 2]}), lambda f: True)
    assert calls > 0
    assert bench_host_cost.count_calls(lambda: sum([1, 2]), lambda f: "gpu_tensor" in f) == 0


def test_a_bytecode_counter_counts_only_our_frames():
    n = bench_host_cost.count_bytecodes(lambda: json.dumps({"a": [1, 2]}), lambda f: True)
    assert n > 10
    assert bench_host_cost.count_bytecodes(lambda: json.dumps([1]), lambda f: "gpu_" in f) == 0
