"""The README's training tour runs as written (on the emulated cuda device here)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _training_block() -> str:
    text = README.read_text()
    start = text.index("Training reads like torch code")
    match = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert match, "the README's training tour has no python block"
    return match.group(1)


def test_readme_training_tour_runs():
    code = _training_block()
    out = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        exec(compile(code, str(README), "exec"), scope)  # noqa: S102 - our own README
    assert scope["loss"].item() == scope["loss"].item()  # a number, not nan
    assert scope["sched"].last_epoch == 8
    assert "Conv2d(3, 16, kernel_size=(3, 3)" in out.getvalue()
    assert "memory summary" in out.getvalue()
