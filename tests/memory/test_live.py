"""Creation sites and live-block attribution."""

from __future__ import annotations

import sys

import pytest

from gpu_tensor.memory import live
from gpu_tensor.memory.allocator import CachingAllocator
from gpu_tensor.memory.config import parse_alloc_conf
from gpu_tensor.memory.raw import HostRawSource

MiB = 1 << 20


@pytest.fixture(autouse=True)
def restore_switch():
    yield
    live.set_enabled(None)


def make():
    return CachingAllocator(HostRawSource(64 * MiB), 2, config=parse_alloc_conf(""))


def test_site_is_the_user_line_and_blocks_are_listed_largest_first():
    live.set_enabled(True)
    a = make()
    small = a.malloc(1000)
    line = small_line = __import__("inspect").currentframe().f_lineno - 1
    big = a.malloc(5 * MiB)
    big.tag = {"shape": (5, 1024, 256), "dtype": "float32"}
    rows = live.live_blocks(a)
    assert [r["size"] for r in rows] == [big.size, small.size]
    assert rows[0]["shape"] == (5, 1024, 256) and rows[0]["dtype"] == "float32"
    assert rows[0]["device"] == 2 and rows[0]["kind"] == "tensor"
    assert (
        rows[1]["site"]
        == f"{__file__}:{small_line} in {test_site_is_the_user_line_and_blocks_are_listed_largest_first.__name__}"
    )
    assert rows[1]["shape"] is None and "untagged" in rows[1]["kind"]
    assert line == small_line
    assert live.live_blocks(a, limit=1) == rows[:1]


def test_switch_off(monkeypatch):
    monkeypatch.setenv("GPU_TENSOR_RECORD_SITES", "0")
    live.set_enabled(None)
    assert not live.enabled()
    a = make()
    b = a.malloc(100)
    assert b.site is None and live.live_blocks(a)[0]["site"] is None
    live.set_enabled(True)
    assert a.malloc(100).site[0] == __file__


def test_format_size():
    assert live.format_size(512) == "512.00 B"
    assert live.format_size(3 * MiB // 2) == "1.50 MiB"


def _compiled(filename: str, src: str, **names):
    """Functions defined by `src` as if they lived in `filename` (frames carry its name)."""
    scope = dict(names)
    exec(compile(src, filename, "exec"), scope)
    return scope


def test_site_is_the_nearest_frame_outside_the_package():
    import inspect
    import os
    from functools import partial

    import gpu_tensor

    inside = os.path.join(os.path.dirname(os.path.abspath(gpu_tensor.__file__)), "_fake.py")
    outside = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_user_code.py")
    gt_side = _compiled(inside, "def enter(f):\n    return f()\n", live=live)
    grab = _compiled(inside, "def grab():\n    return live.capture_site(1)\n", live=live)["grab"]
    user = _compiled(outside, "def callback(enter, grab):\n    return enter(grab)\n")
    enter = gt_side["enter"]
    # the gpu_tensor frames are skipped, whatever their depth, up to the first user frame
    site = enter(partial(enter, grab))  # (partial: a C call, no frame of its own)
    line = inspect.currentframe().f_lineno - 1
    assert site == (__file__, line, "test_site_is_the_nearest_frame_outside_the_package")
    # a user callback between two gpu_tensor frames is the site, not the test calling it
    assert enter(partial(user["callback"], enter, grab)) == (outside, 2, "callback")


def test_malloc_sites_as_capture_site_does_and_skips_the_frames_it_is_told_are_inside():
    """malloc runs capture_site's walk written out: files met for the first time are
    classified (a new gpu_tensor file is skipped), and `inside` frames are not looked at,
    whatever file they are in (here a user file, to show it)."""
    import inspect
    import os

    import gpu_tensor

    live.set_enabled(True)
    a = make()
    inside = os.path.join(os.path.dirname(os.path.abspath(gpu_tensor.__file__)), "_new_fake.py")
    outside = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_user_lib.py")
    src = "def call(a, n, inside=0):\n    return a.malloc(n, 0, inside), capture(1)\n"
    gt_call = _compiled(inside, src, capture=live.capture_site)["call"]
    user_call = _compiled(outside, src, capture=live.capture_site)["call"]
    assert inside not in live.INSIDE
    block, site = gt_call(a, 100)
    line = inspect.currentframe().f_lineno - 1
    here = (
        __file__,
        line,
        "test_malloc_sites_as_capture_site_does_and_skips_the_frames_it_is_told_are_inside",
    )
    assert block.site == site == here and inside in live.INSIDE
    block, site = user_call(a, 100)
    assert block.site == site == (outside, 2, "call")
    block, _ = user_call(a, 100, inside=1)  # the frame is passed over unread
    assert block.site == (__file__, inspect.currentframe().f_lineno - 1, here[2])


def test_emulated_cuda_results_are_sited_at_the_user_line():
    """The emulated device's mallocs start the site search above its own frames (_raw and
    empty, and _into's two): a result made by a factory, an op or a direct call of the
    backend's `empty` or `elementwise` is still sited at the calling line of this file."""
    import sys

    import numpy as np

    import gpu_tensor as gt
    from gpu_tensor.backends import get_backend
    from gpu_tensor.memory import registry

    live.set_enabled(True)
    here = sys._getframe()
    x = gt.ones(4, 8, device="cuda")
    lines = [here.f_lineno - 1]
    y = x + x
    lines.append(here.f_lineno - 1)
    backend = get_backend(gt.device("cuda"))
    made, _ = backend.empty((3, 5), np.dtype(np.float32))
    lines.append(here.f_lineno - 1)
    a = np.ones((7, 2), np.float32)
    summed = backend.elementwise("add", np.add, (a, a), None)
    lines.append(here.f_lineno - 1)
    name = here.f_code.co_name
    sites = [t.untyped_storage()._block.site for t in (x, y)]
    assert sites == [(__file__, line, name) for line in lines[:2]]
    rows = live.live_blocks(registry.get_allocator(0, "emulated"))
    for shape, line in (((3, 5), lines[2]), ((7, 2), lines[3])):
        assert [r["site"] for r in rows if r["shape"] == shape] == [f"{__file__}:{line} in {name}"]
    del made, summed


def _sites_of_the_stack():
    """(decode_site of each frame's code and f_lasti, what f_lineno gives) for the caller's
    whole stack, pytest's frames included."""
    from gpu_tensor.memory.block import decode_site

    pairs = []
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        pairs.append(
            (decode_site(code, frame.f_lasti), (code.co_filename, frame.f_lineno, code.co_name))
        )
        frame = frame.f_back
    return pairs


def test_a_site_stored_as_code_and_offset_reads_as_f_lineno_gives_it():
    """malloc stores (code, f_lasti) and Block.site works the line out when read: it is the
    line f_lineno gives, on every frame of a real stack, in a loop and in a comprehension."""
    pairs = _sites_of_the_stack()
    assert len(pairs) > 10
    for _ in range(2):
        pairs += _sites_of_the_stack()
    pairs += [p for _ in range(2) for p in _sites_of_the_stack()]
    for decoded, expected in pairs:
        assert decoded == expected
    a = make()
    a.free(a.malloc(100))  # this file's first sight (in a random order) is decoded at once
    block = a.malloc(100)
    line = sys._getframe(0).f_lineno - 1
    assert type(block._site[0]) is not str  # stored undecoded, decoded on first read
    name = "test_a_site_stored_as_code_and_offset_reads_as_f_lineno_gives_it"
    assert block.site == (__file__, line, name)
    assert block._site == block.site  # kept decoded
