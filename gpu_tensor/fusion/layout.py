"""Launch planning for fused elementwise kernels (pure Python; no arrays, no cupy).

Given the output shape and each operand's strides (in elements), pointer and itemsize, pick
the kernel variant:

- "vector": every operand is, after broadcasting and dim coalescing, either contiguous
  (`c`), a row vector repeated over rows (`row`, strides (0, 1)) or a column vector repeated
  along rows (`col`, strides (s, 0)); the row length is a multiple of the vector width and
  every vector pointer is aligned, so each thread moves VEC elements with 16-byte loads and
  stores whatever the mix of dtypes.
- "strided": anything else (transposes, general broadcasts, misaligned views): per-operand
  index math over the coalesced dims, one element per thread per step.

Indices are 32-bit when every offset fits, else 64-bit.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Operand", "Plan", "broadcast_shapes", "plan", "launch_config"]

VECTOR_BYTES = 16  # one LDG.128/STG.128 per chunk: the widest global access on sm_80/sm_90
MAX_THREAD_BYTES = 64  # cap per-thread bytes of the widest operand (registers stay low)
INT32_LIMIT = 2**31 - 2**26  # headroom so `i += grid stride` cannot overflow a 32-bit index


@dataclass(frozen=True)
class Operand:
    shape: tuple
    strides: tuple  # in elements
    itemsize: int
    ptr: int = 0  # address (alignment only); 0 when unknown is treated as aligned


@dataclass(frozen=True)
class Plan:
    mode: str  # "vector" | "strided"
    vec: int  # elements per thread in vector mode (1 in strided mode)
    index: str  # "int" | "long long"
    numel: int
    sizes: tuple  # coalesced sizes (strided), or (rows, inner) (vector)
    classes: tuple  # per operand: vector mode "c"/"row"/"col"; strided mode "c"/"s"
    strides: tuple  # per operand: coalesced strides (the col stride in vector mode)

    @property
    def key(self) -> tuple:
        """What the generated source depends on (not sizes or strides: those are arguments)."""
        return (self.mode, self.vec, self.index, len(self.sizes), self.classes)


def broadcast_shapes(*shapes) -> tuple:
    """torch.broadcast_shapes, with an error naming both shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape):
            d = ndim - len(shape) + i
            if out[d] == 1:
                out[d] = size
            elif size not in (1, out[d]):
                raise ValueError(
                    f"shapes {tuple(shapes[0])} and {tuple(shape)} cannot be broadcast together "
                    f"(size {out[d]} vs {size} at dim {d}); add or expand a size-1 dim"
                )
    return tuple(out)


def _expand_strides(op: Operand, shape: tuple) -> list[int]:
    pad = len(shape) - len(op.shape)
    strides = [0] * pad + list(op.strides)
    sizes = [1] * pad + list(op.shape)
    return [0 if sizes[d] == 1 and shape[d] != 1 else strides[d] for d in range(len(shape))]


def _coalesce(shape: tuple, per_op: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    sizes = [shape[d] for d in dims]
    strides = [[s[d] for d in dims] for s in per_op]
    if not sizes:
        return [1], [[0] for _ in per_op]
    out_sizes, out_strides = [sizes[-1]], [[s[-1]] for s in strides]
    for d in range(len(sizes) - 2, -1, -1):
        if all(s[d] == o[0] * out_sizes[0] for s, o in zip(strides, out_strides, strict=True)):
            out_sizes[0] *= sizes[d]  # dim d continues the inner one in every operand
        else:
            out_sizes.insert(0, sizes[d])
            for s, o in zip(strides, out_strides, strict=True):
                o.insert(0, s[d])
    return out_sizes, out_strides


def _c_strides(sizes: list[int]) -> list[int]:
    out, acc = [], 1
    for size in reversed(sizes):
        out.insert(0, acc)
        acc *= size
    return out


def _vector_class(sizes, strides) -> str | None:
    if len(sizes) == 1:
        return "c" if strides[0] == 1 else ("col" if strides[0] == 0 else None)
    if strides == [sizes[1], 1]:
        return "c"
    if strides[0] == 0 and strides[1] == 1:
        return "row"
    if strides[1] == 0:
        return "col"
    return None


def plan(shape: tuple, operands: list[Operand], n_outputs: int = 1) -> Plan:
    """Plan a launch over `shape` for inputs followed by `n_outputs` outputs (the last ones)."""
    numel = 1
    for size in shape:
        numel *= size
    sizes, strides = _coalesce(tuple(shape), [_expand_strides(op, shape) for op in operands])
    span = max(
        [numel] + [sum((n - 1) * abs(s) for n, s in zip(sizes, st, strict=True)) for st in strides]
    )
    index = "int" if span < INT32_LIMIT else "long long"
    if len(sizes) <= 2:
        vec_plan = _plan_vector(sizes, strides, operands, n_outputs, numel, index)
        if vec_plan is not None:
            return vec_plan
    c = _c_strides(sizes)
    classes = tuple("c" if st == c else "s" for st in strides)
    return Plan("strided", 1, index, numel, tuple(sizes), classes, tuple(map(tuple, strides)))


def _plan_vector(sizes, strides, operands, n_outputs, numel, index) -> Plan | None:
    classes = [_vector_class(sizes, st) for st in strides]
    if None in classes or any(c != "c" for c in classes[len(classes) - n_outputs :]):
        return None
    min_item = min(op.itemsize for op in operands)
    max_item = max(op.itemsize for op in operands)
    vec = max(1, min(VECTOR_BYTES // min_item, MAX_THREAD_BYTES // max_item))
    inner = sizes[-1]
    while vec > 1:
        chunk_ok = all(
            op.ptr % min(VECTOR_BYTES, vec * op.itemsize) == 0
            for op, cls in zip(operands, classes, strict=True)
            if cls != "col"
        )
        if chunk_ok and (len(sizes) == 1 or inner % vec == 0):
            break
        vec //= 2
    if vec == 1:
        return None
    rows = 1 if len(sizes) == 1 else sizes[0]
    col_strides = tuple(
        st[0] if cls == "col" else 0 for st, cls in zip(strides, classes, strict=True)
    )
    return Plan("vector", vec, index, numel, (rows, inner), tuple(classes), col_strides)


def launch_config(plan_: Plan, sm_count: int, block: int = 256, blocks_per_sm: int = 8) -> tuple:
    """(grid, block): enough blocks for the work, capped at blocks_per_sm waves of the SMs
    (the grid-stride loop covers the rest; a capped grid avoids tail-wave launch overhead)."""
    work = -(-plan_.numel // plan_.vec)
    grid = max(1, min(-(-work // block), sm_count * blocks_per_sm))
    return grid, block
