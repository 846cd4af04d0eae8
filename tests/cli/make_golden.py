"""Regenerate the golden text outputs in data/ from the snapshot fixtures.

Run after a deliberate change to the text view, then read the diff before keeping it:
    .venv/bin/python tests/cli/make_golden.py
"""

from __future__ import annotations

from pathlib import Path

from gpu_tensor.cli.snapshot_load import load_snapshot
from gpu_tensor.cli.snapshot_view import render_text

DATA = Path(__file__).parent / "data"
PAIRS = [
    ("small_snapshot.json", "small_snapshot.golden.txt"),
    ("torch_snapshot.pickle", "torch_snapshot.golden.txt"),
]


def main() -> None:
    for snapshot, golden in PAIRS:
        text = render_text(load_snapshot(DATA / snapshot), label=str(DATA / snapshot))
        (DATA / golden).write_text("Segment map" + text.split("\n\nSegment map", 1)[1])
        print(f"wrote {DATA / golden}")


if __name__ == "__main__":
    main()
