"""Fused elementwise chains: `gt.fuse` vs the same chain op by op, cupy, cupy.fuse, torch.

    .venv/bin/python -m profiling.bench_fused [--quick] [--out DIR]

Chains (fp16 in -> fp32 compute -> fp16 out):
- `a*x+b`            x [R, C], a and b Python scalars
- `gelu(a*x+b)`      exact (erf) GELU
- `norm`             (x - mean) / std * gamma + beta: mean/std column vectors [R, 1] (fp32),
                     gamma/beta row vectors [C] (fp32): 5 ops
- `gelu x.T`         `gelu(a*x+b)` on a transposed view (strided operand)

Bytes = every input read once + every output written once (the fused minimum); GB/s and
% of the same-run device-to-device copy ceiling. GPU impls: `gpu_tensor fused`,
`gpu_tensor unfused` (our eager ops), `cupy unfused`, `cupy.fuse`, `torch eager`,
`torch.compile` (when torch with CUDA is installed). The first call's time (trace + NVRTC
compile + load) is kept as `first_call_s`.

CPU (no GPU): the fused function evaluated with numpy on the cpu device against the same
chain written directly in numpy, labelled "(CPU)"; the % is of a same-run numpy copy.
"""

from __future__ import annotations

import time

import numpy as np

from profiling.harness import Suite

A, B = 1.5, -0.25
SQRT1_2 = 0.7071067811865476


def _gt():
    from gpu_tensor.creation import from_numpy
    from gpu_tensor.fusion import fuse
    from gpu_tensor.ops import elementwise as ew

    return from_numpy, fuse, ew


def _chains(fuse):
    @fuse
    def axpb(x, a, b):
        return (a * x + b).half()

    @fuse
    def gelu_axpb(x, a, b):
        return (a * x + b).gelu().half()

    @fuse
    def norm(x, mean, std, gamma, beta):
        return ((x - mean) / std * gamma + beta).half()

    return axpb, gelu_axpb, norm


def _host_data(rows, cols):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols), dtype=np.float32).astype(np.float16)
    xt_base = rng.standard_normal((cols, rows), dtype=np.float32).astype(np.float16)
    mean = rng.standard_normal((rows, 1), dtype=np.float32)
    std = rng.uniform(0.5, 2.0, (rows, 1)).astype(np.float32)
    gamma = rng.standard_normal(cols, dtype=np.float32)
    beta = rng.standard_normal(cols, dtype=np.float32)
    return x, xt_base, mean, std, gamma, beta


def _case_bytes(rows, cols):
    n = rows * cols
    vec = 4 * (2 * rows + 2 * cols)  # mean, std, gamma, beta read once
    return {"a*x+b": 4 * n, "gelu(a*x+b)": 4 * n, "norm": 4 * n + vec, "gelu x.T": 4 * n}


def main(argv=None):
    suite = Suite("fused", argv, description=__doc__)
    if suite.device == "cuda":
        _run_gpu(suite)
    else:
        _run_cpu(suite)
    return suite.finish()


# ----------------------------------------------------------------------------------- GPU
def _run_gpu(suite: Suite) -> None:
    cp = suite.cupy
    from_numpy, fuse, ew = _gt()
    from gpu_tensor import dtype as gtd

    axpb, gelu_axpb, norm = _chains(fuse)
    rows, cols = suite.choose((1 << 14, 1 << 14), (1 << 12, 1 << 12))

    def f32(t):
        return t.to(gtd.float32)

    def f16(t):
        return t.to(gtd.float16)

    x, xt_base, mean, std, gamma, beta = _host_data(rows, cols)
    dev = {k: from_numpy(v).to("cuda") for k, v in
           dict(x=x, xt=xt_base, mean=mean, std=std, gamma=gamma, beta=beta).items()}  # fmt: skip
    xT = dev["xt"].transpose(0, 1)
    nbytes = _case_bytes(rows, cols)

    ours = {
        "a*x+b": lambda: axpb(dev["x"], A, B),
        "gelu(a*x+b)": lambda: gelu_axpb(dev["x"], A, B),
        "norm": lambda: norm(dev["x"], dev["mean"], dev["std"], dev["gamma"], dev["beta"]),
        "gelu x.T": lambda: gelu_axpb(xT, A, B),
    }
    unfused = {  # our eager ops, one kernel each (casts included, as a user would write it)
        "a*x+b": lambda: f16(ew.add(ew.mul(f32(dev["x"]), A), B)),
        "gelu(a*x+b)": lambda: f16(ew.gelu(ew.add(ew.mul(f32(dev["x"]), A), B))),
        "norm": lambda: f16(
            ew.add(
                ew.mul(ew.div(ew.sub(f32(dev["x"]), dev["mean"]), dev["std"]), dev["gamma"]),
                dev["beta"],
            )
        ),
        "gelu x.T": lambda: f16(ew.gelu(ew.add(ew.mul(f32(xT), A), B))),
    }
    cx, cxt = cp.asarray(x), cp.asarray(xt_base).T
    cm, cs, cg, cb = (cp.asarray(v) for v in (mean, std, gamma, beta))
    from cupyx.scipy.special import erf

    def c_gelu(v):
        return 0.5 * v * (1 + erf(v * SQRT1_2))

    cupy_unfused = {
        "a*x+b": lambda: (A * cx.astype(cp.float32) + B).astype(cp.float16),
        "gelu(a*x+b)": lambda: c_gelu(A * cx.astype(cp.float32) + B).astype(cp.float16),
        "norm": lambda: ((cx.astype(cp.float32) - cm) / cs * cg + cb).astype(cp.float16),
        "gelu x.T": lambda: c_gelu(A * cxt.astype(cp.float32) + B).astype(cp.float16),
    }
    f_axpb = cp.fuse(lambda v: (A * v.astype(cp.float32) + B).astype(cp.float16))
    f_gelu = cp.fuse(lambda v: c_gelu(A * v.astype(cp.float32) + B).astype(cp.float16))
    f_norm = cp.fuse(lambda v, m, s, g, b: ((v.astype(cp.float32) - m) / s * g + b)
                     .astype(cp.float16))  # fmt: skip
    cupy_fused = {
        "a*x+b": lambda: f_axpb(cx),
        "gelu(a*x+b)": lambda: f_gelu(cx),
        "norm": lambda: f_norm(cx, cm, cs, cg, cb),
        "gelu x.T": lambda: f_gelu(cxt),
    }
    for case in ours:
        t0 = time.perf_counter()
        ours[case]()
        suite.sync()
        first = time.perf_counter() - t0
        suite.record(case, "gpu_tensor fused", suite.time(ours[case]), nbytes[case], "d2d",
                     first_call_s=first, kernels=1)  # fmt: skip
        suite.record(case, "gpu_tensor unfused", suite.time(unfused[case]), nbytes[case], "d2d")
        suite.record(case, "cupy unfused", suite.time(cupy_unfused[case]), nbytes[case], "d2d")
        suite.record(case, "cupy.fuse", suite.time(cupy_fused[case]), nbytes[case], "d2d")
    _torch_peers(suite, x, xt_base, mean, std, gamma, beta, nbytes)


def _torch_peers(suite, x, xt_base, mean, std, gamma, beta, nbytes) -> None:
    if not suite.has_torch_cuda:
        for impl in ("torch eager", "torch.compile"):
            for case in nbytes:
                suite.skip(case, impl, suite.peer_reason("torch_cuda"))
        return
    torch = suite.torch
    F = torch.nn.functional
    tx, txt = torch.from_numpy(x).cuda(), torch.from_numpy(xt_base).cuda().T
    tm, ts, tg, tb = (torch.from_numpy(v).cuda() for v in (mean, std, gamma, beta))

    def t_axpb(v):
        return (A * v.float() + B).half()

    def t_gelu(v):
        return F.gelu(A * v.float() + B).half()

    def t_norm(v, m, s, g, b):
        return ((v.float() - m) / s * g + b).half()

    eager = {"a*x+b": lambda: t_axpb(tx), "gelu(a*x+b)": lambda: t_gelu(tx),
             "norm": lambda: t_norm(tx, tm, ts, tg, tb), "gelu x.T": lambda: t_gelu(txt)}  # fmt: skip
    for case, fn in eager.items():
        suite.record(case, "torch eager", suite.time(fn), nbytes[case], "d2d")
    try:
        c_axpb, c_gelu, c_norm = (torch.compile(f) for f in (t_axpb, t_gelu, t_norm))
        compiled = {"a*x+b": lambda: c_axpb(tx), "gelu(a*x+b)": lambda: c_gelu(tx),
                    "norm": lambda: c_norm(tx, tm, ts, tg, tb), "gelu x.T": lambda: c_gelu(txt)}  # fmt: skip
        for case, fn in compiled.items():
            suite.record(case, "torch.compile", suite.time(fn, warmup=5), nbytes[case], "d2d")
    except Exception as exc:  # noqa: BLE001 - torch.compile needs a working toolchain
        for case in nbytes:
            suite.skip(case, "torch.compile", f"torch.compile failed: {type(exc).__name__}: {exc}")


# ----------------------------------------------------------------------------------- CPU
def _run_cpu(suite: Suite) -> None:
    from_numpy, fuse, _ = _gt()
    axpb, gelu_axpb, norm = _chains(fuse)
    from gpu_tensor.fusion.npmath import erf

    rows, cols = suite.choose((1 << 11, 1 << 11), (1 << 9, 1 << 10))
    x, xt_base, mean, std, gamma, beta = _host_data(rows, cols)
    t = {k: from_numpy(v) for k, v in
         dict(x=x, xt=xt_base, mean=mean, std=std, gamma=gamma, beta=beta).items()}  # fmt: skip
    xT = t["xt"].transpose(0, 1)
    nbytes = _case_bytes(rows, cols)

    def np_gelu(v):
        return 0.5 * v * (1 + erf(v * np.float32(SQRT1_2)))

    ours = {
        "a*x+b": lambda: axpb(t["x"], A, B),
        "gelu(a*x+b)": lambda: gelu_axpb(t["x"], A, B),
        "norm": lambda: norm(t["x"], t["mean"], t["std"], t["gamma"], t["beta"]),
        "gelu x.T": lambda: gelu_axpb(xT, A, B),
    }
    direct = {
        "a*x+b": lambda: (np.float32(A) * x.astype(np.float32) + np.float32(B)).astype(np.float16),
        "gelu(a*x+b)": lambda: np_gelu(np.float32(A) * x.astype(np.float32) + np.float32(B)).astype(
            np.float16
        ),
        "norm": lambda: ((x.astype(np.float32) - mean) / std * gamma + beta).astype(np.float16),
        "gelu x.T": lambda: np_gelu(
            np.float32(A) * xt_base.T.astype(np.float32) + np.float32(B)
        ).astype(np.float16),
    }
    for case in ours:
        label = f"{case} (CPU)"
        suite.record(label, "gpu_tensor fused (numpy eval, CPU)", suite.time(ours[case], sync="cpu",
                     repeat=suite.choose(10, 3)), nbytes[case], "host")  # fmt: skip
        suite.record(label, "numpy (CPU)", suite.time(direct[case], sync="cpu",
                     repeat=suite.choose(10, 3)), nbytes[case], "host")  # fmt: skip


if __name__ == "__main__":
    main()
