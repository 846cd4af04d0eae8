"""GPU_TENSOR_ALLOC_CONF parsing (torch's PYTORCH_CUDA_ALLOC_CONF syntax)."""

from __future__ import annotations

import pytest

from gpu_tensor.memory.config import UNLIMITED, AllocatorConfig, parse_alloc_conf

MiB = 1 << 20


def test_defaults():
    c = parse_alloc_conf("")
    assert c.max_split_size == UNLIMITED and c.max_non_split_rounding == 20 * MiB
    assert c.garbage_collection_threshold == 0 and not c.release_on_miss and c.adaptive_segments
    assert not c.expandable_segments and c.divisions_for(5 * MiB) == 0


def test_options():
    c = parse_alloc_conf(
        "max_split_size_mb:128, garbage_collection_threshold:0.6,"
        "expandable_segments:True,release_on_miss:False,adaptive_segments:0,"
        "max_non_split_rounding_mb:64,release_lock_on_cudamalloc:True"
    )
    assert c.max_split_size == 128 * MiB and c.garbage_collection_threshold == 0.6
    assert c.expandable_segments and not c.release_on_miss and not c.adaptive_segments
    assert c.max_non_split_rounding == 64 * MiB


def test_divisions_list_form():
    c = parse_alloc_conf("roundup_power2_divisions:[1:4,4:2,>:8]")
    # A key K (MB) sets the intervals after the previous key up to the one starting at K.
    assert c.divisions_for(MiB) == 4
    assert c.divisions_for(3 * MiB) == 2 and c.divisions_for(5 * MiB) == 2
    assert c.divisions_for(9 * MiB) == 8
    assert c.divisions_for(1 << 40) == 8


@pytest.mark.parametrize(
    "text, match",
    [
        ("max_split_size_mb:10", ">= 20"),
        ("garbage_collection_threshold:1.5", r"\(0, 1\)"),
        ("roundup_power2_divisions:3", "powers of two"),
        ("expandable_segments:maybe", "True or False"),
        ("colour:blue", "unknown option 'colour'"),
        ("max_split_size_mb", "option:value"),
    ],
)
def test_bad_options_name_the_problem(text, match):
    with pytest.raises(ValueError, match=match):
        parse_alloc_conf(text)


def test_from_env(monkeypatch):
    monkeypatch.setenv("GPU_TENSOR_ALLOC_CONF", "max_split_size_mb:64")
    assert AllocatorConfig.from_env().max_split_size == 64 * MiB
