"""How much of torch's public Tensor surface gpu_tensor.Tensor has. torch's names are data
(tests/data/torch_tensor_methods.txt, from dir(torch.Tensor)) because CI has no torch;
regenerate with `python tests/test_method_coverage.py --regenerate` where torch is installed.
The test prints what is still missing (pytest -s shows it)."""

from __future__ import annotations

import pathlib
import sys

import gpu_tensor as gt

DATA = pathlib.Path(__file__).parent / "data" / "torch_tensor_methods.txt"
TARGET = 450  # of torch's 604 public Tensor attributes


def torch_names() -> list[str]:
    return [
        line.strip()
        for line in DATA.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]


def coverage() -> tuple[list[str], list[str]]:
    names = torch_names()
    have = [n for n in names if hasattr(gt.Tensor, n)]
    return have, [n for n in names if n not in have]


def test_data_is_torchs_list():
    names = torch_names()
    assert len(names) == 604 and len(set(names)) == 604
    assert all(not n.startswith("_") for n in names)
    assert {"add", "sort", "backward", "to_sparse"} <= set(names)


def test_method_coverage():
    have, missing = coverage()
    total = len(have) + len(missing)
    print(
        f"\ngpu_tensor.Tensor has {len(have)}/{total} of torch.Tensor's public methods; "
        f"missing ({len(missing)}): {' '.join(missing)}"
    )
    assert len(have) >= TARGET, f"only {len(have)}/{total}; missing: {' '.join(missing)}"


def test_present_names_are_callable_or_properties():
    """A name counted as present is a real method or attribute, not a placeholder None."""
    have, _ = coverage()
    for n in have:
        assert getattr(gt.Tensor, n) is not None, n


if __name__ == "__main__" and "--regenerate" in sys.argv:
    import torch

    names = sorted(n for n in dir(torch.Tensor) if not n.startswith("_"))
    header = (
        "# torch.Tensor's public attributes (dir(torch.Tensor), no leading underscore):\n"
        f"# generated once with torch {torch.__version__} by "
        "tests/test_method_coverage.py --regenerate\n"
    )
    DATA.write_text(header + "\n".join(names) + "\n")
