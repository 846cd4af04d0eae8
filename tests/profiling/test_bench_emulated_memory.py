"""profiling/bench_emulated_memory.py runs, and every pieced op meets its host-memory bound."""

from __future__ import annotations

import json

import pytest

from gpu_tensor.device import cuda_is_emulated
from profiling import bench_emulated_memory


@pytest.mark.skipif(not cuda_is_emulated(), reason="the emulated cuda device")
def test_every_pieced_op_is_the_allocators_and_stays_under_the_bound(tmp_path, capsys):
    bench_emulated_memory.main(["--quick", "--out", str(tmp_path)])
    assert "| x[i, j] | pieces |" in capsys.readouterr().out
    (path,) = tmp_path.glob("emulated_memory-*.json")
    rows = json.loads(path.read_text())["rows"]
    pieced = [r for r in rows if r.get("kind") == "pieces"]
    assert len(pieced) >= 25
    for r in pieced:
        assert r["verdict"] == "ok", r
        assert r["allocator_grew_mib"] >= r["result_mib"] * 0.999, r  # (rounded blocks)
    assert {r["kind"] for r in rows} == {"pieces", "intermediates", "threshold"}
    threshold = [r for r in rows if r["kind"] == "threshold"]  # the direct-path threshold
    assert [r["taken"] for r in threshold] == ["direct", "pieces"]  # (at PIECE, then above)
    assert all(r["direct_us"] > 0 and r["pieces_us"] > 0 for r in threshold)
