"""The layering described in ARCHITECTURE.md, checked on the source: a module imports only
from its own layer or layers above it, and only the CUDA backend and the compile steps
import cupy."""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "gpu_tensor"

# Rank 0 is the top. A module may import modules of its own rank or higher up (lower
# numbers); a package may import its own submodules. ARCHITECTURE.md "Layers" explains each row.
LAYERS = [
    [
        "_env",
        "backends._cupy",
        "_grad",
        "_modes",
        "_constant",
    ],  # stdlib only; _cupy: the lazy door to cupy; _grad:
    #                                       the call-time autograd check (a leaf);
    #                                       _constant: the base of gt.strided & co
    # _args: the argument checks (torch's parser role); _capsule: legacy DLPack capsules;
    # layouts: gt.strided & co; typed_storage: what Tensor.storage() returns;
    # return_types: the named tuples of tuple-returning ops; _layout_ids: the ints naming
    # operand layouts in the warm paths' keys
    # _result_strides: torch's TensorIterator rule for a new elementwise result's strides
    # typeinfo: gt.finfo / gt.iinfo
    [
        "dtype",
        "device",
        "_dims",
        "_args",
        "_capsule",
        "layouts",
        "typed_storage",
        "return_types",
        "_layout_ids",
        "_result_strides",
        "typeinfo",
    ],
    ["memory", "memory.*"],
    ["kernel", "kernel.*", "fusion.*"],  # pure planners and codegen, and their compile steps
    ["storage", "backends", "backends.*", "cuda", "cuda.*"],  # mechanism per device kind
    ["_tensor"],  # the class body (torch/_tensor.py)
    ["_views", "_layout", "_interop", "_format"],  # method groups over the class
    # _out: the out= contract (write-back, resize, cast); _host_memory: numpy's MemoryError
    # as torch's error, for the factories and the ops; _mt19937, _cephes_f32,
    # _torch_samplers: torch's cpu random stream and transforms (host arrays only)
    ["creation", "_data", "_out", "_host_memory", "_mt19937", "_cephes_f32", "_torch_samplers"],
    ["ops", "ops.*", "sparse", "sparse.*"],  # sparse COO tensors are made by ops (to_sparse)
    ["transfer", "transfer.*"],  # pinned memory, staging, moves between devices
    [
        "fusion",
        "fusion.fuse",
        "autograd",
        "autograd.*",  # take and return Tensors
        "quantized",
        "quantized.*",
    ],  # quantized tensors (QTensor, its formulas, _int_mm)
    ["_tensor_methods", "_tensor_stub"],  # THE method table (binds everything above onto
    #                                       Tensor) and the generator of its .pyi
    # built on the public API
    [
        "nn",
        "nn.*",
        "optim",
        "optim.*",
        "distributed",
        "distributed.*",
        "accelerator",
        "utils",
        "utils.*",
        "testing",
        "testing.*",
        "legacy",
        "linalg",
        "special",
        "profiler",
        "profiler.*",
        "autograd.profiler",  # autograd.profiler: torch's legacy names
        "amp",
        "amp.*",
        "cpu",
        "cpu.*",
        "cuda.amp",  # amp: autocast + GradScaler (torch.amp);
        #                                              cpu/cuda.amp: torch's deprecated aliases
        "ao",
        "ao.*",
        "quantization",  # torch.ao.quantization: observers, quantize_dynamic
        "serialization",
        "serialization.*",  # gt.save / gt.load (issue 28)
        "functional",
        "inplace_functions",  # torch.functional, torch.sin_ & co
        "cuda.graphs",
        "cuda.graphs_emulated",
        "cuda.graphed_callables",  # CUDA graphs
    ],
    ["cli", "cli.*", "__main__"],
]
# The only imports that go up a layer: function-local, each for a reason.
UPWARD = {
    ("_grad", "autograd.record"): "the recorder, on the first op that records a node",
    ("_tensor", "transfer"): "Tensor._host waits for a non_blocking copy landing in it",
    ("_tensor", "legacy"): "gt.Tensor(data) / gt.Tensor(2, 3), torch's legacy constructor, "
    "when called",
    ("creation", "transfer"): "pin_memory=True: the pinned pool is transfer's",
    ("autograd", "legacy"): "autograd.Variable, torch's legacy name, made on first use",
    ("cuda", "legacy"): "gt.cuda.FloatTensor and the other legacy types, made on first use",
    ("cuda", "ops.random"): "gt.cuda.manual_seed seeds the one generator, when called",
    ("ops.softmax", "autograd.composite"): "softmax records torch's one node, when it records",
    ("cuda", "cuda.graphs"): "gt.cuda.CUDAGraph & co, built on the public API, on first use",
    ("fusion.derivatives_special", "special"): "a special row's derivative calls gt.special "
    "(polygamma, i1, ...: no Tensor method), at backward time",
    ("fusion.trace", "ops.special"): "a traced x.logit(eps), x.nan_to_num(...): the module "
    "function resolves the row's parameter, when a function is traced",
    ("fusion.trace", "ops.elementwise"): "a traced x.div(y, rounding_mode=...): the eager "
    "function's rounding rules, when a function is traced",
    ("fusion.derivatives", "ops.elementwise"): "a derivative `where(cond, number, g)` is one "
    "kernel through the module function, at backward time",
}
CUPY_ALLOWED = [
    "backends.*",
    "kernel.compile",
    "kernel.nvrtc",
    "testing.sim.*",
]  # the simulated CuPy binds against the real one


def _rank(module: str) -> int:
    for rank, patterns in enumerate(LAYERS):
        if module in patterns:
            return rank
    for rank, patterns in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(module, p) for p in patterns if "*" in p):
            return rank
    raise AssertionError(
        f"gpu_tensor.{module} has no layer: add it to LAYERS in "
        "tests/test_layering.py (and ARCHITECTURE.md 'Layers')"
    )


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts) or "__init__", path


def _imports(module: str, path: Path, tree=None):
    """Every gpu_tensor module (dotted, package-relative) and top-level name imported."""
    tree = ast.parse(path.read_text()) if tree is None else tree
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
                "backend and the compile steps may import cupy (use gpu_tensor.backends._cupy)"
            )
        if not name.startswith("gpu_tensor.") or name == "gpu_tensor":
            continue
        target = name[len("gpu_tensor.") :]
        # `from .memory import allocator` names a module or an attribute: try the longest prefix.
        while target and not (
            (PKG / (target.replace(".", "/") + ".py")).exists()
            or (PKG / target.replace(".", "/")).is_dir()
        ):
            target = target.rpartition(".")[0]
        if not target or target.startswith(module.split(".")[0] + ".") and own == _rank(target):
            continue
        if (module, target) in UPWARD:
            continue
        assert _rank(target) <= own, (
            f"gpu_tensor/{path.relative_to(PKG)}:{line} imports gpu_tensor.{target}, a lower "
            f"layer (rank {_rank(target)} > {own}); see ARCHITECTURE.md 'Layers'"
        )


def _top_level_edges():
    """{module: {imported module}} for imports at module level (not inside functions)."""
    names = {m for m, _ in _modules()}
    graph = {}
    for module, path in _modules():
        tree = ast.parse(path.read_text())
        shallow = ast.Module(
            body=[
                n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.If, ast.Try))
            ],
            type_ignores=[],
        )
        out = set()
        for name, _ in _imports(module, path, shallow):
            if name.startswith("gpu_tensor."):
                target = name[len("gpu_tensor.") :]
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    out.add(target)
        graph[module] = out
    return graph


def test_no_import_cycle_at_module_level():
    graph = _top_level_edges()
    state: dict = {}

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                cycle = path[path.index(n) :] + [n]
                raise AssertionError("import cycle at module level: " + " -> ".join(cycle))
            if n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_the_upward_edges_are_function_local():
    graph = _top_level_edges()
    for (module, target), why in UPWARD.items():
        assert target not in graph.get(module, ()), (
            f"gpu_tensor.{module} imports gpu_tensor.{target} at module level; it may only do "
            f"so inside a function ({why})"
        )
