"""Benchmarks and the harness they share; see profiling/README.md.

`python -m profiling.bench_<name> [--quick] [--out DIR]` runs one benchmark,
`python -m profiling.run_all [--quick]` runs them all, `profiling/gpu_check.sh`
does a whole GPU reading in one command.
"""

__all__ = ["Suite", "Timing"]


def __getattr__(name):
    # Lazy, so `python -m profiling.run_all` does not pay for the harness's imports.
    if name in __all__:
        from . import harness

        return getattr(harness, name)
    raise AttributeError(f"module 'profiling' has no attribute {name!r}")
