"""One object per cuda kind (issue 23 item 5).

Whether `cuda` is a GPU, the simulated GPU or the emulated one is decided in device.py
(`cuda_kind()`) and turned into the kind's object in backends/ (`backends.cuda_kind()`, the
objects in backends/kinds.py). The first half greps the package: nothing else decides the
kind, and ops/, creation.py and fusion/ ask backend hooks instead of testing it. The second
half checks that each kind's object answers its hooks (cpu and emulated cuda here; the
simulated one in the sim tier).
"""

from __future__ import annotations

import ast
import functools
import pathlib

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import backends
from gpu_tensor import device as _device
from gpu_tensor.backends import kinds
from gpu_tensor.testing import requires_real_cuda

PKG = pathlib.Path(gt.__file__).parent


@functools.cache
def _modules() -> tuple:
    """(path relative to the package, its AST) for every module but the test tools'."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if not rel.startswith("testing/"):  # the simulator is a test tool, not the package
            found.append((rel, ast.parse(path.read_text(), filename=rel)))
    return tuple(found)


def _uses(tree, names) -> list[int]:
    """Lines where one of `names` is read, as a name, an attribute or an import."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in names:
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name in names for a in node.names):
            lines.append(node.lineno)
    return lines


def _where(names) -> set[str]:
    return {rel for rel, tree in _modules() if _uses(tree, names)}


def test_the_environment_is_read_for_the_kind_in_one_place():
    """GPU_TENSOR_FALLBACK is read by _env (which reads every variable) and asked by
    device.py, which decides; _cupy.py picks the simulated CuPy module (rank 0: it is asked
    before any device exists); cli/live.py only names the variable in a hint."""
    reads = set()
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("simulated", "fallback")
                and isinstance(node.value, ast.Name)
                and node.value.id == "_env"
            ):
                reads.add(rel)
    assert reads == {"device.py", "backends/_cupy.py", "cli/live.py"}
    literal = {
        rel
        for rel, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value == "GPU_TENSOR_FALLBACK"
    }
    assert literal == {"_env.py", "cli/demo.py"}  # demo sets it for its own process


def test_the_kind_is_decided_in_device_py_and_made_in_backends():
    # device.cuda_kind() is asked only by backends/__init__.py, which maps it to an object
    asked = set()
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "cuda_kind"
                and isinstance(node.value, ast.Name)
                and node.value.id in ("_device", "device")
            ):
                asked.add(rel)
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").endswith("device")
                and any(a.name == "cuda_kind" for a in node.names)
            ):
                asked.add(rel)
    assert asked == {"backends/__init__.py"}
    # the yes/no questions: defined in device.py; gt.cuda.is_emulated() is their public face
    assert _where({"cuda_is_emulated", "cuda_is_simulated"}) <= {"device.py", "cuda/_device.py"}
    # the kinds' classes are named only by backends/ itself
    named = _where(
        {
            "EmulatedCudaBackend",
            "CudaBackend",
            "EmulatedKind",
            "SimulatedKind",
            "CudaKind",
            "is_emulated",
        }
    )
    assert {rel for rel in named if not rel.startswith("backends/")} <= {"cuda/_device.py"}


def _kind_tests(tree) -> list[int]:
    """Lines that test what kind a backend is: `xp is np`, `isinstance(b, ...Backend)`,
    `is_emulated`, `cuda_kind`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops
        ):
            sides = [node.left, *node.comparators]
            has_xp = any(
                isinstance(s, ast.Name)
                and s.id == "xp"
                or isinstance(s, ast.Attribute)
                and s.attr == "xp"
                for s in sides
            )
            has_np = any(isinstance(s, ast.Name) and s.id in ("np", "numpy") for s in sides)
            if has_xp and has_np:
                lines.append(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and "Backend" in ast.unparse(node.args[1])
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in ("is_emulated", "cuda_kind"):
            lines.append(node.lineno)
    return lines


def test_ops_creation_and_fusion_ask_hooks_and_never_test_the_kind():
    found = {}
    for rel, tree in _modules():
        if rel.startswith(("ops/", "fusion/")) or rel == "creation.py":
            lines = _kind_tests(tree)
            if lines:
                found[rel] = lines
    assert found == {}, f"kind tests (use a Backend hook or attribute instead): {found}"


def test_the_grep_sees_a_kind_test():
    tree = ast.parse(
        "if b.xp is np: pass\nif isinstance(b, EmulatedCudaBackend): pass\nif b.is_emulated: pass\n"
    )
    assert _kind_tests(tree) == [1, 2, 3]
    assert _kind_tests(ast.parse("if b.host_arrays: pass\n")) == []


# -- the decision --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "real, variable, kind",
    [
        ((1, "simulated"), "sim", "simulated"),
        ((2, "cuda"), "1", "cuda"),
        ((1, "cuda"), None, "cuda"),
        ((0, "cuda"), "1", "emulated"),
        ((0, "simulated"), "sim", "emulated"),
        ((0, "cuda"), None, None),
        ((0, "cuda"), "0", None),
    ],
)
def test_cuda_kind_decides_from_the_driver_and_the_variable(monkeypatch, real, variable, kind):
    """(devices the real backend sees, over a GPU or the simulator), GPU_TENSOR_FALLBACK."""
    monkeypatch.setattr(_device, "_real_cuda", lambda: real)
    if variable is None:
        monkeypatch.delenv("GPU_TENSOR_FALLBACK", raising=False)
    else:
        monkeypatch.setenv("GPU_TENSOR_FALLBACK", variable)
    assert _device.cuda_kind() == kind
    assert _device.cuda_is_emulated() == (kind == "emulated")
    assert _device.cuda_is_simulated() == (kind == "simulated")
    obj = backends.cuda_kind()
    assert obj is kinds.KINDS[kind]
    assert obj.name == (kind or "cuda")  # no cuda at all: the GPU kind, finding nothing


def test_no_cuda_at_all_finds_nothing(monkeypatch):
    monkeypatch.setattr(_device, "_real_cuda", lambda: (0, "cuda"))
    monkeypatch.delenv("GPU_TENSOR_FALLBACK", raising=False)
    kind = backends.cuda_kind()
    assert not kind.nccl_usable()
    source = kind.pinned_source()  # plain host pages: nothing to page-lock with
    assert source._register is None and source._unregister is None


# -- each kind's object --------------------------------------------------------------------


def test_cpu_backend_answers_the_hooks():
    b = backends.get_backend("cpu")
    assert b.kind is None and b.host_arrays and not b.fills_by_pieces
    a = np.arange(6.0).reshape(2, 3)
    r = b.compute_into(lambda x: x.sum(axis=0), (a,), lambda: pytest.fail("cpu plans nothing"))
    assert r.tolist() == [3.0, 5.0, 7.0]
    assert b.by_pieces(np.sort, (a[:, ::-1],), (2, 3), a.dtype, whole=(1,)).tolist() == [
        [0.0, 1.0, 2.0],
        [3.0, 4.0, 5.0],
    ]
    err = b.host_memory_error(MemoryError("no room"), "a sum")
    assert type(err) is RuntimeError and "DefaultCPUAllocator" in str(err)


def test_the_base_hooks_are_neutral():
    class Bare(backends.Backend):
        xp = np

    b = Bare()
    assert not b.host_arrays and not b.fills_by_pieces and b.kind is None
    a = np.arange(4)
    assert b.compute_into(np.cumsum, (a,), None).tolist() == [0, 1, 3, 6]
    assert b.by_pieces(np.negative, (a,), (4,), a.dtype).tolist() == [0, -1, -2, -3]


def test_meta_backend_is_not_host_memory():
    b = backends.get_backend("meta")
    assert not b.host_arrays and not b.fills_by_pieces and b.kind is None


def test_the_kinds_differ_where_they_should():
    cuda, sim, emu = (kinds.KINDS[k] for k in ("cuda", "simulated", "emulated"))
    assert isinstance(sim, kinds.CudaKind) and not isinstance(emu, kinds.CudaKind)
    assert (cuda.synchronous, sim.synchronous, emu.synchronous) == (False, False, True)
    assert (cuda.virtual_memory, sim.virtual_memory, emu.virtual_memory) == (True, False, False)
    assert (cuda.allocator_kind, sim.allocator_kind, emu.allocator_kind) == (
        "cuda",
        "cuda",
        "emulated",
    )
    assert cuda.streams() is sim.streams() and cuda.streams() is not emu.streams()
    assert kinds.KINDS[None] is cuda


emulated_only = pytest.mark.skipif(not gt.cuda.is_emulated(), reason="the emulated cuda device")


@emulated_only
def test_emulated_kind_answers_its_hooks():
    from gpu_tensor.backends.cuda_streams import EmulatedStreams
    from gpu_tensor.backends.emulated import EmulatedCudaBackend

    kind = backends.cuda_kind()
    assert kind.name == "emulated" and kind.synchronous
    b = backends.get_backend("cuda")
    assert type(b) is EmulatedCudaBackend and b.kind is kind
    assert b is backends.get_backend("cuda:0")  # made once per device
    assert b.host_arrays and b.fills_by_pieces
    assert isinstance(kind.streams(), EmulatedStreams)
    assert kind.allocator_kind == "emulated" and not kind.nccl_usable()
    assert (
        kind.device_name(0)
        == gt.cuda.get_device_name()
        == "gpu_tensor emulated CUDA device (host memory)"
    )
    source = kind.pinned_source()
    assert source._register is None and source._unregister is None
    free, total = kind.mem_get_info(0)
    assert free == total > 0
    from gpu_tensor.memory import registry

    assert kind.allocator(0) is registry.get_allocator(0, "emulated")
    # the emulated device's own hooks: a result in allocator memory, never numpy's
    a = np.arange(2 * backends.PIECE, 0, -1, dtype=np.float32).reshape(4, -1)  # > a piece
    before = gt.cuda.memory_allocated()
    r = b.by_pieces(np.sort, (a,), a.shape, a.dtype, whole=(1,))
    assert np.array_equal(r, np.sort(a, axis=1))
    assert gt.cuda.memory_allocated() >= before + a.nbytes  # the allocator's, not numpy's
    assert type(b.host_memory_error(MemoryError(), "x")) is gt.cuda.OutOfMemoryError


@pytest.mark.cuda
@requires_real_cuda
def test_real_cuda_kind_answers_its_hooks():
    """On a GPU and over the simulated CuPy (the sim tier runs this)."""
    from gpu_tensor.backends.cuda import CudaBackend
    from gpu_tensor.backends.cuda_streams import CupyStreams

    kind = backends.cuda_kind()
    assert kind.name == _device.cuda_kind() and kind.name in ("cuda", "simulated")
    assert not kind.synchronous and kind.allocator_kind == "cuda"
    assert kind.virtual_memory == (kind.name == "cuda")
    b = backends.get_backend("cuda")
    assert type(b) is CudaBackend and b.kind is kind
    assert not b.host_arrays and not b.fills_by_pieces
    assert isinstance(kind.streams(), CupyStreams)
    assert isinstance(gt.cuda.get_device_name(), str) and gt.cuda.get_device_name()
    x = gt.arange(6.0, device="cuda")
    assert b.by_pieces(lambda a: a * 2, (x._data,), (6,), np.dtype(np.float32)).tolist() == [
        0.0,
        2.0,
        4.0,
        6.0,
        8.0,
        10.0,
    ]
