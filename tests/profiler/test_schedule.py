"""gt.profiler.schedule and the profile's step machine (torch's behaviour, recorded from
torch 2.13 where noted; test_profiler_parity.py compares with torch itself)."""

from __future__ import annotations

import pytest

import gpu_tensor as gt
from gpu_tensor.profiler import ProfilerAction, profile, schedule

A = ProfilerAction


def test_schedule_matches_torchs_probe():
    # torch 2.13: schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2), steps 0-11
    s = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2)
    names = [s(i).name for i in range(12)]
    assert names == [
        "NONE",
        "NONE",
        "WARMUP",
        "RECORD",
        "RECORD_AND_SAVE",
        "NONE",
        "WARMUP",
        "RECORD",
        "RECORD_AND_SAVE",
        "NONE",
        "NONE",
        "NONE",
    ]


def test_schedule_without_repeat_cycles_forever_and_skip_first_wait():
    s = schedule(wait=2, warmup=1, active=1)
    assert [s(i) for i in range(8)] == [A.NONE, A.NONE, A.WARMUP, A.RECORD_AND_SAVE] * 2
    s = schedule(wait=2, warmup=1, active=1, skip_first_wait=1)
    assert [s(i) for i in range(4)] == [A.WARMUP, A.RECORD_AND_SAVE, A.NONE, A.NONE]


def test_schedule_checks_its_arguments():
    with pytest.raises(AssertionError, match="active=0 \\(need > 0\\)"):
        schedule(wait=0, warmup=1, active=0)
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError, match="non-negative"):
        schedule(wait=0, warmup=1, active=1)(-1)


def _steps(n, **kw):
    fired = []
    x = gt.ones(4)

    def ready(prof):
        from gpu_tensor.profiler import chrome

        trace = chrome.trace_dict(prof._finished())["traceEvents"]
        fired.append(
            (
                prof.step_num,
                sorted({e["name"] for e in trace if e["name"].startswith("ProfilerStep")}),
                prof.key_averages(),
            )
        )

    with profile(schedule=schedule(**kw), on_trace_ready=ready) as prof:
        for _ in range(n):
            x.exp()
            prof.step()
    return fired


def test_on_trace_ready_fires_at_the_save_steps_with_their_step_ranges():
    fired = _steps(12, skip_first=1, wait=1, warmup=1, active=2, repeat=2)
    assert [f[0] for f in fired] == [5, 9]  # torch 2.13's probe
    assert fired[0][1] == ["ProfilerStep#3", "ProfilerStep#4"]
    assert fired[1][1] == ["ProfilerStep#7", "ProfilerStep#8"]
    rows = {r.key: r.count for r in fired[0][2]}
    assert rows["ProfilerStep*"] == 2 and rows["aten::exp"] == 2


def test_without_step_a_schedule_records_nothing():
    fired = []
    with profile(
        schedule=schedule(wait=1, warmup=1, active=1), on_trace_ready=fired.append
    ) as prof:
        for _ in range(5):
            gt.ones(2).exp()
    assert fired == []
    with pytest.raises(RuntimeError, match="prof.step"):
        prof.key_averages()


def test_no_schedule_records_from_start_to_stop():
    prof = profile()
    prof.start()
    gt.ones(3).neg()
    prof.stop()
    assert [e.name for e in prof.events()] == ["aten::ones", "aten::neg"]
    assert prof.step_num == 0


def test_a_second_stop_does_nothing():
    fired = []
    prof = profile(on_trace_ready=fired.append)
    prof.start()
    gt.ones(2).exp()
    prof.stop()
    prof.stop()
    assert len(fired) == 1 and [e.name for e in prof.events()] == ["aten::ones", "aten::exp"]
