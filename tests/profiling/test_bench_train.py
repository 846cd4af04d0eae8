"""profiling/bench_train.py drives its worker processes and writes every row it promises."""

from __future__ import annotations

import json

from profiling import bench_train


def test_quick_round_times_each_device_and_prints_the_pivot(tmp_path, capsys):
    bench_train.main(
        ["--quick", "--rounds", "1", "--cases", "deep_mlp,sum", "--out", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert "| case | " in out and "17-layer MLP w32 b8" in out
    (path,) = tmp_path.glob("train-*.json")
    rows = json.loads(path.read_text())["rows"]
    timed = {(r["case"], r["impl"]): r for r in rows if "seconds" in r}
    for case in ("17-layer MLP w32 b8", "x.sum() 1M fp32"):
        for impl in ("gpu_tensor (cpu)", "gpu_tensor (emulated cuda)"):
            assert timed[(case, impl)]["seconds"] > 0, rows
    # torch rows are timed when torch is importable here, else skipped with the reason
    torch_rows = [r for r in rows if r["impl"] == "torch"]
    assert len(torch_rows) == 2
    assert all("seconds" in r or "torch" in r["skipped"] for r in torch_rows)
