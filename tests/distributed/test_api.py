"""Setup and argument checks: on 2 real ranks (workers/api.py), and the pure parts here."""

import json
import pickle

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor.backends import cuda_nccl
from gpu_tensor.distributed import ReduceOp, Work, group, nccl_engine
from gpu_tensor.distributed.snapshots import snapshot_path
from gpu_tensor.distributed.staging import Staged

from ._launch import ok_counts, run_ranks


def test_setup_errors_and_per_rank_snapshots_on_three_ranks(tmp_path, capsys):
    from gpu_tensor.cli.main import main  # (imported late: tests/cli imports cli's main first)

    pattern = str(tmp_path / "snaps" / "rank{rank}.json")
    _, out, _ = run_ranks(3, "api.py", pattern)
    assert min(ok_counts(out, 3)) > 20, out
    files = [pattern.format(rank=r) for r in range(3)]
    assert main(["memory-summary", *files]) == 0
    text = capsys.readouterr().out
    assert "Memory across 3 ranks" in text and "rank 2 *" in text
    assert "Outlier: rank 2 (*) peaks at 12.0 MiB, 8.0 MiB above the median 4.0 MiB" in text
    assert main(["memory-summary", "--json", *files]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in report["ranks"]] == [0, 1, 2]
    assert report["outlier"]["rank"] == 2
    assert main(["memory-summary", files[0], files[0]]) == 2  # the same rank twice
    assert "claim the same rank" in capsys.readouterr().err
    assert main(["memory-summary", "--html", "x.html", *files]) == 2


def test_backend_strings_route_devices_like_torch():
    assert group._parse("mpi") == ("mpi", {"cpu": "mpi", "cuda": "mpi"})
    assert group._parse("NCCL") == ("nccl", {"cuda": "nccl"})
    assert group._parse("cpu:mpi, cuda:nccl") == (
        "cpu:mpi,cuda:nccl",
        {"cpu": "mpi", "cuda": "nccl"},
    )
    name, table = group._parse(None)
    assert table["cpu"] == "mpi"
    assert table["cuda"] == ("nccl" if nccl_engine.usable() else "mpi")
    with pytest.raises(ValueError, match="expected entries like"):
        group._parse("cpu:mpi,tpu:nccl")
    with pytest.raises(TypeError, match="must be a str"):
        group._parse(3)


def test_reduce_op_members_pickle_as_themselves():
    assert pickle.loads(pickle.dumps(ReduceOp.AVG)) is ReduceOp.AVG
    assert repr(ReduceOp.SUM) == "<ReduceOp.SUM>"
    with pytest.raises(TypeError, match="members"):
        ReduceOp()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_staging_widens_bf16_and_copies_back_non_contiguous(device, monkeypatch):
    monkeypatch.setenv("GPU_TENSOR_FALLBACK", "1")
    t = gt.tensor([[1.0, 2.0], [3.0, 4.5]], dtype=gt.bfloat16, device=device).t()
    st = Staged(t, reduce=True, avg_divisor=2)
    assert st.buf.dtype == np.float32 and st.buf.flags.c_contiguous
    st.buf *= 3  # what a SUM over 3 equal ranks would leave
    st.finish()
    assert t.to(gt.float32).tolist() == [[1.5, 4.5], [3.0, 6.75]]
    b = gt.tensor([True, False], device=device)
    sb = Staged(b, reduce=True)
    assert sb.buf.dtype == np.uint8


def test_integer_avg_rounds_toward_zero():
    t = gt.tensor([7, -7, 5], dtype=gt.int32)
    st = Staged(t, reduce=True, avg_divisor=2)
    st.finish()
    assert t.tolist() == [3, -3, 2]


def test_work_of_a_finished_request_is_complete():
    seen = []
    w = Work(None, lambda: seen.append(1), "barrier", 0, 1.0)
    assert w.is_completed() and w.wait() and seen == [1]


def test_snapshot_pattern_needs_the_rank():
    assert snapshot_path("out/r{rank}of{world_size}.json", 2, 3) == "out/r2of3.json"
    with pytest.raises(ValueError, match="may only use"):
        snapshot_path("{rank}{host}.json", 0, 1)


def test_nccl_dtype_table_matches_torch_support():
    assert cuda_nccl.nccl_dtype("bfloat16") == 9 and cuda_nccl.nccl_dtype("bool") == 1
    with pytest.raises(TypeError, match="NCCL has no int16"):
        cuda_nccl.nccl_dtype("int16")
    assert isinstance(cuda_nccl.available(), bool)


def test_nccl_refuses_bitwise_ops_with_torchs_error_before_enqueueing():
    assert cuda_nccl.nccl_op("SUM") == 0 and cuda_nccl.nccl_op("AVG") == 4
    eng = object.__new__(nccl_engine.NcclEngine)

    def run(*args):  # the engine must refuse before any stream or communicator work
        raise AssertionError("enqueued an op NCCL does not have")

    eng._run = run
    buf = np.zeros(4, np.int32)
    for name in ("BAND", "BOR", "BXOR"):
        # torch: ValueError "Cannot use ReduceOp.BAND with NCCL"
        with pytest.raises(
            ValueError,
            match=rf"Cannot use ReduceOp\.{name} with NCCL.*SUM, "
            "PRODUCT, MIN, MAX and AVG",
        ):
            eng.allreduce(buf, name)
    with pytest.raises(ValueError, match="BAND with NCCL"):
        eng.reduce(buf, "BAND", 0)
    with pytest.raises(ValueError, match="BXOR with NCCL"):
        eng.reduce_scatter(buf, buf, "BXOR")


@pytest.mark.skipif(
    not nccl_engine.usable(),
    reason="the nccl backend needs a CUDA GPU and "
    "the NCCL library (pip install 'gpu-tensor[nccl-cu12]')",
)
def test_every_collective_on_nccl_world_of_one():
    _, out, _ = run_ranks(1, "collectives.py", "cuda", "nccl", env={"GPU_TENSOR_FALLBACK": "0"})
    assert min(ok_counts(out, 1)) > 200, out


class _FakeEvent:
    def __init__(self, done):
        self.done = done

    def query(self):
        return self.done


class _FakeComm:
    aborted = False

    def abort(self):
        self.aborted = True


def test_nccl_watchdog_aborts_a_late_op_and_wait_names_it():
    """The watchdog's policy, with fake events and communicator (no GPU needed)."""
    import time

    from gpu_tensor.distributed.work import DistBackendError

    eng = object.__new__(nccl_engine.NcclEngine)
    eng.rank, eng.timeout_s = 3, 0.01
    eng._comm, eng._lock = _FakeComm(), __import__("threading").Lock()
    late = nccl_engine._Event(_FakeEvent(False), time.monotonic() - 1, "all_reduce", [])
    done = nccl_engine._Event(_FakeEvent(True), time.monotonic() - 1, "broadcast", [])
    eng._pending = [late, done]
    eng._watch()  # returns once it has aborted
    assert eng._comm.aborted and done.error is None
    work = Work(late, None, "all_reduce", 3, 10.0)
    with pytest.raises(DistBackendError, match="all_reduce timed out on rank 3"):
        work.wait()
