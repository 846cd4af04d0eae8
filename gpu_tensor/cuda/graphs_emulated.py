"""CUDA graphs on the emulated device: the step is recorded as Python, replayed as Python.

The emulated device has no streams to capture, so `with gt.cuda.graph(g):` records the
statements of its own block (read from the caller's source with `ast`) and the objects they
name; the block runs once at capture, as on a GPU (where it runs as the warm-up torch asks
for would). `g.replay()` runs those statements again over the same objects and then copies
each tensor the block bound (the static outputs) into the tensor bound at capture, so code
that reads its static outputs after `replay()` works unchanged. Gradients follow torch's
graphed backward: a leaf whose `.grad` was None at capture gets a fresh gradient at each
replay (not an accumulated one), written into the `.grad` tensor the capture made.

The results are those of the eager step, bit for bit, because the replay is the eager step.
What only a GPU shows: the launch savings, and the capture errors of real CUDA (the
simulated CuPy models those: GPU_TENSOR_FALLBACK=sim).
"""

from __future__ import annotations

import ast
import linecache
import sys

from .graphs import CUDAGraph, _new_id

__all__ = ["EmulatedCUDAGraph", "capturing"]

_active: list = []  # graphs capturing now (this process)


def capturing() -> bool:
    return bool(_active)


def _leaves(namespace: dict) -> list:
    """Tensors that may get gradients, reachable from the block's names: parameters of
    modules and optimizers, and leaf tensors that require grad."""
    from gpu_tensor._tensor import Tensor

    found: dict[int, object] = {}
    for value in list(namespace.values()):
        params = ()
        if isinstance(value, Tensor):
            params = (value,) if value.requires_grad and value.grad_fn is None else ()
        elif hasattr(value, "parameters") and callable(value.parameters):
            try:
                params = list(value.parameters())
            except TypeError:
                params = ()
        elif hasattr(value, "param_groups"):
            params = [p for g in value.param_groups for p in g["params"]]
        for p in params:
            if isinstance(p, Tensor):
                found[id(p)] = p
    return list(found.values())


class EmulatedCUDAGraph(CUDAGraph):
    """CUDAGraph on the emulated device (see the module docstring)."""

    def __init__(self, keep_graph: bool = False):
        self._code = None
        self._namespace = None
        self._statics: dict = {}  # name -> the tensor the capture bound it to
        self._grads: list = []  # (leaf, the .grad tensor the capture made)
        self._fresh: list = []  # leaves whose grad was None at capture
        self._pool_id = None
        self._frame = None

    # capture_begin/capture_end are driven by `graph` (it knows the block's frame)
    def capture_begin(self, pool=None, capture_error_mode: str = "relaxed") -> None:
        frame = sys._getframe(1)
        here = (__file__, __file__.replace("graphs_emulated.py", "graphs.py"))
        while frame is not None and frame.f_code.co_filename in here:
            frame = frame.f_back  # the user's frame: the one whose `with` block is the step
        self._begin(frame, pool)

    def _begin(self, frame, pool) -> None:
        if self._code is not None or self._frame is not None:
            raise RuntimeError("this CUDAGraph already holds a capture; call reset() first")
        self._frame, self._line = frame, frame.f_lineno
        self._namespace = {**frame.f_globals, **frame.f_locals}
        leaves = _leaves(self._namespace)
        self._fresh = [p for p in leaves if p.grad is None]
        # The block runs now (the device is synchronous) but a capture must change nothing:
        # what it updates in place is put back at capture_end (_State).
        self._saved = _State(self._namespace, leaves)
        self._pool_id = (_new_id(), 0) if pool is None else (int(pool[0]), int(pool[1]))
        _active.append(self)

    def capture_end(self) -> None:
        if self._frame is None:
            raise RuntimeError("capture_end without capture_begin")
        frame, self._frame = self._frame, None
        _active.remove(self)
        from gpu_tensor._tensor import Tensor

        body, names = _with_body(frame.f_code.co_filename, self._line)
        self._code = compile(body, frame.f_code.co_filename, "exec")
        now = frame.f_locals
        self._statics = {n: now[n] for n in names if isinstance(now.get(n), Tensor)}
        self._grads = [(p, p.grad) for p in self._fresh if p.grad is not None]
        self._saved.restore()
        self._saved = None

    def replay(self) -> None:
        if self._code is None:
            raise RuntimeError("replay() needs a captured graph: capture one first")
        import gpu_tensor as gt

        for p, _ in self._grads:
            p.grad = None  # the graphed backward writes a fresh gradient, as at capture
        namespace = dict(self._namespace)
        _active.append(self)  # the block sees itself captured, as it did at capture
        try:
            exec(self._code, namespace)  # noqa: S102 - the user's own block, from capture
        finally:
            _active.remove(self)
        with gt.no_grad():
            for name, static in self._statics.items():
                new = namespace.get(name)
                if new is not None and new is not static:
                    static.copy_(new.detach())
            for p, static in self._grads:
                if p.grad is not None and p.grad is not static:
                    static.copy_(p.grad)
                p.grad = static

    def reset(self) -> None:
        self._code = self._namespace = None
        self._statics, self._grads, self._fresh = {}, [], []
        self._pool_id = None

    def enable_debug_mode(self) -> None:
        """Accepted for torch compatibility."""

    def debug_dump(self, path: str) -> None:
        raise RuntimeError(
            "debug_dump needs a real CUDA graph; the emulated device records "
            "Python statements, not kernels"
        )


def _with_body(filename: str, line: int):
    """The statements of the `with` block that starts at `line` of `filename`, compiled as a
    module (line numbers kept), and the names they assign."""
    source = "".join(linecache.getlines(filename))
    if not source:
        raise RuntimeError(
            "gt.cuda.graph on the emulated device records its block from the "
            f"source file, and {filename!r} has none (run it from a file)"
        )
    tree = ast.parse(source)
    # the innermost `with` whose header holds the line the frame was on at __enter__
    withs = [
        n for n in ast.walk(tree) if isinstance(n, ast.With) and n.lineno <= line < n.body[0].lineno
    ]
    node = max(withs, key=lambda n: n.lineno, default=None)
    if node is None:
        raise RuntimeError(f"no `with gt.cuda.graph(...)` block found at {filename}:{line}")
    module = ast.Module(body=node.body, type_ignores=[])
    names = {
        t.id
        for n in ast.walk(module)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        for t in ast.walk(n)
        if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
    }
    return module, sorted(names)


class _State:
    """Values a step updates in place (parameters, buffers, optimizer state), saved before
    the emulated capture runs the block and put back after it."""

    def __init__(self, namespace: dict, leaves):
        from gpu_tensor._tensor import Tensor

        self._tensors = []  # (tensor, its saved copy)
        seen = set()
        for t in list(leaves) + [
            b
            for v in namespace.values()
            if hasattr(v, "buffers") and callable(v.buffers)
            for b in _safe(v.buffers)
        ]:
            if isinstance(t, Tensor) and id(t) not in seen:
                seen.add(id(t))
                self._tensors.append((t, t.detach().clone()))
        self._optimizers = []  # (optimizer, {param: {key: saved}})
        for v in namespace.values():
            state = getattr(v, "state", None)
            if hasattr(v, "param_groups") and isinstance(state, dict):
                saved = {
                    p: {
                        k: (x.detach().clone() if isinstance(x, Tensor) else x)
                        for k, x in s.items()
                    }
                    for p, s in state.items()
                }
                self._optimizers.append((v, saved))

    def restore(self) -> None:
        import gpu_tensor as gt
        from gpu_tensor._tensor import Tensor

        with gt.no_grad():
            for t, copy in self._tensors:
                t.copy_(copy)
            for opt, saved in self._optimizers:
                for p in list(opt.state):
                    if p not in saved:
                        del opt.state[p]  # made by the captured step: the replay makes it
                        continue
                    now = opt.state[p]
                    for k in list(now):
                        if k not in saved[p]:
                            del now[k]
                    for k, x in saved[p].items():
                        if isinstance(x, Tensor) and isinstance(now.get(k), Tensor):
                            now[k].copy_(x)
                        else:
                            now[k] = x


def _safe(fn):
    try:
        return list(fn())
    except TypeError:
        return []
