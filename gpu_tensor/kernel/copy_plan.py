"""The copy planner: strided copy problem -> the cheapest kernel that does it (pure Python).

Steps (HPTT's "fuse indices", PyTorch's TensorIterator reorder + coalesce):

1. drop size-1 dims; reject a destination that writes one address twice (stride 0);
2. flip dims the destination walks backwards (negative stride), so every dst stride is > 0;
3. same dtype: express the copy in opaque units (the element, or smaller when misaligned);
4. order dims by destination stride (outermost first) and coalesce neighbours that are
   contiguous in both source and destination;
5. pick the path:
   ``memcpy``     same dtype, both sides one contiguous run            -> cudaMemcpyAsync
   ``flat``       a cast, both sides contiguous                        -> gt_copy_flat (16 B)
   ``vectorized`` innermost dim contiguous on both sides and aligned   -> 16-byte accesses
                  (same dtype: wider units in gt_copy_nd; cast: gt_copy_rows)
   ``transpose``  the source-contiguous dim is not the destination's   -> tiled gt_copy_transpose
   ``nd``         anything else                                        -> gt_copy_nd
   with 32-bit index math whenever every offset and the item count fit, else 64-bit.

Strides and addresses come in bytes (numpy/cupy convention); the plan is in kernel units.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import variants as V

__all__ = ["CopyPlan", "plan_copy", "params_record", "PARAMS_DTYPE", "MAX_DIMS", "magic_divisor"]

MAX_DIMS = 8  # common.cuh GT_MAX_DIMS: deeper (already coalesced) problems loop on the host
TILE = 32  # copy_transpose.cu GT_TILE
TILE_MIN = 16  # a tiled side shorter than this wastes most of each 32-wide tile: use nd
INT32_LIMIT = 2**31 - 4096  # headroom: kernels compute index + block*items before the bound check

_FIELDS = ["ndim", "numel"]
for _f in ("size", "src_stride", "dst_stride", "magic", "shift"):
    _FIELDS += [f"{_f}{k}" for k in range(MAX_DIMS)]
_FIELDS += [
    "tile_ni",
    "tile_nj",
    "tile_src_si",
    "tile_src_sj",
    "tile_dst_si",
    "tile_dst_sj",
    "tiles_i",
    "tiles_j",
]
# common.cuh GtCopyParams: every field int64, in this order, no padding.
PARAMS_DTYPE = np.dtype([(name, "<i8") for name in _FIELDS])


@dataclasses.dataclass(frozen=True)
class CopyPlan:
    path: str  # 'empty' 'memcpy' 'flat' 'vectorized' 'transpose' 'nd' 'staged' 'fallback'
    dst_dtype: np.dtype
    src_dtype: np.dtype
    shape: tuple = ()  # kernel-unit problem, outermost first (for transpose: batch dims + i, j)
    dst_strides: tuple = ()  # in kernel units (elements, vectors, or opaque units)
    src_strides: tuple = ()
    dst_offset: int = 0  # bytes to add to the destination base address (negative-stride flips)
    src_offset: int = 0
    unit: int = 0  # same dtype: bytes per kernel unit; cast: 0 (typed elements)
    vec: int = 1  # lanes per access (flat/rows)
    index64: bool = False
    tile: tuple = ()  # transpose: (i, j) positions in shape; the others are batch dims
    loops: tuple = ()  # host loops over leading dims: ((size, dst_stride_B, src_stride_B), ...)
    nbytes: int = 0  # memcpy size
    numel: int = 0
    variant: V.KernelVariant | None = None
    reason: str = ""

    src_elems: int = 0  # unique source elements read (a broadcast source counts once)

    @property
    def bytes_moved(self) -> int:
        """Bytes read + written (the benchmark's accounting)."""
        return self.numel * self.dst_dtype.itemsize + self.src_elems * self.src_dtype.itemsize


def magic_divisor(d: int) -> tuple[int, int]:
    """(magic, shift) with n // d == (umulhi(n, magic) + n) >> shift for 0 <= n < 2**31."""
    if not 1 <= d < 2**31:
        raise ValueError(f"divisor out of range: {d}")
    shift = (d - 1).bit_length()
    magic = ((1 << 32) * ((1 << shift) - d)) // d + 1
    return magic, shift


def _span(shape, strides) -> int:
    return sum((n - 1) * abs(s) for n, s in zip(shape, strides, strict=True))


def _coalesce(dims):
    """dims: [size, dst_stride, src_stride] outermost first -> merged where both sides allow."""
    out = []
    for size, ds, ss in dims:
        if out and out[-1][1] == size * ds and out[-1][2] == size * ss:
            out[-1] = [out[-1][0] * size, ds, ss]
        else:
            out.append([size, ds, ss])
    return out


def _pow2_dividing(values, limit: int) -> int:
    g = 0
    for v in values:
        g = math.gcd(g, abs(int(v)))
    p = limit
    while p > 1 and g % p:
        p //= 2
    return p


ALIGN = 16  # the widest access any kernel makes: plans depend on addresses only modulo this


def plan_copy(shape, dst_strides, src_strides, dst_dtype, src_dtype, dst_addr=0, src_addr=0):
    """Plan ``dst[...] = src`` (cast to dst's dtype) over ``shape``; strides/addresses in bytes.

    ``src_strides`` may hold zeros (a broadcast source) or negatives. Returns a CopyPlan
    (cached: a plan depends on the addresses only through their alignment).
    """
    shape = tuple(int(n) for n in shape)
    dst_strides = tuple(int(s) for s in dst_strides)
    src_strides = tuple(int(s) for s in src_strides)
    if not len(shape) == len(dst_strides) == len(src_strides):
        raise ValueError(f"shape {shape} and strides {dst_strides}/{src_strides} differ in rank")
    return _plan(
        shape,
        dst_strides,
        src_strides,
        np.dtype(dst_dtype),
        np.dtype(src_dtype),
        int(dst_addr) % ALIGN,
        int(src_addr) % ALIGN,
    )


@functools.lru_cache(maxsize=4096)
def _plan(shape, dst_strides, src_strides, dst_dtype, src_dtype, dst_addr, src_addr):
    """The steps: refuse what no kernel can do; normalise the dims (size-1 dims dropped,
    every dim walked forwards, strides counted in copy units, runs coalesced); split off the
    outer dims beyond MAX_DIMS as host loops; then take the first path that applies:
    memcpy or a flat cast, a tiled transpose, a vectorized inner run, the generic copy."""
    numel = math.prod(shape)
    if numel == 0:
        return CopyPlan("empty", dst_dtype, src_dtype, reason="no elements")
    src_elems = math.prod(n for n, s in zip(shape, src_strides, strict=True) if s != 0)
    same = dst_dtype == src_dtype
    if not same and not V.can_cast_in_kernel(dst_dtype, src_dtype):
        return CopyPlan(
            "fallback",
            dst_dtype,
            src_dtype,
            numel=numel,
            src_elems=src_elems,
            reason=f"no kernel cast {src_dtype}->{dst_dtype}",
        )
    dims, dst_off, src_off = _forwards(shape, dst_strides, src_strides)
    dst_addr, src_addr = dst_addr + dst_off, src_addr + src_off
    units = _in_units(dims, dst_dtype, src_dtype, dst_addr, src_addr)
    if units is None:
        return CopyPlan(
            "staged",
            dst_dtype,
            src_dtype,
            numel=numel,
            src_elems=src_elems,
            reason="cast from/to misaligned memory: copy bytes first, then cast",
        )
    unit, dims = units
    dims.sort(key=lambda d: (d[1], abs(d[2])), reverse=True)
    dims = _coalesce(dims) or [[1, 1, 1]]  # a single element is a 1-element run
    loops, dims = _host_loops(dims, same, unit, dst_dtype, src_dtype)
    common = dict(
        dst_dtype=dst_dtype,
        src_dtype=src_dtype,
        dst_offset=dst_off,
        src_offset=src_off,
        numel=numel,
        src_elems=src_elems,
        loops=loops,
    )
    addrs = (dst_addr, src_addr)
    return (
        _contiguous_plan(dims, same, unit, addrs, common)
        or _transpose_plan(dims, same, unit, addrs, common)
        or _vectorized_plan(dims, same, unit, addrs, common)
        or _generic_plan(dims, same, unit, common)
    )


def _forwards(shape, dst_strides, src_strides):
    """[[n, dst_stride, src_stride], ...] without size-1 dims, each walked forwards on both
    sides (a negative destination stride flips both), and the byte offsets that costs."""
    dims, dst_off, src_off = [], 0, 0
    for n, ds, ss in zip(shape, dst_strides, src_strides, strict=True):
        if n == 1:
            continue
        if ds == 0:
            raise ValueError(
                "unsupported operation: the destination has a stride-0 (expanded) dimension, so "
                "more than one element refers to a single memory location. Clone it first."
            )
        if ds < 0:  # walk this dim forwards on both sides
            dst_off += (n - 1) * ds
            src_off += (n - 1) * ss
            ds, ss = -ds, -ss
        dims.append([n, int(ds), int(ss)])
    return dims, dst_off, src_off


def _in_units(dims, dst_dtype, src_dtype, dst_addr, src_addr):
    """(unit, dims) with byte strides counted in copy units. Same dtype: the widest power of
    two (<= 16 bytes) dividing every stride and address, the element split into units when
    smaller; a cast: unit 0, strides in each side's elements. None: a misaligned cast."""
    if dst_dtype == src_dtype:
        item = dst_dtype.itemsize
        unit = _pow2_dividing([item, dst_addr, src_addr] + [x for d in dims for x in d[1:]], 16)
        dims = [[n, ds // unit, ss // unit] for n, ds, ss in dims]
        if unit < item:  # split each element into units: one more, contiguous, inner dim
            dims.append([item // unit, 1, 1])
        return unit, dims
    aligned = (
        all(ds % dst_dtype.itemsize == 0 and ss % src_dtype.itemsize == 0 for _, ds, ss in dims)
        and dst_addr % dst_dtype.alignment == 0
        and src_addr % src_dtype.alignment == 0
    )
    if not aligned:
        return None
    return 0, [[n, ds // dst_dtype.itemsize, ss // src_dtype.itemsize] for n, ds, ss in dims]


def _host_loops(dims, same, unit, dst_dtype, src_dtype):
    """(loops, dims): the outer dims beyond MAX_DIMS become host loops with byte strides,
    unless the whole copy is a transpose the tiled kernel takes as it is."""
    tileable = (
        _is_transpose(dims)
        and len(dims) <= MAX_DIMS + 2
        and (same or _fits32(*zip(*dims, strict=True)))
    )
    if len(dims) <= MAX_DIMS or tileable:
        return (), dims
    cut = len(dims) - MAX_DIMS
    loops = tuple(
        (n, ds * (unit or dst_dtype.itemsize), ss * (unit or src_dtype.itemsize))
        for n, ds, ss in dims[:cut]
    )
    return loops, dims[cut:]


def _run_layout(dims, same, unit, dst_dtype, src_dtype):
    """(shape, dst strides, src strides, fits 32-bit indexing, dst C type, src C type)."""
    shape_u = tuple(d[0] for d in dims)
    dstr = tuple(d[1] for d in dims)
    sstr = tuple(d[2] for d in dims)
    fits32 = _fits32(shape_u, dstr, sstr)
    dname = V.unit_type(unit) if same else V.c_type(dst_dtype)
    sname = V.unit_type(unit) if same else V.c_type(src_dtype)
    return shape_u, dstr, sstr, fits32, dname, sname


def _contiguous_plan(dims, same, unit, addrs, common):
    """One contiguous run with no host loops: memcpy, or a flat vectorized cast."""
    if not (len(dims) == 1 and dims[0][1] == 1 and dims[0][2] == 1 and not common["loops"]):
        return None
    dst_dtype, src_dtype = common["dst_dtype"], common["src_dtype"]
    (dst_addr, src_addr), count = addrs, dims[0][0]
    run = {"shape": (count,), "dst_strides": (1,), "src_strides": (1,), **common}
    if same:
        ubytes = unit or 1
        return CopyPlan(
            "memcpy", unit=ubytes, nbytes=count * ubytes, reason="contiguous, same dtype", **run
        )
    vec = V.cast_vector_width(dst_dtype, src_dtype)
    if (
        vec > 1
        and dst_addr % (vec * dst_dtype.itemsize) == 0
        and src_addr % (vec * src_dtype.itemsize) == 0
    ):
        var = V.variant("flat", V.c_type(dst_dtype), V.c_type(src_dtype), vec)
        return CopyPlan("flat", vec=vec, variant=var, reason="contiguous cast", **run)
    return None


def _transpose_plan(dims, same, unit, addrs, common):
    """The source's contiguous dim is not the destination's innermost one: a tiled copy
    through shared memory, with wide accesses when alignment allows."""
    shape_u, dstr, sstr, fits32, dname, sname = _run_layout(
        dims, same, unit, common["dst_dtype"], common["src_dtype"]
    )
    if not (_is_transpose(dims) and len(dims) <= MAX_DIMS + 2 and (same or fits32)):
        return None
    i = _tile_source_dim(dims)
    tile = (i, len(dims) - 1)
    reason = f"source-contiguous dim {i} != destination-contiguous dim {len(dims) - 1}"
    loop_strides = [x for lp in common["loops"] for x in lp[1:]]
    vec = _transpose_vec(dims, tile, unit, *addrs, loop_strides) if same and fits32 else 1
    if vec > 1:
        return CopyPlan(
            "transpose",
            shape=shape_u,
            dst_strides=dstr,
            src_strides=sstr,
            unit=unit,
            vec=vec,
            tile=tile,
            variant=V.variant("transpose_vec", dname, sname, vec),
            reason=reason + f", {vec}-wide accesses",
            **common,
        )
    return CopyPlan(
        "transpose",
        shape=shape_u,
        dst_strides=dstr,
        src_strides=sstr,
        unit=unit,
        index64=not fits32,
        tile=tile,
        variant=V.variant("transpose", dname, sname, 1, not fits32),
        reason=reason,
        **common,
    )


def _vectorized_plan(dims, same, unit, addrs, common):
    """The innermost dim is contiguous on both sides: wider units (same dtype) or a
    several-lane cast per thread, when every stride and address allows it."""
    dst_dtype, src_dtype, loops = common["dst_dtype"], common["src_dtype"], common["loops"]
    shape_u, dstr, sstr, fits32, dname, sname = _run_layout(dims, same, unit, dst_dtype, src_dtype)
    if not (dstr[-1] == 1 and sstr[-1] == 1 and len(dims) <= MAX_DIMS):
        return None
    dst_addr, src_addr = addrs
    outer = [x for d in dims[:-1] for x in d[1:]]
    if same:
        loop_strides = [x for lp in loops for x in lp[1:]]
        width = _pow2_dividing(
            [shape_u[-1] * unit, dst_addr, src_addr] + [x * unit for x in outer] + loop_strides, 16
        )
        if width <= unit:
            return None
        k = width // unit
        shp = shape_u[:-1] + (shape_u[-1] // k,)
        ds2 = tuple(s // k for s in dstr[:-1]) + (1,)
        ss2 = tuple(s // k for s in sstr[:-1]) + (1,)
        f32 = _fits32(shp, ds2, ss2)
        ut = V.unit_type(width)
        return CopyPlan(
            "vectorized",
            shape=shp,
            dst_strides=ds2,
            src_strides=ss2,
            unit=width,
            index64=not f32,
            variant=V.variant("nd", ut, ut, 1, not f32),
            reason=f"inner run contiguous: {width}-byte units",
            **common,
        )
    vec = V.cast_vector_width(dst_dtype, src_dtype)
    ok = (
        vec > 1
        and fits32
        and shape_u[-1] % vec == 0
        and all(
            x % vec == 0
            for x in outer
            + [lp[1] // dst_dtype.itemsize for lp in loops]
            + [lp[2] // src_dtype.itemsize for lp in loops]
        )
        and dst_addr % (vec * dst_dtype.itemsize) == 0
        and src_addr % (vec * src_dtype.itemsize) == 0
    )
    if not ok:
        return None
    shp = shape_u[:-1] + (shape_u[-1] // vec,)
    ds2 = tuple(s // vec for s in dstr[:-1]) + (1,)
    ss2 = tuple(s // vec for s in sstr[:-1]) + (1,)
    return CopyPlan(
        "vectorized",
        shape=shp,
        dst_strides=ds2,
        src_strides=ss2,
        vec=vec,
        variant=V.variant("rows", dname, sname, vec, False),
        reason=f"inner run contiguous: {vec}-lane cast",
        **common,
    )


def _generic_plan(dims, same, unit, common):
    shape_u, dstr, sstr, fits32, dname, sname = _run_layout(
        dims, same, unit, common["dst_dtype"], common["src_dtype"]
    )
    return CopyPlan(
        "nd",
        shape=shape_u,
        dst_strides=dstr,
        src_strides=sstr,
        unit=unit,
        index64=not fits32,
        variant=V.variant("nd", dname, sname, 1, not fits32),
        reason="generic strided copy",
        **common,
    )


def _fits32(shape, dstr, sstr) -> bool:
    return (
        math.prod(shape) < INT32_LIMIT
        and _span(shape, dstr) < INT32_LIMIT
        and _span(shape, sstr) < INT32_LIMIT
    )


def _tile_source_dim(dims) -> int | None:
    """The non-innermost dim with the smallest nonzero source stride (the tile's i)."""
    cand = [k for k in range(len(dims) - 1) if dims[k][2] != 0]
    if not cand:
        return None
    return min(cand, key=lambda k: (abs(dims[k][2]), -k))


def _is_transpose(dims) -> bool:
    """The destination's innermost dim j walks the source with a larger stride than some other
    dim i does: tile (i, j) so both the reads (along i) and the writes (along j) coalesce.
    Both sides must be long enough to fill tiles."""
    if len(dims) < 2:
        return False
    nj, _, ssj = dims[-1]
    i = _tile_source_dim(dims)
    if i is None or ssj == 0 or nj < TILE_MIN or dims[i][0] < TILE_MIN:
        return False
    return abs(dims[i][2]) < abs(ssj)


def _transpose_vec(dims, tile, unit, dst_addr, src_addr, loop_strides) -> int:
    """V for gt_copy_transpose_vec, or 1 when a condition in its header comment fails."""
    vec = V.TRANSPOSE_VEC.get(unit, 1)
    if vec == 1:
        return 1
    i, j = tile
    if dims[i][2] != 1 or dims[j][1] != 1:
        return 1
    multiples = [dims[i][0], dims[j][0], dims[j][2], dims[i][1]]
    multiples += [x for k, d in enumerate(dims) if k not in tile for x in d[1:]]
    if any(x % vec for x in multiples):
        return 1
    if any(x % (vec * unit) for x in [dst_addr, src_addr, *loop_strides]):
        return 1
    return vec


@functools.lru_cache(maxsize=4096)
def params_record(plan: CopyPlan) -> np.void:
    """The GtCopyParams struct for ``plan`` (by-value kernel argument; cached: do not mutate)."""
    rec = np.zeros((), PARAMS_DTYPE)
    shape, ds, ss = list(plan.shape), list(plan.dst_strides), list(plan.src_strides)
    if plan.path == "transpose":
        i, j = plan.tile
        rec["tile_ni"], rec["tile_nj"] = shape[i], shape[j]
        rec["tile_src_si"], rec["tile_src_sj"] = ss[i], ss[j]
        rec["tile_dst_si"], rec["tile_dst_sj"] = ds[i], ds[j]
        side = TILE * max(1, plan.vec)  # copy_transpose.cu: GT_TILE, or GT_TILE * V
        rec["tiles_i"], rec["tiles_j"] = -(-shape[i] // side), -(-shape[j] // side)
        batch = [k for k in range(len(shape)) if k not in plan.tile]
        shape, ds, ss = [shape[k] for k in batch], [ds[k] for k in batch], [ss[k] for k in batch]
    if len(shape) > MAX_DIMS:
        raise ValueError(f"plan has {len(shape)} dims; the kernels take at most {MAX_DIMS}")
    rec["ndim"] = len(shape)
    rec["numel"] = math.prod(shape)
    for k, (n, d, s) in enumerate(zip(shape, ds, ss, strict=True)):
        rec[f"size{k}"], rec[f"dst_stride{k}"], rec[f"src_stride{k}"] = n, d, s
        if not plan.index64:
            rec[f"magic{k}"], rec[f"shift{k}"] = magic_divisor(n)
    return rec[()]
