"""CUDA source for a fused elementwise kernel: pure string generation (no cupy, no compiler).

`generate(graph, plan, out_dtypes)` returns a `KernelSource`. The kernel's parameters are,
in order: one pointer per input the outputs read (by input index), one pointer per output,
one value per scalar argument (double / long long / int for float / int / bool), the element
count `n`, then `plan_args(plan)` (the sizes and strides the variant needs). Values are
computed in each op's compute type (float for half/bfloat16) and only rounded on store, so
no flush-to-zero or fast-math is assumed; the compile step adds neither unless asked.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from .dtypes import BFLOAT16, compute_dtype
from .expr import Cast, Const, Graph, Input, Scalar
from .layout import Plan
from .optable import OPS
from .preamble import PREAMBLE, PREAMBLE_REAL

__all__ = ["CTYPE", "KernelSource", "generate", "plan_args", "scalar_ctype"]

CTYPE = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float16): "gt_half",
    BFLOAT16: "gt_bf16",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    # only the templates of complex_kernel rows take these (fusion/preamble_complex.py)
    np.dtype(np.complex64): "gt_c64",
    np.dtype(np.complex128): "gt_c128",
}
_SIXTEEN_BIT = {"gt_half", "gt_bf16"}
_COMPLEX = {"gt_c64": "gt_to_c64", "gt_c128": "gt_to_c128"}


@dataclass(frozen=True)
class KernelSource:
    name: str
    source: str
    inputs: tuple  # graph input indices, in parameter order
    scalars: tuple  # graph scalar indices, in parameter order
    plan_key: tuple


def scalar_ctype(dtype: np.dtype) -> str:
    """C type of a scalar parameter: full precision, converted where it is used."""
    if dtype == np.bool_:
        return "int"
    if dtype.kind == "c":  # a Python complex: both parts in double, as one struct
        return "gt_c128"
    return "long long" if dtype.kind in "iu" else "double"


def _value_ctype(node) -> str:
    if isinstance(node, (Scalar, Const)):
        return "bool" if node.dtype == np.bool_ else scalar_ctype(node.dtype)
    return CTYPE[compute_dtype(node.dtype)]


def _convert(expr: str, src: str, dst: str) -> str:
    if src == dst:
        return expr
    if dst in _COMPLEX:  # a struct: built by the preamble's gt_to_c64 / gt_to_c128
        return f"{_COMPLEX[dst]}({expr})"
    return f"(({dst})({expr}))"


def _literal(value) -> str:
    if isinstance(value, complex):
        return f"gt_c128_of({_literal(value.real)}, {_literal(value.imag)})"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"({value}LL)" if value > -(2**63) else "(-9223372036854775807LL - 1)"
    if math.isnan(value):
        return "((double)gt_f32_bits(0x7fc00000u))"
    if math.isinf(value):
        return f"({'-' if value < 0 else ''}(double)gt_f32_bits(0x7f800000u))"
    return repr(float(value))


def _load(ctype: str, expr: str) -> str:
    return f"gt_to_float({expr})" if ctype in _SIXTEEN_BIT else expr


def _store(value: str, vtype: str, otype: str) -> str:
    if otype in _SIXTEEN_BIT:
        return f"gt_from_float<{otype}>({_convert(value, vtype, 'float')})"
    return _convert(value, vtype, otype)


def _compute(graph: Graph, roots, loads: dict, ind: str) -> tuple[list[str], list[tuple]]:
    """Statements computing every root; `loads` maps an input index to its load expression.
    Returns (lines, [(value name, value ctype)] per root)."""
    lines, names = [], {}
    for node in graph.topo(roots):
        name, ct = f"t{len(names)}", _value_ctype(node)
        if isinstance(node, Input):
            expr = _load(CTYPE[node.dtype], loads[node.index])
        elif isinstance(node, Scalar):
            expr = _convert(f"s{node.index}", scalar_ctype(node.dtype), ct)
        elif isinstance(node, Const):
            expr = _literal(node.value)
        elif isinstance(node, Cast):
            src, src_ct = names[id(node.arg)]
            if node.dtype == np.float16:
                expr = f"gt_round_half({_convert(src, src_ct, 'float')})"
            elif node.dtype == BFLOAT16:
                expr = f"gt_round_bf16({_convert(src, src_ct, 'float')})"
            else:
                expr = _convert(src, src_ct, ct)
        else:
            op = OPS[node.key]
            args = []
            for arg, dt in zip(node.args, node.in_dtypes, strict=True):
                if arg is not None:
                    src, src_ct = names[id(arg)]
                    args.append(_convert(src, src_ct, CTYPE[compute_dtype(dt)]))
            if node.key == "clamp":
                present = tuple(a is not None for a in node.args[1:])
                fn = {(True, True): "gt_clamp", (True, False): "gt_max", (False, True): "gt_min"}
                expr = f"{fn[present]}({', '.join(args)})"
            else:
                expr = op.template(node.param).format(*args, storage=CTYPE[node.dtype])
        names[id(node)] = (name, ct)
        lines.append(f"{ind}const {ct} {name} = {expr};")
    return lines, [names[id(r)] for r in roots]


def plan_args(plan: Plan) -> list[int]:
    """The integer arguments after `n`, in the order the generated kernel declares them."""
    if plan.mode == "vector":
        return [plan.sizes[1]] + [s for s, c in zip(plan.strides, plan.classes, strict=True)
                                  if c == "col"]  # fmt: skip
    out = list(plan.sizes)
    for cls, strides in zip(plan.classes, plan.strides, strict=True):
        if cls == "s":
            out.extend(strides)
    return out


def generate(
    graph: Graph, plan: Plan, out_dtypes=None, roots=None, restrict: bool = True
) -> KernelSource:
    """CUDA source for `roots` (default: all outputs) under `plan`. Operands in the plan are
    the used inputs (by index) followed by the outputs; `out_dtypes` are the stored dtypes
    (default: each output's dtype). `restrict=False` when an output shares memory with an
    input (an in-place update): `__restrict__` would let the compiler reorder or re-issue a
    load across the store to the same address."""
    roots = tuple(graph.outputs if roots is None else roots)
    out_dtypes = [r.dtype for r in roots] if out_dtypes is None else list(out_dtypes)
    inputs = graph.used_inputs(roots)
    scalars = sorted({n.index for n in graph.topo(roots) if isinstance(n, Scalar)})
    if len(plan.classes) != len(inputs) + len(roots):
        raise ValueError("plan operands must be the used inputs followed by the outputs")
    idx = plan.index
    in_ct = [CTYPE[n.dtype] for n in inputs]
    out_ct = [CTYPE[np.dtype(d)] for d in out_dtypes]
    r = " __restrict__" if restrict else ""
    params = [f"const {ct}*{r} in{n.index}" for ct, n in zip(in_ct, inputs, strict=True)]
    params += [f"{ct}*{r} out{k}" for k, ct in enumerate(out_ct)]
    params += [f"{scalar_ctype(graph.scalars[s].dtype)} s{s}" for s in scalars]
    params.append(f"{idx} n")
    in_cls = plan.classes[: len(inputs)]
    if plan.mode == "vector":
        params.append(f"{idx} inner")
        params += [f"{idx} cs{n.index}" for n, c in zip(inputs, in_cls, strict=True) if c == "col"]
        body = _vector_body(graph, roots, plan, inputs, in_ct, out_ct)
    else:
        params += [f"{idx} size{d}" for d in range(len(plan.sizes))]
        names = [f"in{n.index}" for n in inputs] + [f"out{k}" for k in range(len(roots))]
        for name, cls in zip(names, plan.classes, strict=True):
            if cls == "s":
                params += [f"{idx} st_{name}_{d}" for d in range(len(plan.sizes))]
        body = _strided_body(graph, roots, plan, inputs, out_ct, names)
    signature = ",\n    ".join(params)
    kernel = (
        f'extern "C" __global__ void KERNEL_NAME(\n    {signature}) {{\n'
        f"  const {idx} tid = ({idx})blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"  const {idx} stride = ({idx})blockDim.x * gridDim.x;\n" + body + "}\n"
    )
    header = "// " + graph.describe(roots).replace("\n", "\n// ") + f"\n// plan: {plan.key}\n"
    digest = hashlib.sha1((header + kernel).encode()).hexdigest()[:16]
    name = f"gt_fused_{digest}"
    uses_complex = "gt_c64" in kernel or "gt_c128" in kernel  # (its loads, stores, scalars)
    preamble = PREAMBLE if uses_complex else PREAMBLE_REAL
    source = preamble + "\n" + header + kernel.replace("KERNEL_NAME", name)
    return KernelSource(name, source, tuple(n.index for n in inputs), tuple(scalars), plan.key)


def _vector_body(graph, roots, plan, inputs, in_ct, out_ct) -> str:
    vec, idx, cls = plan.vec, plan.index, plan.classes
    need_rc = any(c in ("row", "col") for c in cls)
    lines = [f"  const {idx} nvec = n / {vec};", f"  for ({idx} v = tid; v < nvec; v += stride) {{",
             f"    const {idx} base = v * {vec};"]  # fmt: skip
    if need_rc:
        lines.append(f"    const {idx} col = base % inner, row = base / inner;")
    loads = {}
    for node, ct, c in zip(inputs, in_ct, cls, strict=False):
        a = f"a{node.index}"
        if c == "col":
            lines.append(f"    const {ct} {a} = in{node.index}[row * cs{node.index}];")
            loads[node.index] = a
        else:
            off = "base" if c == "c" else "col"
            lines.append(f"    {ct} {a}[{vec}];")
            lines.append(f"    gt_load<{ct}, {vec}>(in{node.index} + {off}, {a});")
            loads[node.index] = f"{a}[k]"
    lines += [f"    {ct} r{k}[{vec}];" for k, ct in enumerate(out_ct)]
    lines += ["#pragma unroll", f"    for (int k = 0; k < {vec}; ++k) {{"]
    stmts, results = _compute(graph, roots, loads, "      ")
    lines += stmts
    for k, ((val, vt), ct) in enumerate(zip(results, out_ct, strict=True)):
        lines.append(f"      r{k}[k] = {_store(val, vt, ct)};")
    lines.append("    }")
    lines += [f"    gt_store<{ct}, {vec}>(out{k} + base, r{k});" for k, ct in enumerate(out_ct)]
    lines += ["  }", f"  for ({idx} i = nvec * {vec} + tid; i < n; i += stride) {{"]
    if need_rc:
        lines.append(f"    const {idx} col = i % inner, row = i / inner;")
    tail_loads = {}
    for node, c in zip(inputs, cls, strict=False):
        off = {"c": "i", "row": "col", "col": f"row * cs{node.index}"}[c]
        tail_loads[node.index] = f"in{node.index}[{off}]"
    stmts, results = _compute(graph, roots, tail_loads, "    ")
    lines += stmts
    for k, ((val, vt), ct) in enumerate(zip(results, out_ct, strict=True)):
        lines.append(f"    out{k}[i] = {_store(val, vt, ct)};")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def _strided_body(graph, roots, plan, inputs, out_ct, names) -> str:
    idx, ndim = plan.index, len(plan.sizes)
    strided = [nm for nm, c in zip(names, plan.classes, strict=True) if c == "s"]
    lines = [f"  for ({idx} i = tid; i < n; i += stride) {{"]
    if strided:
        lines.append(f"    {idx} rem = i;")
        lines.append(f"    {idx} " + ", ".join(f"o_{nm} = 0" for nm in strided) + ";")
        for d in range(ndim - 1, -1, -1):
            if d > 0:
                lines.append(f"    {{ const {idx} c = rem % size{d}; rem /= size{d};")
            else:
                lines.append(f"    {{ const {idx} c = rem;")
            lines += [f"      o_{nm} += c * st_{nm}_{d};" for nm in strided]
            lines.append("    }")
    offset = {
        nm: (f"o_{nm}" if c == "s" else "i") for nm, c in zip(names, plan.classes, strict=True)
    }
    loads = {n.index: f"in{n.index}[{offset[f'in{n.index}']}]" for n in inputs}
    stmts, results = _compute(graph, roots, loads, "    ")
    lines += stmts
    for k, ((val, vt), ct) in enumerate(zip(results, out_ct, strict=True)):
        lines.append(f"    out{k}[{offset[f'out{k}']}] = {_store(val, vt, ct)};")
    lines.append("  }")
    return "\n".join(lines) + "\n"
