"""The issue-28 layers, one training step each (forward + backward), against torch on the
same device in the same run, and the price of torch's single node names.

    .venv/bin/python -m profiling.bench_layers [--quick] [--out DIR]

Cases: an LSTM (2 layers, bidirectional, batch_first) over a (B, T, I) batch; a
TransformerEncoderLayer over (B, T, E); scaled_dot_product_attention with a causal mask.
`ratio` is ours over torch's (torch runs its fused CPU kernels, we run composed ops: on cpu
the recurrent step is one numpy evaluation per fused gate function). The "composite node"
rows time F.mse_loss forward + backward with its MseLossBackward0 node against the same
composition recorded op by op (what it cost before), on a tiny input where the overhead
shows.
"""

from __future__ import annotations

import numpy as np

from profiling.harness import Suite


def _shapes(suite):
    # (batch, time, width): small enough for the cpu, large enough that math shows
    return suite.choose([(16, 32, 64), (32, 64, 128)], [(16, 32, 64)])


def _lstm(lib, dev, b, t, w):
    lib.manual_seed(0)
    m = lib.nn.LSTM(w, w, num_layers=2, batch_first=True, bidirectional=True).to(dev)
    x = lib.tensor(
        np.random.default_rng(0).standard_normal((b, t, w)).astype(np.float32), device=dev
    )

    def step():
        out, _ = m(x)
        out.square().mean().backward()

    return step


def _encoder(lib, dev, b, t, w):
    lib.manual_seed(0)
    m = lib.nn.TransformerEncoderLayer(w, 4, 2 * w, dropout=0.0, batch_first=True).to(dev)
    x = lib.tensor(
        np.random.default_rng(0).standard_normal((b, t, w)).astype(np.float32), device=dev
    )

    def step():
        m(x).square().mean().backward()

    return step


def _sdpa(lib, dev, b, t, w):
    rng = np.random.default_rng(0)
    q, k, v = (
        lib.tensor(
            rng.standard_normal((b, 4, t, w // 4)).astype(np.float32),
            device=dev,
            requires_grad=True,
        )
        for _ in range(3)
    )

    def step():
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.square().mean().backward()

    return step


CASES = {
    "lstm 2x bidirectional": _lstm,
    "transformer encoder layer": _encoder,
    "sdpa causal": _sdpa,
}


def _run_layers(suite):
    import gpu_tensor as gt

    dev = "cuda" if suite.has_cupy_gpu else "cpu"
    for name, make in CASES.items():
        for shape in _shapes(suite):
            case = f"{name} B,T,W={shape}"
            ours = suite.time(make(gt, dev, *shape), sync=dev, warmup=2, repeat=suite.choose(7, 3))
            ratio = None
            if suite.has_torch:
                torch_dev = "cuda" if suite.has_torch_cuda else "cpu"
                theirs = suite.time(
                    make(suite.torch, torch_dev, *shape),
                    sync="cpu",
                    warmup=2,
                    repeat=suite.choose(7, 3),
                )
                suite.record(case, f"torch ({torch_dev})", seconds=theirs)
                ratio = round(ours.median / theirs.median, 2)
            else:
                suite.skip(case, "torch", suite.peer_reason("torch"))
            suite.record(case, f"gpu_tensor ({dev})", seconds=ours, ratio=ratio)


def _composite_cost(suite):
    import gpu_tensor as gt
    import gpu_tensor.nn.functional as F

    x = gt.randn(8, 4, requires_grad=True)
    y = gt.randn(8, 4)

    def named():
        F.mse_loss(x, y).backward()

    def op_by_op():
        d = x - y
        (d * d).mean().backward()

    for label, fn in (("MseLossBackward0 node", named), ("op by op", op_by_op)):
        suite.record(
            "composite node: mse_loss fwd+bwd (8x4)",
            label,
            seconds=suite.time(fn, sync="cpu", warmup=5, repeat=suite.choose(20, 7)),
        )


def main(argv=None):
    suite = Suite("layers", argv, description=__doc__)
    _composite_cost(suite)
    _run_layers(suite)
    return suite.finish()


if __name__ == "__main__":
    main()
