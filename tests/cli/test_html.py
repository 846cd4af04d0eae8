"""--html: one self-contained page with the SVG segment map and the memory timeline."""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser

import pytest

from gpu_tensor.cli import snapshot_figures as fig
from gpu_tensor.cli.html import render_html
from gpu_tensor.cli.snapshot_load import load_snapshot
from gpu_tensor.cli.timeline import memory_timeline


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []  # (tag, attrs dict)
        self.scripts = []  # (attrs, text)
        self._in_script = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = (dict(attrs), [])

    def handle_data(self, data):
        if self._in_script is not None:
            self._in_script[1].append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script[0], "".join(self._in_script[1])))
            self._in_script = None


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def test_html_file_from_cli_is_self_contained_with_both_pictures(run_cli, tmp_path, data_dir):
    out = tmp_path / "snap.html"
    proc = run_cli("memory-summary", str(data_dir / "small_snapshot.json"), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    page = _parse(out.read_text())
    ids = [a.get("id") for t, a in page.tags if t == "svg"]
    assert ids == ["active-timeline", "timeline", "segment-map"]
    # Nothing is fetched: no src/href anywhere, and the only script is inert JSON data.
    assert not [a for _, a in page.tags if "src" in a or "href" in a]
    assert [a.get("type") for a, _ in page.scripts] == ["application/json"]
    assert "http" not in out.read_text()

    snap = load_snapshot(data_dir / "small_snapshot.json")
    segments = fig.segments_of(snap)
    rects = [a for t, a in page.tags if t == "rect"]
    assert len(rects) == sum(len(s["blocks"]) for s in segments)
    assert sorted(int(r["data-size"]) for r in rects) == sorted(
        b["size"] for s in segments for b in s["blocks"]
    )
    series = {a["data-series"] for t, a in page.tags if t == "polyline"}
    assert series == {"allocated", "active", "reserved"}
    assert len([a for t, a in page.tags if t == "line" and a.get("class") == "oom"]) == 1

    data = json.loads(page.scripts[0][1])
    assert data["timeline"] == json.loads(json.dumps(memory_timeline(snap)))
    assert data["fragmentation"] == fig.fragmentation(segments)


def test_timeline_replays_the_trace_and_ends_at_the_snapshot_state(data_dir):
    snap = load_snapshot(data_dir / "small_snapshot.json")
    t = memory_timeline(snap)
    f = fig.fragmentation(fig.segments_of(snap))
    assert t["allocated"][-1] == f["allocated_bytes"]
    assert t["active"][-1] == f["allocated_bytes"] + f["pending_free_bytes"]
    assert t["reserved"][-1] == f["reserved_bytes"]
    # The fixture's trace is complete, so replaying it backwards starts from empty.
    assert (t["allocated"][0], t["active"][0], t["reserved"][0]) == (0, 0, 0)
    assert max(t["allocated"]) == 8 * 2**20 + 6 * 2**20 + 524288 + 1536 + 16 * 2**20
    assert t["t_us"] == sorted(t["t_us"])
    assert [o["size"] for o in t["ooms"]] == [64 << 20]


def test_timeline_with_a_truncated_ring_buffer_starts_from_the_inferred_level(data_dir):
    snap = load_snapshot(data_dir / "small_snapshot.json")
    snap["device_traces"] = [snap["device_traces"][0][4:]]  # the oldest events were dropped
    t = memory_timeline(snap)
    assert t["allocated"][0] == 524288 + 8 * 2**20  # alive before the kept window began
    assert t["reserved"][0] == 22 * 2**20


def test_html_escapes_frame_text():
    seg = {
        "address": 4096,
        "total_size": 1024,
        "device": 0,
        "blocks": [
            {
                "size": 1024,
                "state": "active_allocated",
                "frames": [{"filename": "<script>alert(1)</script>.py", "line": 1, "name": "f"}],
            }
        ],
    }
    text = render_html({"segments": [seg], "device_traces": []})
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;.py" in text


def test_long_history_is_downsampled_keeping_the_peak():
    from gpu_tensor.cli.timeline import MAX_POINTS

    base, trace = 1 << 32, []
    for i in range(20_000):  # alloc/free pairs; one spike in the middle
        size = (64 << 20) if i == 12_345 else 4096
        trace.append({"action": "alloc", "addr": base, "size": size, "time_us": 2 * i})
        trace.append({"action": "free_requested", "addr": base, "size": size, "time_us": 2 * i + 1})
        trace.append({"action": "free_completed", "addr": base, "size": size, "time_us": 2 * i + 1})
    snap = {"segments": [], "device_traces": [trace]}
    page = _parse(render_html(snap))
    data = json.loads(page.scripts[0][1])["timeline"]
    assert len(data["t_us"]) == MAX_POINTS and data["downsampled_from"] == 60_001
    assert max(data["allocated"]) == 64 << 20
    assert data["allocated"][-1] == 0
    for _, a in page.tags:
        if a.get("data-series") == "allocated":
            assert len(a["points"].split()) <= 2 * MAX_POINTS + 1


def test_write_html_streams_the_same_page_in_pieces(tmp_path, data_dir):
    from gpu_tensor.cli.html import PIECE_PARTS, html_parts, write_html

    snap = load_snapshot(data_dir / "small_snapshot.json")
    seg = snap["segments"][0]
    # one segment of many blocks: the map must come in pieces, not as one string
    snap["segments"].append(
        dict(
            seg,
            address=1 << 44,
            total_size=4096 * 5000,
            blocks=[{"size": 4096, "state": "inactive", "frames": []} for _ in range(5000)],
        )
    )
    parts = list(html_parts(snap, "t"))
    assert max(len(p) for p in parts) < 400 * PIECE_PARTS
    assert len(parts) > 5000 // PIECE_PARTS
    out = tmp_path / "page.html"
    write_html(str(out), snap, "t")
    assert out.read_text(encoding="utf-8") == render_html(snap, "t") == "".join(parts)


def test_a_page_that_fails_half_way_leaves_no_partial_file(tmp_path):
    from gpu_tensor.cli._errors import CliError, write_chunks

    def pieces():
        yield "<html>"
        raise ValueError("renderer broke")

    out = tmp_path / "page.html"
    with pytest.raises(ValueError, match="renderer broke"):
        write_chunks(str(out), pieces())
    assert not out.exists()
    with pytest.raises(CliError, match="cannot write"):
        write_chunks(str(tmp_path), iter(["x"]))  # a directory
    with pytest.raises(ValueError):  # not a regular file: never removed
        write_chunks(os.devnull, pieces())
    assert os.path.exists(os.devnull)


def test_live_bands_make_one_step_each_where_the_history_ends():
    from gpu_tensor.cli.active_timeline import allocation_bands

    # 1000 allocations never freed: each "ends" at the last event, which used to give
    # every band a step per band below it (500k steps)
    trace = [{"action": "alloc", "addr": i, "size": 1000 + i, "frames": []} for i in range(1000)]
    layout = allocation_bands({"segments": [], "device_traces": [trace]})
    assert len(layout["bands"]) == 1000
    assert max(len(b["steps"]) for b in layout["bands"]) <= 2


def test_segment_map_marks_cuda_graph_pools():
    def seg(address, pool):
        return {
            "address": address,
            "total_size": 1024,
            "device": 0,
            "segment_type": "small",
            "stream": 7,
            "segment_pool_id": pool,
            "blocks": [{"address": address, "size": 1024, "state": "inactive", "frames": []}],
        }

    text = render_html({"segments": [seg(4096, [0, 0]), seg(8192, [3, 0])], "device_traces": []})
    page = _parse(text)
    marked = [a for tag, a in page.tags if tag == "text" and a.get("class") == "graph-pool"]
    assert len(marked) == 1
    assert "graph pool (3, 0)" in text and "graph pool (0, 0)" not in text
