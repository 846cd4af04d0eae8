"""What ops do with quantized tensors: the QUANTIZED handler of the per-op modes word
(gpu_tensor/_modes.py). The bit is on, process-wide, while any quantized tensor exists
(qtensor.py counts them); with no quantized tensor alive no op pays more than the word's
one read.

For an op that gets a quantized tensor (an argument, or one inside a list argument):
- views and moves run as they are (QTensor._view_of keeps the quantization);
- ops that only pick, order or compare values run on the storage integers and keep the
  quantizer (indexing, cat/stack of tensors with the same parameters, flip, max/min, sort,
  relu as max(q, zero_point), ==/!=, fill_ with the value quantized), as torch has them;
- everything else raises torch's NotImplementedError, "Could not run 'aten::<op>' with
  arguments from the 'QuantizedCPU' backend", naming the op: dequantize() first.
"""

from __future__ import annotations

from .. import _modes
from .. import dtype as _dt
from .._tensor import Tensor
from .methods import GETTERS, not_implemented
from .qtensor import QTensor, sync_bit

__all__ = ["handler", "VIEWS", "ON_INTS", "install"]

# views, moves and copies: QTensor keeps the quantization itself
VIEWS = frozenset(
    {
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "flatten",
        "unflatten",
        "transpose",
        "t",
        "permute",
        "movedim",
        "moveaxis",
        "swapaxes",
        "swapdims",
        "narrow",
        "select",
        "unbind",
        "expand",
        "expand_as",
        "broadcast_to",
        "unsqueeze",
        "squeeze",
        "as_strided",
        "contiguous",
        "clone",
        "detach",
        "to",
        "cpu",
        "cuda",
        "split",
        "chunk",
        "tensor_split",
        "T",
        "mT",
        "dequantize",
        *GETTERS,
    }
)
# ops whose result on the integers is the result's integers, same quantizer
ON_INTS = frozenset(
    {
        "index_select",
        "flip",
        "roll",
        "cat",
        "concat",
        "concatenate",
        "stack",
        "max",
        "min",
        "amax",
        "amin",
        "sort",
        "topk",
        "take",
        "masked_select",
        "repeat",
        "tile",
        "empty_like",
        "gather",
    }
)


def _key(q: QTensor) -> str:
    return "QuantizedCPU" if q.device.type == "cpu" else "QuantizedCUDA"


def _found(args, kwargs) -> list:
    qs = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, QTensor):
            qs.append(a)
        elif isinstance(a, (list, tuple)):
            qs.extend(x for x in a if isinstance(x, QTensor))
    return qs


def _ints(a):
    if isinstance(a, QTensor):
        return a._ints()
    if isinstance(a, (list, tuple)):
        return type(a)(_ints(x) for x in a)
    return a


def _wrap(r, qz, storage):
    if isinstance(r, Tensor) and not isinstance(r, QTensor) and r.dtype is storage:
        return QTensor._from_ints(r, qz)
    if isinstance(r, tuple):
        items = [_wrap(x, qz, storage) for x in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    if isinstance(r, list):
        return [_wrap(x, qz, storage) for x in r]
    return r


def _on_ints(name, fn, args, kwargs, qs):
    qz = qs[0]._qz
    if qz.per_channel_scheme:  # the channels' parameters would not follow the values
        raise not_implemented(name, _key(qs[0]))
    if any(not q._qz.same_as(qz) for q in qs[1:]):
        raise RuntimeError(
            f"{name}: the quantized tensors have different quantization "
            "parameters; dequantize() them and quantize the result again"
        )
    r = fn(*_ints(args), **{k: _ints(v) for k, v in kwargs.items()})
    return _wrap(r, qz, _dt.QUANTIZED[qz.dtype])


def _getitem(name, fn, args, kwargs, qs):
    """Basic indexing makes views (QTensor._view_of); advanced indexing gathers the
    integers, which keep a per-tensor quantizer."""
    r = fn(*args, **kwargs)
    if isinstance(r, QTensor) or not isinstance(r, Tensor) or r.dtype not in _dt.QUANTIZED:
        return r
    qz = qs[0]._qz
    if qz.per_channel_scheme:
        raise not_implemented("index.Tensor", _key(qs[0]))
    return QTensor._of(r._data, r.device, qz, r._st, r._base)


def _compare(name, fn, args, kwargs, qs):
    a, b = args[0], args[1]
    if isinstance(a, QTensor) and isinstance(b, QTensor) and a._qz.same_as(b._qz):
        return fn(a._ints(), b._ints())
    deq = [x.dequantize() if isinstance(x, QTensor) else x for x in (a, b)]
    return fn(*deq)


def _relu(name, fn, args, kwargs, qs):
    q = args[0]
    if q._qz.per_channel_scheme:
        raise not_implemented(name, _key(q))
    # relu in the quantized domain: max(q, zero_point) (zero_point is the real 0)
    return QTensor._from_ints(q._ints().clamp(min=q._qz.zero_point), q._qz)


def _fill(name, fn, args, kwargs, qs):
    q, value = args[0], args[1]
    if q._qz.per_channel_scheme:
        raise not_implemented(name, _key(q))
    from .functions import quantize_per_tensor

    one = quantize_per_tensor(
        Tensor._wrap(q._backend.xp.full((), float(value), "float32"), device=q.device),
        q._qz.scale,
        q._qz.zero_point,
        q.dtype,
    )
    q._ints().fill_(one._ints().item())
    return q


_RULES = {
    "eq": _compare,
    "ne": _compare,
    "__eq__": _compare,
    "__ne__": _compare,
    "relu": _relu,
    "relu_": _relu,
    "fill_": _fill,
    "__getitem__": _getitem,
    "getitem": _getitem,
}


def handler(name, fn, args, kwargs):
    """The QUANTIZED bit's handler: (op name, the op, its arguments)."""
    qs = _found(args, kwargs)
    if not qs:
        sync_bit()  # the last quantized tensor gone? the bit goes off (see qtensor.py)
        return _modes.PASS  # the op goes on as if no mode were on
    if name in VIEWS:
        return _modes.PASS
    if name in ON_INTS:
        return _on_ints(name, fn, args, kwargs, qs)
    rule = _RULES.get(name)
    if rule is None:
        raise not_implemented(name, _key(qs[0]))
    return rule(name, fn, args, kwargs, qs)


def install() -> None:
    """Register the handler (once, when the package is imported)."""
    _modes.register(_modes.QUANTIZED, handler)
