"""Records torch's result strides of elementwise ops over a generated grid of operand layouts
into result_strides_torch.json (tests/test_result_strides.py checks gpu_tensor's rule against
it; CI has no torch). Run with torch's python: /work/torchenv/bin/python
tests/data/make_result_strides.py (deterministic: seeded)."""

import json
import random
from pathlib import Path

import torch


def _c(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.insert(0, acc)
        acc *= max(n, 1)
    return out


def _layout(rng, shape):
    """Strides for an operand of `shape`: one of the ways views come about."""
    nd = len(shape)
    kind = rng.choice(["c", "c", "perm", "perm", "slice", "expand", "cl", "overlap", "perm_slice"])
    if kind == "c" or nd == 0:
        return _c(shape)
    if kind in ("perm", "perm_slice"):
        perm = list(range(nd))
        rng.shuffle(perm)
        inner = [shape[d] for d in perm]
        st = _c(inner)
        if kind == "perm_slice":
            steps = [rng.choice([1, 2, 3]) for _ in inner]
            st = _c([n * s for n, s in zip(inner, steps, strict=True)])
            st = [a * s for a, s in zip(st, steps, strict=True)]
        out = [0] * nd
        for i, d in enumerate(perm):
            out[d] = st[i]
        return out
    if kind == "slice":
        steps = [rng.choice([1, 2, 3]) for _ in shape]
        st = _c([n * s for n, s in zip(shape, steps, strict=True)])
        return [a * s for a, s in zip(st, steps, strict=True)]
    if kind == "expand":
        st = _c(shape)
        return [0 if rng.random() < 0.5 else s for s in st]
    if kind == "cl" and nd in (4, 5):
        order = [1, 3, 2, 0] if nd == 4 else [1, 4, 3, 2, 0]
        out, acc = [0] * nd, 1
        for d in order:
            out[d] = acc
            acc *= max(shape[d], 1)
        return out
    return [rng.choice([0, 1, 2, 3, 6]) for _ in shape]  # overlapping or odd


def _make(shape, strides):
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if n > 0)
    base = torch.zeros(max(span, 1))
    return torch.as_strided(base, shape, strides)


def _operand_shape(rng, shape):
    if rng.random() < 0.6:
        return list(shape)
    drop = rng.randint(0, len(shape))
    return [1 if rng.random() < 0.4 else n for n in shape[drop:]]


def main():
    rng = random.Random(23)
    cases = []
    fixed = [  # the issue's own cases (a: 4x6, b: 4x3x5x6)
        ("unary", [[[6, 4], [1, 6]]]),
        ("binary", [[[6, 4], [1, 6]], [[6, 4], [1, 6]]]),
        ("binary", [[[6, 4], [1, 6]], "num"]),
        ("binary", [[[6, 4], [1, 6]], [[6, 4], [4, 1]]]),
        ("unary", [[[4, 3, 5, 6], [90, 1, 18, 3]]]),
        ("binary", [[[4, 3, 5, 6], [90, 1, 18, 3]], [[4, 3, 5, 6], [90, 1, 18, 3]]]),
        ("binary", [[[4, 3, 5, 6], [90, 1, 18, 3]], [[4, 3, 5, 6], [90, 30, 6, 1]]]),
        ("binary", [[[4, 3, 5, 6], [90, 30, 6, 1]], [[4, 3, 5, 6], [90, 1, 18, 3]]]),
        ("unary", [[[5, 4, 6, 3], [6, 90, 1, 30]]]),
        ("unary", [[[4, 3], [6, 2]]]),
    ]
    for kind, ops in fixed:
        cases.append({"kind": kind, "ops": ops})
    for _ in range(1200):
        nd = rng.choice([0, 1, 2, 2, 3, 3, 4, 4, 5])
        shape = [rng.choice([1, 1, 2, 3, 4, 5]) for _ in range(nd)]
        if rng.random() < 0.02 and nd:
            shape[rng.randrange(nd)] = 0
        kind = rng.choice(["unary", "binary", "binary", "binary", "ternary"])
        n = {"unary": 1, "binary": 2, "ternary": 3}[kind]
        ops = []
        for i in range(n):
            if kind == "binary" and i == 1 and rng.random() < 0.15:
                ops.append("num")
                continue
            s = list(shape) if i == 0 and kind == "unary" else _operand_shape(rng, shape)
            ops.append([s, _layout(rng, s)])
        cases.append({"kind": kind, "ops": ops})
    out = []
    for case in cases:
        tensors = [2.0 if o == "num" else _make(*o) for o in case["ops"]]
        if case["kind"] == "unary":
            r = tensors[0].exp()
        elif case["kind"] == "binary":
            r = tensors[0] + tensors[1] if not isinstance(tensors[1], float) else tensors[0] * 2.0
        else:
            r = torch.addcmul(*tensors)
        case["out"] = [list(r.shape), list(r.stride())]
        out.append(case)
    path = Path(__file__).with_name("result_strides_torch.json")
    path.write_text(json.dumps({"torch": torch.__version__, "cases": out}, separators=(",", ":")))
    print(len(out), "cases ->", path)


if __name__ == "__main__":
    main()
