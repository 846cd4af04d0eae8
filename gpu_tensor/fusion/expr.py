"""Expression graph of a fused elementwise function, and its numpy evaluation.

Nodes are immutable. Every node has a logical `dtype` (the dtype PyTorch would give the value
if the chain ran op by op) and a promotion `tier` (0 a tensor with dims, 1 a 0-dim tensor,
2 a Python scalar), which is all type promotion needs. Values flow between nodes in
`compute_dtype(dtype)`: half/bfloat16 intermediates stay float32 inside a fused chain (like
torch.compile), and only outputs and explicit casts round to 16 bits. The numpy evaluation
here and the generated CUDA follow the same rule, so they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import compute_dtype
from .optable import OPS

__all__ = ["Node", "Input", "Scalar", "Const", "Op", "Cast", "Graph", "evaluate"]


@dataclass(frozen=True, eq=False)
class Node:
    dtype: np.dtype
    tier: int  # 0 dimensioned tensor, 1 zero-dim tensor, 2 Python scalar (weak)


@dataclass(frozen=True, eq=False)
class Input(Node):
    """The index-th tensor argument (a kernel pointer)."""

    index: int = 0


@dataclass(frozen=True, eq=False)
class Scalar(Node):
    """The index-th Python-scalar argument (a kernel parameter, so new values never recompile)."""

    index: int = 0


@dataclass(frozen=True, eq=False)
class Const(Node):
    """A literal written inside the fused function (baked into the kernel source)."""

    value: bool | int | float = 0


@dataclass(frozen=True, eq=False)
class Op(Node):
    """OPS[key] applied to args; `in_dtypes` are the dtypes each arg is converted to first
    (None for clamp's missing bound)."""

    key: str = ""
    args: tuple = ()
    in_dtypes: tuple = ()
    param: str | None = None


@dataclass(frozen=True, eq=False)
class Cast(Node):
    """arg.to(dtype): rounds (or truncates) to `dtype`."""

    arg: Node | None = None


def _children(node: Node) -> tuple:
    if isinstance(node, Op):
        return tuple(a for a in node.args if a is not None)
    if isinstance(node, Cast):
        return (node.arg,)
    return ()


@dataclass(frozen=True, eq=False)
class Graph:
    """A traced function: its tensor inputs, scalar parameters, and output nodes."""

    inputs: tuple  # of Input, by index
    scalars: tuple  # of Scalar, by index
    outputs: tuple  # of Node

    def topo(self, roots=None) -> list[Node]:
        """Nodes reachable from `roots` (default: all outputs), operands before users."""
        order: list[Node] = []
        seen: set[int] = set()
        stack = [(n, False) for n in reversed(roots if roots is not None else self.outputs)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(_children(node)) if id(c) not in seen)
        return order

    def used_inputs(self, roots=None) -> list[Input]:
        """The Input nodes the given outputs read, by index."""
        return sorted((n for n in self.topo(roots) if isinstance(n, Input)), key=lambda n: n.index)

    def describe(self, roots=None) -> str:
        """A canonical one-node-per-line text of the graph (stable across runs; hashed into
        kernel names and shown in error messages)."""
        names: dict[int, str] = {}
        lines = []
        for node in self.topo(roots):
            name = f"v{len(names)}"
            names[id(node)] = name
            if isinstance(node, Input):
                rhs = f"input{node.index}"
            elif isinstance(node, Scalar):
                rhs = f"scalar{node.index}"
            elif isinstance(node, Const):
                rhs = f"const {node.value!r}"
            elif isinstance(node, Cast):
                rhs = f"cast {names[id(node.arg)]}"
            else:
                args = ", ".join("None" if a is None else names[id(a)] for a in node.args)
                conv = ",".join("-" if d is None else str(d) for d in node.in_dtypes)
                param = "" if node.param is None else f" [{node.param}]"
                rhs = f"{node.key}({args}){param} as ({conv})"
            lines.append(f"{name}: {node.dtype} = {rhs}")
        outs = ", ".join(names[id(o)] for o in (roots if roots is not None else self.outputs))
        return "\n".join(lines + [f"return {outs}"])


def _scalar_array(value) -> np.ndarray:
    # Python scalars keep full precision (float64/int64/bool) until the op that uses them
    # converts them, as torch does (float64 tensor + 0.1 uses the double 0.1).
    return np.asarray(value.item() if isinstance(value, np.generic) else value)


def evaluate(graph: Graph, arrays, scalars=(), roots=None) -> list[np.ndarray]:
    """Evaluate the graph with numpy. `arrays` are the tensor inputs (numpy arrays, any
    strides; they broadcast), `scalars` the Python-scalar parameters. Returns each root's
    value in its compute dtype (float32 for half/bfloat16 outputs), except a root that is a
    cast, which is returned in the cast's dtype; the caller casts to the stored dtype."""
    values: dict[int, np.ndarray] = {}
    root_ids = {id(r) for r in (roots if roots is not None else graph.outputs)}
    with np.errstate(all="ignore"):
        for node in graph.topo(roots):
            if isinstance(node, Input):
                value = np.asarray(arrays[node.index]).astype(compute_dtype(node.dtype), copy=False)
            elif isinstance(node, Scalar):
                value = _scalar_array(scalars[node.index])
            elif isinstance(node, Const):
                value = _scalar_array(node.value)
            elif isinstance(node, Cast):
                value = values[id(node.arg)].astype(node.dtype)
                if id(node) not in root_ids:  # a cast output is already in its final dtype
                    value = value.astype(compute_dtype(node.dtype), copy=False)
            else:
                op = OPS[node.key]
                args = [
                    None if a is None else values[id(a)].astype(op.computes_in(d), copy=False)
                    for a, d in zip(node.args, node.in_dtypes, strict=True)
                ]
                kwargs = {op.param: node.param} if op.param and node.param is not None else {}
                fn = op.np_fn
                if op.complex_fn is not None and any(
                    a.dtype.kind == "c" for a in args if a is not None
                ):
                    fn = op.complex_fn  # (sgn: the row's numpy function is real-only)
                value = np.asarray(fn(*args, **kwargs))
                value = value.astype(compute_dtype(node.dtype), copy=False)
            values[id(node)] = value
    return [values[id(r)] for r in (roots if roots is not None else graph.outputs)]
