"""Seeded random numbers on cpu: gpu_tensor's torch-stream samplers (torch's mt19937 and its
transforms, _torch_samplers.py) against torch itself and against numpy's generator (the
path gpu_tensor used before it drew torch's numbers), same sizes, same run.

    .venv/bin/python -m profiling.bench_random_streams [--quick] [--out DIR]

(torch is found as the harness finds it; without it those rows are skipped.)
"""

from __future__ import annotations

import numpy as np

from profiling.harness import Suite

N = 1 << 20


def _time(suite, fn):
    return suite.time(fn, sync="cpu", warmup=1, repeat=suite.choose(9, 3), number=None)


def _cases(m):
    """The draws, by gpu_tensor or torch (`m`): the same calls in both."""
    return {
        "rand(1M) float32": lambda: m.rand(N),
        "rand(1M) float64": lambda: m.rand(N, dtype=m.float64),
        "randn(1M) float32": lambda: m.randn(N),
        "randn(1M) float64": lambda: m.randn(N, dtype=m.float64),
        "randint(0, 10, 1M)": lambda: m.randint(0, 10, (N,)),
        "bernoulli_(0.5) 1M": lambda: m.empty(N).bernoulli_(0.5),
        "randperm(1M)": lambda: m.randperm(N),
    }


def main(argv=None):
    suite = Suite("random_streams", argv, description=__doc__)
    import gpu_tensor as gt

    gen = np.random.default_rng(0)
    ours = _cases(gt)
    numpy_path = {  # numpy's draws, cast as the old factories did
        "rand(1M) float32": lambda: gen.random(N).astype(np.float32),
        "rand(1M) float64": lambda: gen.random(N),
        "randn(1M) float32": lambda: gen.standard_normal(N).astype(np.float32),
        "randn(1M) float64": lambda: gen.standard_normal(N),
        "randint(0, 10, 1M)": lambda: gen.integers(0, 10, N),
        "bernoulli_(0.5) 1M": lambda: (gen.random(N) < 0.5).astype(np.float32),
        "randperm(1M)": lambda: gen.permutation(N),
    }
    peers = _cases(suite.torch) if suite.has_torch else {}
    if not suite.has_torch:
        suite.skip("torch rows", "torch", suite.peer_reason("torch"))
    for name, fn in ours.items():
        t = _time(suite, fn)
        nt = _time(suite, numpy_path[name])
        suite.record(name, "numpy generator (old path)", seconds=nt)
        pt = _time(suite, peers[name]) if name in peers else None
        suite.record_vs(name, "gpu_tensor (cpu)", t, "torch (cpu)", pt)
    return suite.finish()


if __name__ == "__main__":
    main()
