"""Hostile snapshot files: bounded loading (size, nodes, shared references, non-regular
files), every field checked before rendering, and a fuzz over structurally valid but odd
snapshots through every output mode. Runs the CLI in-process (`main(argv)`), so a
traceback fails the test instead of vanishing into a subprocess."""

from __future__ import annotations

import copy
import json
import os
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_tensor.cli.main import main
from gpu_tensor.cli.snapshot_check import Limits
from gpu_tensor.cli.snapshot_load import SnapshotError, load_snapshot


def _cli(capsys, *argv):
    code = main(["memory-summary", *argv])
    out, err = capsys.readouterr()
    if code != 0:
        assert code == 2, err
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("gpu-tensor: error: "), err
    return code, out, err


@pytest.fixture
def good(data_dir):
    return json.loads((data_dir / "small_snapshot.json").read_text())


def test_dev_zero_is_refused():
    with pytest.raises(SnapshotError, match="not a regular file"):
        load_snapshot("/dev/zero")


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "snap.fifo"
    os.mkfifo(fifo)
    with pytest.raises(SnapshotError, match="not a regular file"):
        load_snapshot(fifo)


def test_file_size_limit_and_its_flag(tmp_path, capsys, good):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(good))
    code, _, err = _cli(capsys, str(path), "--max-snapshot-bytes", "100")
    assert code == 2 and "--max-snapshot-bytes" in err
    assert _cli(capsys, str(path), "--max-snapshot-bytes", str(10**7))[0] == 0


def test_node_limit_and_its_flag(tmp_path, good):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(good))
    with pytest.raises(SnapshotError, match="--max-snapshot-nodes"):
        load_snapshot(path, Limits(max_nodes=10))
    assert load_snapshot(path, Limits(max_nodes=10**6))["segments"]


def test_shared_references_are_bounded(tmp_path):
    # the 12 KB pickle: 3,000 segments naming one segment holding 3,000 refs to one
    # block (9 M blocks once expanded); refused quickly instead of rendering for minutes
    block = {"size": 512, "state": "active_allocated"}
    seg = {"address": 0, "total_size": 512 * 3000, "blocks": [block] * 3000}
    path = tmp_path / "bomb.pickle"
    path.write_bytes(pickle.dumps({"segments": [seg] * 3000}))
    assert path.stat().st_size < 20_000
    with pytest.raises(SnapshotError, match="--max-shared-refs"):
        load_snapshot(path)


def test_cycle_is_refused(tmp_path):
    frames = []
    frames.append(frames)
    snap = {
        "segments": [
            {
                "address": 0,
                "total_size": 512,
                "blocks": [{"size": 512, "state": "active_allocated", "frames": frames}],
            }
        ]
    }
    path = tmp_path / "cycle.pickle"
    path.write_bytes(pickle.dumps(snap))
    with pytest.raises(SnapshotError, match="cycle"):
        load_snapshot(path)


def _with_block_field(good, key, value):
    snap = copy.deepcopy(good)
    snap["segments"][0]["blocks"][0][key] = value
    return snap


@pytest.mark.parametrize(
    "key,value,match",
    [
        ("requested_size", "abc", "requested_size"),
        ("requested_size", 10**400, "64 bits"),
        ("frames", b"bytes", "bytes"),
        ("frames", [{("tuple", "key"): 1}], "key is tuple"),
        ("frames", [{"filename": 3}], "filename"),
        ("requested_size", float("nan"), "non-finite"),
    ],
)
def test_odd_fields_are_one_line(tmp_path, capsys, good, key, value, match):
    path = tmp_path / "odd.pickle"
    path.write_bytes(pickle.dumps(_with_block_field(good, key, value)))
    for mode in ([], ["--json"], ["--html", str(tmp_path / "o.html")]):
        code, _, err = _cli(capsys, str(path), *mode)
        assert code == 2 and match in err, err


def test_huge_total_size_and_digits(tmp_path, capsys, good):
    snap = copy.deepcopy(good)
    snap["segments"][0]["total_size"] = 10**400
    path = tmp_path / "big.pickle"
    path.write_bytes(pickle.dumps(snap))
    assert _cli(capsys, str(path))[0] == 2
    text = json.dumps(good).replace('"size": ', '"size": ' + "9" * 5001 + " + ", 0)
    path = tmp_path / "digits.json"
    path.write_text(text.replace('"total_size": ', '"total_size": ' + "1" * 5001 + "0", 1))
    code, _, err = _cli(capsys, str(path))
    assert code == 2


# -- fuzz: structurally valid snapshots with odd values, through every output mode -----
_odd = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.none(),
    st.booleans(),
    st.binary(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
_BLOCK_KEYS = ["size", "state", "address", "requested_size", "frames"]
_SEG_KEYS = ["address", "total_size", "segment_type", "stream", "device", "blocks"]


@settings(
    max_examples=int(__import__("os").environ.get("FUZZ_N", 60)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    where=st.sampled_from(["block", "segment", "trace", "ext"]),
    key=st.sampled_from(
        _BLOCK_KEYS + _SEG_KEYS + ["action", "device", "memory_stats", "live_tensors"]
    ),
    value=_odd,
    mode=st.sampled_from(["text", "json", "html"]),
)
def test_fuzz_odd_snapshots(tmp_path, capsys, good, where, key, value, mode):
    snap = copy.deepcopy(good)
    if where == "block":
        snap["segments"][0]["blocks"][0][key] = value
    elif where == "segment":
        snap["segments"][0][key] = value
    elif where == "trace":
        snap["device_traces"] = [[{"action": "oom", "size": 10, key: value}]]
    else:
        snap.setdefault("gpu_tensor", {})[key] = value
    path = tmp_path / "fuzz.pickle"
    path.write_bytes(pickle.dumps(snap))
    argv = {"text": [], "json": ["--json"], "html": ["--html", str(tmp_path / "f.html")]}
    code, out, _ = _cli(capsys, str(path), *argv[mode])
    if code == 0 and mode == "json":
        json.loads(out)


@pytest.mark.parametrize("mode", ["text", "json", "html", "compare"])
def test_null_live_tensors_render_in_every_mode(tmp_path, capsys, good, mode):
    """The live-tensor list is optional and may be null (a case the fuzz found)."""
    snap = copy.deepcopy(good)
    snap.setdefault("gpu_tensor", {})["live_tensors"] = None
    path = tmp_path / "null.pickle"
    path.write_bytes(pickle.dumps(snap))
    argv = {
        "text": [],
        "json": ["--json"],
        "html": ["--html", str(tmp_path / "n.html")],
        "compare": ["--compare", str(path)],
    }
    assert _cli(capsys, str(path), *argv[mode])[0] == 0


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_incremental_json_matches_json_load(tmp_path, data_dir, monkeypatch, chunk):
    from gpu_tensor.cli import snapshot_json

    monkeypatch.setattr(snapshot_json, "CHUNK", chunk)  # every token split at some boundary
    path = data_dir / "small_snapshot.json"
    want = json.loads(path.read_text())
    got = load_snapshot(path)
    assert {k: got[k] for k in want} == want
    text = path.read_text()
    for cut in (len(text) // 3, len(text) - 2):
        bad = tmp_path / "cut.json"
        bad.write_text(text[:cut])
        with pytest.raises(SnapshotError, match="truncated JSON"):
            load_snapshot(bad)
    bad.write_text(text.replace(":", "::", 5))
    with pytest.raises(SnapshotError, match="invalid JSON"):
        load_snapshot(bad)


# -- issue 24, item 11: odd but loadable snapshots that used to end in a traceback ------
_MODES = ([], ["--json"], ["--html", "{tmp}/o.html"])


def _every_mode_is_one_line(capsys, tmp_path, path, match):
    for mode in _MODES:
        code, _, err = _cli(capsys, str(path), *[m.format(tmp=tmp_path) for m in mode])
        assert code == 2 and match in err, (mode, err)


@pytest.mark.parametrize("field", ["total_size", "stats", "trace"])
def test_json_integers_beyond_64_bits_are_one_line(tmp_path, capsys, good, field):
    """A JSON file spells 10**400 out in digits; the pickle path's 64-bit rule applies to
    it too (it reached the renderers: 'integer division result too large for a float')."""
    text = json.dumps(good)
    huge = "1" + "0" * 400
    if field == "total_size":
        text = text.replace('"total_size": 2097152', f'"total_size": {huge}', 1)
    elif field == "stats":
        text = text.replace(
            '"reserved_bytes.all.current": ', f'"reserved_bytes.all.current": {huge}, "x": ', 1
        )
    else:
        text = text.replace('"size": 524288', f'"size": {huge}', 1)
    assert huge in text
    path = tmp_path / "huge.json"
    path.write_text(text)
    _every_mode_is_one_line(capsys, tmp_path, path, "beyond 64 bits")


def test_json_float_beyond_range_is_one_line(tmp_path, capsys, good):
    text = json.dumps(good).replace('"time_us": 1000', '"time_us": 1e400', 1)
    path = tmp_path / "inf.json"
    path.write_text(text)
    _every_mode_is_one_line(capsys, tmp_path, path, "beyond the range of a float")


@pytest.mark.parametrize("suffix", ["json", "pickle"])
@pytest.mark.parametrize(
    "key", ["num_ooms", "num_alloc_retries", "allocated_bytes.all.current", "segment.all.peak"]
)
def test_float_where_a_count_is_expected_is_one_line(tmp_path, capsys, good, key, suffix):
    """memory_stats() values are integers; a float one reached `format(v, 'd')`."""
    snap = copy.deepcopy(good)
    snap["gpu_tensor"]["memory_stats"][key] = 1.5
    path = tmp_path / f"float.{suffix}"
    path.write_bytes(pickle.dumps(snap) if suffix == "pickle" else json.dumps(snap).encode())
    _every_mode_is_one_line(capsys, tmp_path, path, f"stat {key!r} is float")


def test_none_inside_100k_segments_with_html(tmp_path, capsys):
    segs = [
        {
            "address": i << 21,
            "total_size": 2 << 20,
            "stream": 0,
            "segment_type": "small",
            "blocks": [{"address": i << 21, "size": 2 << 20, "state": "active_allocated"}],
        }
        for i in range(100_000)
    ]
    segs[77_777] = None
    path = tmp_path / "none.pickle"
    path.write_bytes(pickle.dumps({"segments": segs}))
    code, _, err = _cli(capsys, str(path), "--html", str(tmp_path / "o.html"))
    assert code == 2 and "segment 77777 is NoneType" in err
    assert not (tmp_path / "o.html").exists()


@settings(
    max_examples=int(__import__("os").environ.get("FUZZ_N", 40)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    key=st.sampled_from(
        [
            "num_ooms",
            "num_alloc_retries",
            "active.all.current",
            "reserved_bytes.all.peak",
            "oversize_segments.current",
        ]
    ),
    value=_odd,
    mode=st.sampled_from(["text", "json", "html"]),
)
def test_fuzz_odd_memory_stats(tmp_path, capsys, good, key, value, mode):
    """Each memory_stats() value, odd, through every output mode: a table or one line."""
    snap = copy.deepcopy(good)
    snap["gpu_tensor"]["memory_stats"][key] = value
    path = tmp_path / "stats.pickle"
    path.write_bytes(pickle.dumps(snap))
    argv = {"text": [], "json": ["--json"], "html": ["--html", str(tmp_path / "f.html")]}
    _cli(capsys, str(path), *argv[mode])
