"""The cost of the argument checks (gpu_tensor/_args.py) on well-formed calls: factories,
views, fill_, integer scalars, and the widened reductions, against torch in the same run.

    .venv/bin/python -m profiling.bench_args [--quick] [--out DIR]

To see what the checks add, run it on the tree before them too (PYTHONPATH=old tree) and
compare the medians: the note of issue 18 has both runs.
"""

from __future__ import annotations

from profiling.harness import Suite


def _cases(m, x, i8):
    """(name, fn) over module `m` (gpu_tensor or torch): the same calls for both."""
    return [
        ("empty(16)", lambda: m.empty(16)),
        ("ones(2, 3)", lambda: m.ones(2, 3)),
        ("zeros((4, 4))", lambda: m.zeros((4, 4))),
        ("full((2,), 1.0)", lambda: m.full((2,), 1.0)),
        ("arange(10)", lambda: m.arange(10)),
        ("linspace(0, 1, 5)", lambda: m.linspace(0, 1, 5)),
        ("tensor([1, 2, 3])", lambda: m.tensor([1, 2, 3])),
        ("x.view(4, -1)", lambda: x.view(4, -1)),
        ("x.reshape((2, 8))", lambda: x.reshape((2, 8))),
        ("x.expand(3, 16)", lambda: x.expand(3, 16)),
        ("x.fill_(1.0)", lambda: x.fill_(1.0)),
        ("int64 + 3", lambda: i8 + 3),
        ("x.var()", lambda: x.var()),
        ("x.cumsum(0)", lambda: x.cumsum(0)),
    ]


def _time(suite, fn):
    return suite.time(fn, sync="cpu", warmup=50, repeat=suite.choose(41, 21), number=None)


def main(argv=None):
    suite = Suite("args", argv, description=__doc__)
    import gpu_tensor as gt

    ours = _cases(gt, gt.zeros(16), gt.zeros(16, dtype=gt.int64))
    peers = {}
    if suite.has_torch:
        torch = suite.torch
        peers = dict(_cases(torch, torch.zeros(16), torch.zeros(16, dtype=torch.int64)))
    else:
        suite.skip("all cases", "torch", suite.peer_reason("torch"))
    for name, fn in ours:
        t = _time(suite, fn)
        pt = _time(suite, peers[name]) if name in peers else None
        suite.record_vs(name, "gpu_tensor (cpu)", t, "torch (cpu)", pt)
    return suite.finish()


if __name__ == "__main__":
    main()
