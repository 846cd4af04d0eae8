"""`gpu-tensor demo` end to end on the emulated device, small enough for a few seconds."""

from __future__ import annotations

import re
import time

import pytest

from gpu_tensor.testing import requires_gpu_hardware

SMALL = ("demo", "--batch-size", "8", "--image-size", "16", "--steps", "8")


def test_demo_runs_end_to_end_on_the_emulated_device(run_cli):
    start = time.perf_counter()
    # No GPU_TENSOR_FALLBACK in the environment: the demo picks the emulated device itself.
    proc = run_cli(*SMALL, fallback=False)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "emulated on the CPU" in out
    assert "8 batches of 8 images 16x16x3 uint8" in out
    trained = re.search(
        r"trained: mean loss (\S+) over the first 4 steps, (\S+) over the last 4", out
    )
    assert trained and float(trained.group(2)) < float(trained.group(1)), out
    check = re.search(r"normalise max abs error (\S+), logits max rel error (\S+) \(ok\)", out)
    assert check, out
    assert float(check.group(1)) <= 1e-5
    throughput = re.search(r"throughput: ([\d,]+) images/s", out)
    assert throughput and int(throughput.group(1).replace(",", "")) > 0
    assert "overlap: none possible (streams are synchronous on the emulated device)" in out
    assert re.search(r"pinned host pool: \S+ \S+ in use", out)
    assert "gpu_tensor CUDA memory summary" in out
    assert "\r" not in proc.stderr  # no progress bar when stderr is not a TTY
    assert elapsed < 30  # seconds, generous for a 2-core shared CI box; ~1-2 s alone


@pytest.mark.parametrize("flag", ["--steps", "--batch-size", "--image-size"])
def test_demo_rejects_non_positive_sizes(run_cli, flag):
    proc = run_cli("demo", flag, "0")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and f"{flag} must be at least 1" in proc.stderr


@requires_gpu_hardware  # real timing / a real GPU in a subprocess
def test_demo_on_a_real_gpu(run_cli):
    proc = run_cli(*SMALL, fallback=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "emulated" not in proc.stdout.splitlines()[0]
    assert "(ok)" in proc.stdout
    hidden = re.search(r"pipelined: (\d+)% of the shorter stage hidden", proc.stdout)
    assert hidden and 0 <= int(hidden.group(1)) <= 100


def test_demo_names_an_unavailable_stage_instead_of_faking_it(monkeypatch):
    import io

    from gpu_tensor.cli import demo

    monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")

    def broken_fuse(fn):
        raise NotImplementedError("fusion is not built yet")

    api = demo._api()
    api.fuse = broken_fuse
    monkeypatch.setattr(demo, "_api", lambda: api)
    out = io.StringIO()
    assert demo.demo_main(batch_size=2, image_size=4, steps=1, out=out) == 1
    text = out.getvalue()
    assert "stage 'gt.fuse' is unavailable: NotImplementedError: fusion is not built yet" in text
    assert "throughput" not in text


def test_demo_progress_bar_on_a_tty(monkeypatch, capsys):
    import io

    from gpu_tensor.cli import demo

    monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")
    monkeypatch.setattr(demo.sys.stderr, "isatty", lambda: True, raising=False)
    out = io.StringIO()
    assert demo.demo_main(batch_size=2, image_size=4, steps=3, out=out) == 0
    err = capsys.readouterr().err
    assert "\r" in err and "training" in err and "3/3" in err and "batch" in err  # tqdm's bar


def test_no_progress_flag_silences_the_bar_even_on_a_tty(monkeypatch, capsys):
    import io

    from gpu_tensor.cli import demo

    monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")
    monkeypatch.setattr(demo.sys.stderr, "isatty", lambda: True, raising=False)
    out = io.StringIO()
    assert demo.demo_main(batch_size=2, image_size=4, steps=2, progress=False, out=out) == 0
    assert "training" not in capsys.readouterr().err
    assert "\r" not in out.getvalue()
