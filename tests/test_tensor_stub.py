"""`gpu_tensor/_tensor.pyi` (what IDEs and type checkers read for Tensor) is current: it is
what `python -m gpu_tensor._tensor_stub` writes now, and it names every attribute Tensor has
once the method table is bound."""

from __future__ import annotations

import ast

import gpu_tensor as gt
from gpu_tensor import _tensor_stub


def test_stub_is_current():
    assert _tensor_stub.STUB.read_text() == _tensor_stub.render(), (
        "gpu_tensor/_tensor.pyi is stale: run `python -m gpu_tensor._tensor_stub`")


def test_stub_names_every_attribute_of_tensor():
    tree = ast.parse(_tensor_stub.STUB.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    named = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            named.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            named.add(node.target.id)
    missing = {k for k in vars(gt.Tensor) if k not in _tensor_stub._SKIP} - named
    assert not missing
    assert {"view", "reshape", "sum", "__add__", "backward", "to", "T"} <= named


def test_methods_and_class_are_the_public_names():
    assert repr(type(gt.ones(1))) == "<class 'gpu_tensor.Tensor'>"
    assert gt.Tensor.view.__module__ == "gpu_tensor._views"  # go-to-definition lands there


def test_the_class_module_does_not_hide_behind_the_factory():
    """`gt.tensor` is the factory; the class lives in `gpu_tensor._tensor` (torch's
    `torch/_tensor.py`), so no module is shadowed by it."""
    import importlib

    import pytest

    assert importlib.import_module("gpu_tensor._tensor").Tensor is gt.Tensor
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("gpu_tensor.tensor")
