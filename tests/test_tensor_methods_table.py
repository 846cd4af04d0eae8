"""Tensor's methods come from one table (gpu_tensor/_tensor_methods.py): merging the second
table that ops/_more.py used to supply lost no method, and every attribute outside the
class body is a row of the table."""

from __future__ import annotations

from pathlib import Path

import gpu_tensor as gt
from gpu_tensor import _tensor_methods

BEFORE = Path(__file__).with_name("data") / "tensor_dir_35a3875.txt"


def _before() -> set[str]:
    lines = BEFORE.read_text().splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def test_no_method_was_lost():
    lost = sorted(_before() - set(dir(gt.Tensor)))
    assert not lost, f"Tensor lost these attributes: {lost}"


def test_the_method_set_is_unchanged():
    """Adding a method on purpose: add its name to tests/data/tensor_dir_35a3875.txt too."""
    assert set(dir(gt.Tensor)) == _before()


def test_every_attribute_outside_the_class_body_is_a_row():
    from gpu_tensor._tensor import Tensor

    rows = _tensor_methods.METHODS
    for name, value in rows.items():
        assert Tensor.__dict__[name] is value, name
    assert len(rows) > 550  # the whole table, the op modules' breadth included
    assert {
        "hypot",
        "nansum",
        "det",
        "index_add",
        "frexp",
        "hypot_",
        "greater",
        "fill_diagonal_",
        "is_sparse",
    } <= set(rows)


def test_the_in_place_lists_do_not_overlap():
    """A row's in-place method comes from the op table (ops/elementwise.INPLACE); naming it in
    ops/_inplace's lists too would bind and record it a second way that first-wins hides."""
    from gpu_tensor.ops import _inplace
    from gpu_tensor.ops import elementwise as ew

    twice = set(ew.INPLACE) & set(_inplace.INPLACE_GRAD + _inplace.INPLACE_NOGRAD)
    assert not twice, sorted(twice)
    assert set(ew.INPLACE_GRAD) <= set(ew.INPLACE)
    assert {"tan", "erf", "mul", "lerp"} <= set(ew.INPLACE_GRAD)
    assert "bitwise_and" in ew.INPLACE and "bitwise_and" not in ew.INPLACE_GRAD
