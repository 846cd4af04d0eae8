"""The layering of DESIGN.md, checked on the source: a module imports only from its own
layer or layers above it, and only the CUDA backend and the compile steps import cupy."""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "gpu_tensor"

# Rank 0 is the top. A module may import modules of its own rank or lower ranks.
LAYERS = [
    ["_env", "backends._cupy"],  # stdlib only; _cupy is the one lazy door to cupy
    ["dtype", "device"],
    ["memory", "memory.*"],
    # pure planners and codegen (plus their compile steps); fusion.fuse and trace are user-facing
    ["kernel", "kernel.*", "fusion.*"],
    ["storage", "backends", "backends.*"],
    ["*"],  # the user-facing API: tensor, creation, ops, transfer, streams, cuda.*, ...
    ["nn", "nn.*", "optim", "optim.*", "utils", "utils.*"],  # built on the public ops
    # distributed and DDP build on nn (DDP is an nn.Module)
    ["distributed", "distributed.*", "nn.parallel", "nn.parallel.*"],
    ["cli", "cli.*", "__main__"],
]
# fusion's decorator takes and returns Tensors: it sits with the user-facing API.
USER_FACING = {"fusion", "fusion.fuse"}
CUPY_ALLOWED = ["backends.*", "kernel.compile", "kernel.nvrtc", "fusion.compile",
                "testing.sim.*"]  # the simulated CuPy binds against the real one


def _rank(module: str) -> int:
    if module in USER_FACING:
        return LAYERS.index(["*"])
    # The most specific pattern wins: `nn.parallel.*` places nn.parallel below `nn.*`.
    matches = [(len(p), rank) for rank, patterns in enumerate(LAYERS) for p in patterns
               if p != "*" and fnmatch.fnmatchcase(module, p)]
    return max(matches)[1] if matches else LAYERS.index(["*"])


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts) or "__init__", path


def _imports(module: str, path: Path):
    """Every gpu_tensor module (dotted, package-relative) and top-level name imported."""
    tree = ast.parse(path.read_text())
    package = module.split(".")[:-1] if not path.name == "__init__.py" else module.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    # `from ..fusion import eager` imports the module fusion.eager
                    yield "gpu_tensor." + f"{target}.{alias.name}".strip("."), node.lineno
            else:
                for alias in node.names:
                    yield f"{node.module}.{alias.name}", node.lineno


MODULES = [m for m in _modules() if m[0] != "__init__"]


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_module_respects_layers(module, path):
    own = _rank(module)
    for name, line in _imports(module, path):
        if name.split(".")[0] in ("cupy", "cupyx", "cupy_backends"):
            assert any(fnmatch.fnmatchcase(module, p) for p in CUPY_ALLOWED), (
                f"gpu_tensor/{path.relative_to(PKG)}:{line} imports {name}; only the CUDA "
                "backend and the compile steps may import cupy (use gpu_tensor.backends._cupy)")
        if not name.startswith("gpu_tensor.") or name == "gpu_tensor":
            continue
        target = name[len("gpu_tensor."):]
        # `from .memory import allocator` names a module or an attribute: try the longest prefix.
        while target and not ((PKG / (target.replace(".", "/") + ".py")).exists()
                              or (PKG / target.replace(".", "/")).is_dir()):
            target = target.rpartition(".")[0]
        if not target or target.startswith(module.split(".")[0] + ".") and own == _rank(target):
            continue
        assert _rank(target) <= own, (
            f"gpu_tensor/{path.relative_to(PKG)}:{line} imports gpu_tensor.{target}, a lower "
            f"layer (rank {_rank(target)} > {own}); see DESIGN.md 'Layers'")
