"""ARCHITECTURE.md is the map a newcomer reads: its layer table must be the one
tests/test_layering.py enforces, and nothing in the repository points to a design page that
is not in it."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "ARCHITECTURE.md"


def _layers() -> list[list[str]]:
    tree = ast.parse((ROOT / "tests" / "test_layering.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "LAYERS":
            return ast.literal_eval(node.value)
    raise AssertionError("tests/test_layering.py has no LAYERS list")


def _doc_table() -> dict[int, list[str]]:
    text = DOC.read_text()
    block = text.split("<!-- layers:begin", 1)[1].split("<!-- layers:end -->", 1)[0]
    rows = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            rows[int(cells[0])] = re.findall(r"`([^`]+)`", cells[1])
    return rows


def test_every_rank_of_the_layering_test_is_in_the_table():
    layers, table = _layers(), _doc_table()
    assert sorted(table) == list(range(len(layers))), (
        f"ARCHITECTURE.md's layer table has ranks {sorted(table)}; tests/test_layering.py "
        f"has 0..{len(layers) - 1}"
    )
    for rank, patterns in enumerate(layers):
        assert table[rank] == patterns, (
            f"rank {rank}: ARCHITECTURE.md lists {table[rank]}, tests/test_layering.py "
            f"LAYERS lists {patterns}; make the two the same"
        )


def test_readme_links_the_architecture_page():
    head = (ROOT / "README.md").read_text().splitlines()[:15]
    assert any("ARCHITECTURE.md" in line for line in head)


def test_nothing_cites_a_design_page_outside_the_repository():
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.toml", "Makefile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    citing = [
        f
        for f in files
        if "DESIGN.md" in (ROOT / f).read_text(errors="replace")
        and f != "tests/test_architecture_doc.py"
    ]
    assert not citing, f"these cite DESIGN.md, which is not in the repository: {citing}"
