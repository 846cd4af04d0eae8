"""The `gpu-tensor` command line: `memory-summary` (live GPUs, saved snapshots, --html,
--run) and `demo`. Nothing here imports cupy at module level."""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with argv (default sys.argv[1:]); returns the exit code."""
    from .main import main as _main

    return _main(argv)
