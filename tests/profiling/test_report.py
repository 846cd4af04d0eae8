"""profiling/report.py and goals.py: goals judged on the worst matching row."""

from __future__ import annotations

import json

from profiling import report
from profiling.goals import GOALS, Goal


def result(bench, device, rows, started_at="2026-01-01T00:00:00+00:00"):
    return {"benchmark": bench, "device": device, "started_at": started_at, "rows": rows}


def row(case, impl, seconds=None, **kw):
    return {"case": case, "impl": impl, "seconds": seconds, **kw}


def test_pct_ceiling_uses_the_worst_case():
    g = Goal("copy", "t", "pct_ceiling", 0.9, cases="transpose")
    rs = [
        result(
            "copy",
            "cuda",
            [
                row("transpose a", "gpu_tensor", 1, pct_of_ceiling=0.95),
                row("transpose b", "gpu_tensor", 1, pct_of_ceiling=0.85),
                row("slice", "gpu_tensor", 1, pct_of_ceiling=0.10),  # not a transpose
                row("transpose b", "cupy", 1, pct_of_ceiling=0.99),  # not ours
            ],
        )
    ]
    ev = report.evaluate(g, rs)
    assert ev["status"] == "MISSED" and ev["measured"] == 0.85 and ev["where"] == "transpose b"


def test_speedup_and_slowdown_pair_rows_by_case():
    rs = [
        result(
            "copy",
            "cuda",
            [
                row("a", "gpu_tensor", 1.0),
                row("a", "cupy", 2.0),
                row("b", "gpu_tensor", 1.0),
                row("b", "cupy", 1.6),
                row("c", "gpu_tensor", 1.0),  # no peer: left out
            ],
        )
    ]
    fast = report.evaluate(Goal("copy", "s", "speedup", 1.5, peer=(r"^cupy\b",)), rs)
    assert fast["status"] == "met" and fast["measured"] == 1.6
    slow = report.evaluate(Goal("copy", "s", "slowdown", 0.55, peer=(r"^cupy\b",)), rs)
    assert slow["status"] == "MISSED" and slow["measured"] == 1 / 1.6


def test_peer_patterns_fall_back_in_order_and_fields():
    rs = [
        result(
            "allocator",
            "cpu",
            [
                row("warm 4 KiB", "gpu_tensor", 2.0, driver_calls=0),
                row("warm 4 KiB", "cupy", 1.0),
                row("transformer trace", "gpu_tensor", None, fragmentation=1.2),
            ],
        )
    ]
    g = Goal("allocator", "x", "slowdown", 1.5, peer=(r"cupy.*pool", r"^cupy\b"))
    assert report.evaluate(g, rs)["measured"] == 2.0
    frag = Goal("allocator", "f", "field_max", 1.10, fields=("fragmentation",), cases="transformer")
    assert report.evaluate(frag, rs)["status"] == "MISSED"
    calls = Goal("allocator", "c", "field_max", 0, fields=("driver_calls",), cases="warm")
    assert report.evaluate(calls, rs)["status"] == "met"


def test_no_data_and_not_applicable_are_explicit():
    g = Goal("copy", "t", "pct_ceiling", 0.9, device="cuda")
    assert report.evaluate(g, [])["status"] == "no data"
    assert (
        report.evaluate(g, [result("copy", "cpu", [row("x", "gpu_tensor", 1)])])["status"] == "n/a"
    )
    skipped = [result("copy", "cuda", [{"case": "x", "impl": "gpu_tensor", "skipped": "why"}])]
    assert report.evaluate(g, skipped)["where"] == "gpu_tensor skipped: why"
    other = [result("copy", "cuda", [row("x", "numpy", 1.0)])]
    assert report.evaluate(g, other)["where"] == "no rows match this goal"


def test_load_results_keeps_newest_and_skips_junk(tmp_path, capsys):
    (tmp_path / "old.json").write_text(json.dumps(result("copy", "cuda", [], "2026-01-01")))
    (tmp_path / "new.json").write_text(json.dumps(result("copy", "cuda", [], "2026-02-01")))
    (tmp_path / "summary.json").write_text(json.dumps({"kind": "run_all"}))
    (tmp_path / "broken.json").write_text("{not json")
    loaded = report.load_results([tmp_path])
    assert len(loaded) == 1 and loaded[0]["started_at"] == "2026-02-01"
    assert "broken.json" in capsys.readouterr().err


def test_gaps_table_lists_every_goal_and_main_prints_it(tmp_path, capsys):
    table = report.gaps_table([])
    assert table.count("\n") == len(GOALS) + 1
    assert len(report.gaps_table([], benches={"copy"}).splitlines()) == 2 + sum(
        g.bench == "copy" for g in GOALS
    )
    (tmp_path / "r.json").write_text(json.dumps(result("copy", "cuda", [])))
    assert report.main([str(tmp_path)]) == 0
    assert "Gaps to goals" in capsys.readouterr().out
    assert report.main([str(tmp_path / "empty")]) == 1


def test_every_goal_is_well_formed():
    kinds = {"pct_ceiling", "speedup", "slowdown", "field_max", "field_min", "field_ratio_max"}
    for g in GOALS:
        assert g.kind in kinds and g.bench in {
            "dispatch",
            "allocator",
            "copy",
            "transfer",
            "fused",
            "optim",
            "train",
            "graphs",
            "host_cost",
        }
        assert (g.kind in ("speedup", "slowdown", "field_ratio_max")) == bool(g.peer), g.text
        assert (g.kind.startswith("field")) == bool(g.fields), g.text


def test_field_ratio_compares_a_column_with_the_peer():
    rs = [
        result(
            "allocator",
            "cuda",
            [
                row("fragmentation transformer", "gpu_tensor", 1e-6, fragmentation=1.05),
                row("fragmentation transformer", "torch", 1e-6, fragmentation=1.20),
                row("fragmentation random", "gpu_tensor", 1e-6, fragmentation=1.30),
                row("fragmentation random", "torch", 1e-6, fragmentation=1.25),
            ],
        )
    ]
    g = Goal("allocator", "f", "field_ratio_max", 1.0, peer=(r"^torch",), fields=("fragmentation",))
    ev = report.evaluate(g, rs)
    assert ev["status"] == "MISSED" and ev["where"].startswith("fragmentation random")
    assert ev["measured"] == 1.30 / 1.25


def test_goal_patterns_match_the_real_benchmarks_names():
    """The names bench_*.py record today reach their goals (rows built from those names)."""
    # fmt: off
    transfer = [result("transfer", "cuda", [
        row("H2D 256 MiB", "raw cudaMemcpyAsync pinned (peak)", 1.0, nbytes=256 << 20),
        row("H2D 256 MiB", "gpu_tensor pinned", 1.05, nbytes=256 << 20),
        row("H2D 256 MiB", "gpu_tensor pageable staged", 1.2, nbytes=256 << 20),
        row("H2D 256 MiB", "cupy.asarray (pageable)", 3.0, nbytes=256 << 20),
        row("overlap H2D 256 MiB with compute", "gpu_tensor pinned", 1.0, hidden_fraction=0.95),
        row("pool waste: live", "gpu_tensor PinnedPool", None, host_overhead=1.1),
    ])]
    fused = [result("fused", "cuda", [
        row(c, i, s, pct_of_ceiling=p)
        for c in ("a*x+b", "gelu(a*x+b)", "norm", "gelu x.T")
        for i, s, p in (("gpu_tensor fused", 1.0, 0.9), ("gpu_tensor unfused", 4.0, 0.2),
                        ("cupy unfused", 4.0, 0.2), ("cupy.fuse", 1.5, 0.6),
                        ("torch.compile", 1.0, 0.9))
    ])]
    allocator = [result("allocator", "cuda", [
        row("warm alloc+free 4 KiB", "gpu_tensor allocator", 1e-6, driver_calls=0),
        row("warm alloc+free 4 KiB", "gpu_tensor allocator + creation site", 9e-6, driver_calls=0),
        row("warm alloc+free 4 KiB", "cupy MemoryPool", 1e-6),
        row("fragmentation transformer (40 ops)", "gpu_tensor", 1e-7, fragmentation=1.05),
        row("fragmentation transformer (40 ops)", "torch", 1e-7, fragmentation=1.10),
    ])]
    dispatch = [result("dispatch", "cuda", [
        row("x + y [16]", "gpu_tensor (cpu)", 1.5e-6, ratio=1.5),
        row("x + y [16]", "numpy", 1e-6),
        row("x + y [65536]", "gpu_tensor (cpu)", 9e-5),  # medium: not a tiny op
        row("x + y [65536]", "numpy", 1e-5),
        row("x + y [16]", "gpu_tensor (cuda)", 5.5e-6),
        row("x + y [16]", "gpu_tensor (emulated cuda)", 9e-5),
        row("x + y [16]", "cupy", 5e-6),
    ])]
    copy = [result("copy", "cuda", [
        row(c, i, s, pct_of_ceiling=p)
        for c in ("2D transpose fp32", "batched 3D transpose (0,2,1)", "NCHW->NHWC",
                  "general 4D permute (1,3,0,2)", "attention BHSD->BSHD inner-contiguous",
                  "step slice x[:, ::2]", "transpose + cast fp32->fp16")
        for i, s, p in (("gpu_tensor", 1.0, 0.92), ("cupy.ascontiguousarray", 2.0, 0.46),
                        ("gpu_tensor (emulated)", 50.0, None))
    ])]
    optim = [result("optim", "cuda", [
        row("Adam step, 10.2M fp32 params", "gpu_tensor fused", 1e-3, pct_of_ceiling=0.85),
        row("Adam step, 10.2M fp32 params", "gpu_tensor eager", 5e-3, pct_of_ceiling=0.15),
        row("launches per Adam step (16 parameter tensors)", "gpu_tensor fused", None,
            launches=16, per_tensor=1.0),
    ])]
    train = [result("train", "cpu", [
        row("MLP 784-256-256-10 b64", "torch", 2e-3),
        row("MLP 784-256-256-10 b64", "gpu_tensor (cpu)", 2.8e-3),
        row("MLP 784-256-256-10 b64", "gpu_tensor (emulated cuda)", 3.9e-3),
        row("x.sum() 1M fp32", "torch", 5e-5),
        row("x.sum() 1M fp32", "gpu_tensor (cpu)", 7e-5),
        row("x.sum() 1M fp32", "gpu_tensor (emulated cuda)", 2e-4),  # no emulated goal
    ])]
    graphs = [result("graphs", "cuda", [
        row("per step, width 64 (simulated CuPy)", "gpu_tensor eager", None, python_calls=9000,
            graph_launches=0),
        row("per step, width 64 (simulated CuPy)", "gpu_tensor graphed", None, python_calls=4,
            graph_launches=1),
        row("step time, width 256, batch 64", "gpu_tensor eager", 1e-3),
        row("step time, width 256, batch 64", "gpu_tensor graphed", 1e-4),
        row("step time, width 256, batch 64", "torch graphed", 2e-4),
    ])]
    host_cost = [result("host_cost", "cpu", [
        row("x + y", "gpu_tensor (cuda, sim)", 2e-6, own_us=2.0, calls=15, launches=1),
        row("x + y", "before: gpu_tensor at /tmp/base", 1e-4, own_us=100.0, calls=160,
            launches=2),
        row("x + y", "numpy", 5e-7),
    ]), result("host_cost", "cuda", [
        row("x + y", "gpu_tensor (cuda)", 5.5e-6, calls=15),
        row("x + y", "cupy", 5e-6),
    ])]
    # fmt: on
    results = transfer + fused + allocator + dispatch + copy + optim + train + graphs + host_cost
    assert report.evaluate(GOALS[0], results)["status"] == "met"
    for g in GOALS:
        ev = report.evaluate(g, results)
        assert ev["status"] == "met", (g.text, ev)
