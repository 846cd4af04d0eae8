"""Dynamic int8 Linear vs fp32 and fp16 Linear: time and error, beside torch.

    .venv/bin/python -m profiling.bench_quant [--quick] [--out DIR]

A Linear of 4096 x 4096 (512 x 512 under --quick) at batch 1, 32 and 512 (1, 32, 128 quick):
- `gpu_tensor fp32 Linear` / `fp16 Linear`: F.linear on the float layer (weights cast);
- `gpu_tensor int8 dynamic Linear`: the layer after gt.ao.quantization.quantize_dynamic
  (per call: min/max, qparams, quantize, int8 x int8 -> int32 product, fused epilogue). On a
  GPU the product is cuBLAS gemmEx (int8 tensor cores); on cpu, float64 BLAS (exact);
- `torch fp32 Linear` and `torch dynamic int8 Linear` (fbgemm) where torch is installed: on
  cpu only; torch's dynamic quantized Linear has no CUDA kernel.
Each row carries GFLOP/s (2*M*N*K per call) and the error against the fp32 output of its own
library: max |y - y_fp32| / max |y_fp32| (`max_rel_err`). Timed with CUDA events on a GPU,
perf_counter on cpu. fp16 on cpu is skipped: numpy has no float16 BLAS (it would time a
scalar loop, not the layer).
"""

from __future__ import annotations

import warnings

import numpy as np

from profiling.harness import Suite

FULL = (4096, 4096, (1, 32, 512))  # in, out, batches
QUICK = (512, 512, (1, 32, 128))


def _layer(features_in, features_out, seed=0):
    rng = np.random.default_rng(seed)
    bound = 1 / np.sqrt(features_in)  # torch's default Linear init range
    w = rng.uniform(-bound, bound, (features_out, features_in)).astype(np.float32)
    b = rng.uniform(-bound, bound, features_out).astype(np.float32)
    return w, b


def _err(y, ref) -> float:
    y, ref = np.asarray(y, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30))


def _record(suite, case, impl, fn, sync, flops, err):
    """Times fn and records its row: GFLOP/s from the case's flops, and the relative error
    against the fp32 reference (0.0 for the reference itself)."""
    t = suite.time(fn, sync=sync, warmup=1, repeat=suite.choose(7, 3))
    suite.record(case, impl, t, gflops=round(flops / t.median / 1e9, 2), max_rel_err=round(err, 6))


def _gt_rows(suite, w, b, batches, device, sync):
    import gpu_tensor as gt
    import gpu_tensor.nn.functional as F

    lin = gt.nn.Linear(w.shape[1], w.shape[0])
    with gt.no_grad():
        lin.weight.copy_(gt.from_numpy(w))
        lin.bias.copy_(gt.from_numpy(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation texts, which gpu_tensor repeats
        q = gt.ao.quantization.quantize_dynamic(
            gt.nn.Sequential(lin), {gt.nn.Linear}, dtype=gt.qint8
        ).to(device)
    w32, b32 = lin.weight.detach().to(device), lin.bias.detach().to(device)
    w16, b16 = w32.half(), b32.half()
    rng = np.random.default_rng(1)
    for m in batches:
        case = f"Linear {w.shape[1]}x{w.shape[0]}, batch {m}"
        flops = 2 * m * w.shape[0] * w.shape[1]
        x = gt.from_numpy(rng.standard_normal((m, w.shape[1])).astype(np.float32)).to(device)
        with gt.no_grad():
            ref = F.linear(x, w32, b32).cpu().numpy()
            impl = "gpu_tensor fp32 Linear"
            _record(suite, case, impl, lambda x=x: F.linear(x, w32, b32), sync, flops, 0.0)
            if device == "cuda":
                x16 = x.half()
                y16 = F.linear(x16, w16, b16).float().cpu().numpy()
                fn = lambda x16=x16: F.linear(x16, w16, b16)  # noqa: E731
                _record(suite, case, "gpu_tensor fp16 Linear", fn, sync, flops, _err(y16, ref))
            else:
                suite.skip(case, "gpu_tensor fp16 Linear", "cpu: numpy has no float16 BLAS")
            yq = q(x).cpu().numpy()
            impl = "gpu_tensor int8 dynamic Linear"
            _record(suite, case, impl, lambda x=x: q(x), sync, flops, _err(yq, ref))


def _torch_rows(suite, w, b, batches):
    torch = suite.torch
    lin = torch.nn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
        lin.bias.copy_(torch.from_numpy(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.ao.quantization.quantize_dynamic(
            torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8
        )
    rng = np.random.default_rng(1)
    for m in batches:
        case = f"Linear {w.shape[1]}x{w.shape[0]}, batch {m}"
        flops = 2 * m * w.shape[0] * w.shape[1]
        x = torch.from_numpy(rng.standard_normal((m, w.shape[1])).astype(np.float32))
        with torch.no_grad():
            ref = lin(x).numpy()
            _record(suite, case, "torch fp32 Linear (cpu)", lambda x=x: lin(x), "cpu", flops, 0.0)
            yq = q(x).numpy()
            impl = "torch dynamic int8 Linear (cpu, fbgemm)"
            _record(suite, case, impl, lambda x=x: q(x), "cpu", flops, _err(yq, ref))


def main(argv=None):
    suite = Suite("quant", argv, description=__doc__)
    features_in, features_out, batches = suite.choose(FULL, QUICK)
    w, b = _layer(features_in, features_out)
    gpu = suite.device == "cuda"
    _gt_rows(suite, w, b, batches, "cuda" if gpu else "cpu", "cuda" if gpu else "cpu")
    if suite.has_torch:
        _torch_rows(suite, w, b, batches)
    else:
        suite.skip(f"Linear {features_in}x{features_out}", "torch", suite.peer_reason("torch"))
    return suite.finish()


if __name__ == "__main__":
    main()
