"""`gpu_tensor/_tensor.pyi` (what IDEs and type checkers read for Tensor) is current: it is
what `python -m gpu_tensor._tensor_stub` writes now, and it names every attribute Tensor has
once the method table is bound."""

from __future__ import annotations

import ast

import gpu_tensor as gt
from gpu_tensor import _tensor_stub


def test_stub_is_current():
    assert _tensor_stub.STUB.read_text() == _tensor_stub.render(), (
        "gpu_tensor/_tensor.pyi is stale: run `python -m gpu_tensor._tensor_stub`"
    )


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


def _stub_methods():
    tree = ast.parse(_tensor_stub.STUB.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def test_at_least_nine_in_ten_methods_have_a_real_return_type():
    methods = _stub_methods()
    untyped = sorted(name for name, f in methods.items() if ast.unparse(f.returns) == "Any")
    typed = len(methods) - len(untyped)
    assert typed >= 0.9 * len(methods), (
        f"only {typed} of {len(methods)} Tensor methods in _tensor.pyi have a return type; "
        f"annotate the functions behind these rows: {untyped}"
    )


def test_return_types_say_what_the_methods_return():
    methods = _stub_methods()

    def returns(name):
        return ast.unparse(methods[name].returns)

    assert returns("__add__") == returns("sum") == returns("view") == returns("add_") == "Tensor"
    assert returns("split") == returns("unbind") == returns("chunk") == "tuple[Tensor, ...]"
    assert returns("sort") == "return_types.sort"  # a named tuple whatever the arguments
    assert returns("max") == "Tensor | return_types.max"  # t.max() is a Tensor
    assert returns("size") == "Size | int"
    assert returns("dim") == returns("__len__") == "int"
    assert returns("is_contiguous") == returns("is_pinned") == "bool"
    assert returns("item") == "bool | int | float | complex"
    assert returns("numpy") == "np.ndarray"
    # parameter types from the defaults and torch's conventions
    sum_params = {a.arg: a for a in methods["sum"].args.args}
    assert ast.unparse(sum_params["keepdim"].annotation) == "bool"
    add_params = {a.arg: a for a in methods["__add__"].args.args}
    assert ast.unparse(add_params["other"].annotation) == "Tensor | _Number"


def test_the_stub_parses_as_a_module_whose_names_resolve():
    """Every name a type in the stub uses is one the stub defines or imports."""
    tree = ast.parse(_tensor_stub.STUB.read_text())
    import builtins

    bound = {"Tensor", "Size", "_MemoryFormat", "_Number"} | set(dir(builtins))
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.arg, ast.AnnAssign)):
            for ann in [node.returns] if isinstance(node, ast.FunctionDef) else [node.annotation]:
                if ann is not None:
                    used |= {n.id for n in ast.walk(ann) if isinstance(n, ast.Name)}
    assert used <= bound, used - bound
