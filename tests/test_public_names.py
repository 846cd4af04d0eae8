"""Every public name of `gpu_tensor` is bound where a reader, an IDE or a type checker can
see it without running the package: an explicit import or definition in
gpu_tensor/__init__.py, or a `from .m import *` of a module whose `__all__` is a literal
list of names that module binds itself."""

from __future__ import annotations

import ast
from pathlib import Path

import gpu_tensor as gt

PKG = Path(gt.__file__).resolve().parent


def _module_path(package: list[str], level: int, module: str | None) -> Path:
    base = package[: len(package) - (level - 1)]
    parts = base + (module.split(".") if module else [])
    path = PKG.joinpath(*parts)
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _bound(path: Path, package: list[str]) -> set[str]:
    """Names bound at the top level of a module's source, star imports followed."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if node not in tree.body and not _top_level(tree, node):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name != "*":
                    names.add(a.asname or a.name)
                elif node.level:
                    names |= _star(_module_path(package, node.level, node.module))
    return names


def _top_level(tree, node) -> bool:
    """At module level, or inside a module-level `if`/`try` (not in a function or class)."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.If, ast.Try)) and node in list(ast.walk(stmt)):
            return True
    return False


def _star(path: Path) -> set[str]:
    """What `from <path> import *` binds, when the module says so statically."""
    tree = ast.parse(path.read_text())
    exported = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "__all__" for t in node.targets
        ):
            try:
                exported = ast.literal_eval(node.value)
            except ValueError:
                return set()  # computed at run time: nothing is visible statically
    if exported is None:
        return set()
    rel = path.relative_to(PKG).with_suffix("").parts
    package = list(rel[:-1]) if rel[-1] != "__init__" else list(rel[:-1])
    return set(exported) & _bound(path, package)


def test_every_public_name_is_statically_bound():
    bound = _bound(PKG / "__init__.py", [])
    hidden = sorted(set(gt.__all__) - bound)
    assert not hidden, (
        f"{len(hidden)} names of gt.__all__ are bound only at run time (globals().update or "
        f"a computed __all__): {hidden}; import them by name in gpu_tensor/__init__.py"
    )


def test_all_has_no_duplicates_and_every_name_exists():
    assert len(gt.__all__) == len(set(gt.__all__))
    assert all(hasattr(gt, name) for name in gt.__all__)


def test_each_module_level_in_place_function_is_a_tensor_method():
    from gpu_tensor import inplace_functions

    assert inplace_functions.__all__
    assert [n for n in inplace_functions.__all__ if not hasattr(gt.Tensor, n)] == []
    x = gt.tensor([0.25, 4.0])
    assert gt.sqrt_(x) is x and x.tolist() == [0.5, 2.0]


def test_the_op_modules_names_are_all_public():
    """Their functions are public names (the import block in __init__ lists each by hand)."""
    from gpu_tensor.ops import index_write, matrix, pointwise, random, sort, special, statistics

    for module in (special, sort, matrix, statistics, pointwise, random, index_write):
        missing = set(module.__all__) - set(gt.__all__) - {"fill_diagonal"}  # a method only
        assert not missing, f"{module.__name__}: {sorted(missing)} not in gt.__all__"
