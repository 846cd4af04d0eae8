"""device='meta' against torch itself: shapes, strides, dtypes, reprs and error messages.

Skips when torch is not installed (the project's own venv has none); run it with a venv that
has torch: `PYTHONPATH=. <venv>/bin/python -m pytest tests/backends/test_meta_torch.py -q`.
"""

from __future__ import annotations

import pytest

import gpu_tensor as gt

torch = pytest.importorskip("torch", reason="torch is not installed: the meta parity tests need it")

CASES = [
    lambda m: m.ones(2, 3, device="meta"),
    lambda m: m.ones(2, 3, device="meta").t(),
    lambda m: m.ones(4, 6, device="meta")[1:, ::2],
    lambda m: m.ones(2, 1, 3, device="meta") + m.ones(4, 1, device="meta"),
    lambda m: m.ones(3, device="meta", dtype=m.int64) * 2.5,
    lambda m: m.ones(5, 4, 8, device="meta") @ m.ones(8, 2, device="meta"),
    lambda m: m.ones(4, 8, device="meta").sum(1, keepdim=True),
    lambda m: m.ones(4, 8, device="meta").argmax(0),
    lambda m: m.cat([m.ones(2, 3, device="meta")] * 2, 1),
    lambda m: m.ones(4, 8, device="meta").t().contiguous(),
    lambda m: m.ones(2, 3).t().to("meta"),
    lambda m: m.arange(5, device="meta"),
    lambda m: m.nn.Linear(3, 5, device="meta").weight,
    lambda m: m.nn.functional.conv2d(
        m.ones(2, 3, 10, 10, device="meta"), m.ones(5, 3, 2, 2, device="meta")
    ),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_metadata_and_repr_match_torch(case):
    g, t = CASES[case](gt), CASES[case](torch)
    assert tuple(g.shape) == tuple(t.shape) and g.stride() == t.stride()
    assert g.storage_offset() == t.storage_offset()
    assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    body = repr(g).replace("gpu_tensor.", "torch.").split(", grad_fn")[0]
    assert body == repr(t).split(", grad_fn")[0]


@pytest.mark.parametrize("read", ["cpu", "tolist", "item", "float", "bool"])
def test_errors_match_torch(read):
    def run(m):
        t = m.ones(1, device="meta")
        return {
            "cpu": t.cpu,
            "tolist": t.tolist,
            "item": t.item,
            "float": lambda: float(t),
            "bool": lambda: bool(t),
        }[read]()

    with pytest.raises(Exception) as theirs:
        run(torch)
    with pytest.raises(type(theirs.value)) as ours:
        run(gt)
    assert str(ours.value).split("!")[0] == str(theirs.value).split("!")[0]
