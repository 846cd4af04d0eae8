"""gpu_tensor._result_strides against torch's own answers: result strides of unary, binary
(a Python number among them) and three-operand elementwise ops over a generated grid of
operand layouts, recorded from torch 2.13 by tests/data/make_result_strides.py (CI has no
torch), plus hand-worked cases of the rule's branches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_tensor._result_strides import c_strides, dim_order, result_strides

_DATA = json.loads((Path(__file__).parent / "data" / "result_strides_torch.json").read_text())


def _operands(case):
    return [((), ()) if o == "num" else (tuple(o[0]), tuple(o[1])) for o in case["ops"]]


def test_grid_agrees_with_torch():
    cases = _DATA["cases"]
    assert len(cases) > 1000 and _DATA["torch"].startswith("2.13")
    wrong = []
    for case in cases:
        shape, expected = (tuple(v) for v in case["out"])
        got = result_strides(shape, _operands(case))
        if got != expected:
            wrong.append((case["ops"], expected, got))
    assert not wrong, wrong[:5]


def test_grid_covers_the_branches():
    """The grid has every rank 0-5, numbers, three operands, broadcasts, overlaps."""
    ranks = {len(c["out"][0]) for c in _DATA["cases"]}
    assert ranks == {0, 1, 2, 3, 4, 5}
    assert any("num" in c["ops"] for c in _DATA["cases"])
    assert any(c["kind"] == "ternary" for c in _DATA["cases"])
    flat = [o for c in _DATA["cases"] for o in c["ops"] if o != "num"]
    assert any(0 in o[1] and 1 not in o[0] for o in flat)  # an expanded operand
    assert any(len(o[1]) > 1 and len(set(o[1])) < len(o[1]) and 0 not in o[1] for o in flat)


@pytest.mark.parametrize(
    "shape, operands, expected",
    [
        ((6, 4), [((6, 4), (1, 6))], (1, 6)),  # a.t().exp(): the input's strides
        ((6, 4), [((6, 4), (1, 6)), ((), ())], (1, 6)),  # a.t() * 2.0: sorted, same order
        ((6, 4), [((6, 4), (1, 6)), ((6, 4), (4, 1))], (1, 6)),  # the first operand decides
        ((6, 4), [((6, 4), (4, 1)), ((6, 4), (1, 6))], (4, 1)),
        (
            (4, 3, 5, 6),
            [((4, 3, 5, 6), (90, 1, 18, 3)), ((4, 3, 5, 6), (90, 30, 6, 1))],
            (90, 1, 18, 3),
        ),  # fmt: skip
        ((5, 4, 6, 3), [((5, 4, 6, 3), (6, 90, 1, 30))], (6, 90, 1, 30)),
        ((4, 3), [((4, 3), (12, 2))], (3, 1)),  # a[:, ::2]: not dense, sorted: C order
        ((2, 3), [((2, 1), (1, 1)), ((3,), (1,))], (3, 1)),  # broadcasts: 0 strides skipped
        ((3, 2), [((3, 2), (1, 3)), ((3, 1), (1, 1))], (1, 3)),
        ((), [((), ())], ()),
    ],
)
def test_cases_worked_by_hand(shape, operands, expected):
    assert result_strides(shape, operands) == expected


def test_dim_order():
    assert dim_order((6, 4), (4, 1)) is None
    assert dim_order((6, 4), (1, 6)) == (1, 0)
    assert dim_order((4, 3, 5, 6), (90, 1, 18, 3)) == (0, 2, 3, 1)
    assert dim_order((5, 1, 4), (1, 7, 5)) == (2, 1, 0)  # the size-1 dim keeps its place
    assert dim_order((0, 3), (1, 0)) is None
    assert c_strides((2, 0, 3)) == (3, 3, 1)
