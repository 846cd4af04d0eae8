"""The active memory timeline (cli/active_timeline.py), --compare, and the page in Chromium."""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
import zlib

import pytest

from gpu_tensor.cli.active_timeline import allocation_bands
from gpu_tensor.cli.compare import compare_sites
from gpu_tensor.cli.html import render_html
from gpu_tensor.cli.snapshot_load import load_snapshot

MiB = 1 << 20


def _frames(site: int):
    return [{"filename": f"/work/model_{site}.py", "line": 10 + site, "name": f"layer{site}"}]


def synthetic(events: int, seed: int = 0) -> dict:
    """A torch-structured snapshot whose history has `events` alloc/free entries."""
    rng = random.Random(seed)
    trace, live, addr = [], [], 1 << 32
    for i in range(events):
        if live and (len(live) > 400 or rng.random() < 0.5):
            a, size = live.pop(rng.randrange(len(live)))
            trace.append(
                {
                    "action": "free_requested",
                    "addr": a,
                    "size": size,
                    "stream": 0,
                    "time_us": i,
                    "frames": [],
                }
            )
            continue
        size = rng.choice([512, 4096, 65536, MiB, 8 * MiB, 64 * MiB])
        site = rng.randrange(15)
        trace.append(
            {
                "action": "alloc",
                "addr": addr,
                "size": size,
                "stream": 0,
                "time_us": i,
                "frames": _frames(site),
                "shape": [size // 4],
                "dtype": "torch.float32",
            }
        )
        live.append((addr, size))
        addr += size
    blocks = [
        {"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": []}
        for a, s in live
    ]
    total = sum(s for _, s in live) or 512
    if not blocks:
        blocks = [
            {
                "address": 1 << 32,
                "size": 512,
                "requested_size": 0,
                "state": "inactive",
                "frames": [],
            }
        ]
    segment = {
        "device": 0,
        "address": blocks[0]["address"],
        "total_size": total,
        "allocated_size": total,
        "active_size": total,
        "requested_size": total,
        "stream": 0,
        "segment_type": "large",
        "segment_pool_id": (0, 0),
        "is_expandable": True,
        "frames": [],
        "blocks": blocks,
    }
    return {"segments": [segment], "device_traces": [trace], "allocator_settings": {}}


def test_bands_stack_in_allocation_order_and_drop_when_one_below_is_freed():
    snap = synthetic(0)
    snap["device_traces"] = [
        [
            {"action": "alloc", "addr": 1, "size": 100, "frames": _frames(1)},
            {"action": "alloc", "addr": 2, "size": 50, "frames": _frames(2)},
            {"action": "alloc", "addr": 3, "size": 25, "frames": _frames(2)},
            {"action": "free_requested", "addr": 1, "size": 100},
            {"action": "free_requested", "addr": 3, "size": 25},
        ]
    ]
    layout = allocation_bands(snap)
    steps = {b["addr"]: b["steps"] for b in layout["bands"]}
    assert steps == {1: [(0, 0)], 2: [(1, 100), (3, 0)], 3: [(2, 150), (3, 50)]}
    assert layout["peak"] == 175 and layout["small"] is None
    colours = {b["addr"]: b["colour"] for b in layout["bands"]}
    assert colours[2] == colours[3] != colours[1]  # one colour per allocation site


def test_hover_titles_carry_size_shape_dtype_and_frames():
    page = render_html(synthetic(300), "t")
    assert 'id="active-timeline"' in page
    assert "<title>64.0 MiB 16777216 torch.float32\nevents" in page
    assert "/work/model_" in page and "in layer" in page


def test_a_100k_event_history_is_summarised_into_a_small_page():
    snap = synthetic(100_000)
    layout = allocation_bands(snap)
    assert layout["small"] is not None and layout["small"]["count"] > 10_000
    assert sum(len(b["points"]) for b in layout["bands"]) <= 60_000
    page = render_html(snap, "big")
    assert len(page.encode()) < 4 * MiB, len(page)


def test_compare_reports_growth_and_shrinkage_by_site(data_dir):
    a = load_snapshot(data_dir / "small_snapshot.json")
    b = {**a, "segments": [dict(s, blocks=[dict(x) for x in s["blocks"]]) for s in a["segments"]]}
    grown = next(x for s in b["segments"] for x in s["blocks"] if x["state"] == "active_allocated")
    grown["state"] = "inactive"  # freed in B
    rows = compare_sites(a, b)
    assert len(rows) == 1 and rows[0]["change"] == -grown["size"]
    assert rows[0]["blocks_before"] - rows[0]["blocks_after"] == 1


def test_compare_from_the_command_line(run_cli, tmp_path, data_dir):
    out = tmp_path / "cmp.html"
    snap = str(data_dir / "small_snapshot.json")
    proc = run_cli("memory-summary", snap, "--compare", snap, "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "grew: nothing" in proc.stdout and "shrank: nothing" in proc.stdout
    assert 'id="compare"' in out.read_text()


# ---------------------------------------------------------------- a real browser
def _chromium():
    return next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
    )


def _png_pixels(data: bytes):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    idat = b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IDAT":
            idat += body
        else:
            chunks[kind] = body
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    rows, prev, stride = [], bytearray(width * bpp), width * bpp
    for y in range(height):
        f, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp : x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary (apt-get install chromium)")
def test_page_renders_the_timeline_in_headless_chromium(tmp_path):
    page = tmp_path / "page.html"
    # Only the timeline: it is then at the top of the page, where the screenshot looks.
    html = render_html(synthetic(3000), "browser check")
    start = html.index("<h2>Active memory timeline</h2>")
    end = html.index("<h2>Memory over time</h2>")
    page.write_text(html[: html.index("<h1>")] + html[start:end] + "</body></html>")
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            "--window-size=1300,700",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists(), proc.stderr[-2000:]
    width, height, rows = _png_pixels(shot.read_bytes())
    # The SVG sits below the heading and legend; count coloured (not white or grey) pixels.
    region = [px for row in rows[150:520] for px in row[30:1230]]
    coloured = [px for px in region if max(px) - min(px) > 40]
    assert len(coloured) > 0.05 * len(region), len(coloured)  # the bands are drawn
    assert len({(r // 16, g // 16, b // 16) for r, g, b in coloured}) >= 5  # in site colours


def test_compare_without_a_snapshot_is_refused(run_cli, data_dir):
    proc = run_cli("memory-summary", "--compare", str(data_dir / "small_snapshot.json"))
    assert proc.returncode == 2 and "--compare B needs a SNAPSHOT" in proc.stderr
