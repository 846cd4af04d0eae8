"""Where torch's basic-then-advanced indexing puts things, as numpy index plans.

torch applies ints, slices, None and Ellipsis first (ints as select(), None as unsqueeze())
and only then indexes with tensors; numpy treats ints as advanced indices and gives None
dims and empty results other strides/offsets. These helpers turn an index into the numpy
operations that reproduce torch's result shape, strides and storage offset.
"""

from __future__ import annotations

__all__ = ["empty_slice", "empty_basic", "none_strides", "split_advanced"]


def _is_basic(i) -> bool:
    return i is None or i is Ellipsis or type(i) is int or type(i) is slice


def empty_slice(self, dim, index):
    """self[:, ..., index] (`index` a slice at `dim`, empty result) with torch's layout:
    the step scales the stride, the clamped start moves the offset (numpy resets both)."""
    from .._views import empty_view

    start, stop, step = index.indices(self._data.shape[dim])
    st = list(self.stride())
    shp = list(self._data.shape)
    off = self.storage_offset() + start * st[dim]
    st[dim] *= step
    shp[dim] = len(range(start, stop, step))
    return empty_view(self, shp, st, off)


def empty_basic(self, idx, r):
    """self[idx] (basic, empty result) with torch's strides and storage offset."""
    from .._views import empty_view

    data = self._data
    nd, shp, st = data.ndim, data.shape, self.stride()
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    strides, off, k = [], self.storage_offset(), 0
    for i in idx:
        if i is None:
            strides.append(st[k] * shp[k] if k < nd else 1)
        elif i is Ellipsis:
            strides.extend(st[k : k + nd - used])
            k += nd - used
        elif type(i) is int:
            off += (i % shp[k]) * st[k]
            k += 1
        else:
            start, _, step = i.indices(shp[k])
            off += start * st[k]
            strides.append(st[k] * step)
            k += 1
    return empty_view(self, r.shape, strides, off)


def none_strides(xp, data, idx, r):
    """`r` = data[idx] with torch's strides for the dims None inserted: numpy gives them
    stride 0; torch applies None as unsqueeze(), whose new dim takes stride * size of the
    dim it lands before (1 at the end), e.g. zeros(2, 3)[None].stride() == (6, 3, 1)."""
    nd, shp, st = data.ndim, data.shape, data.strides
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    want = list(r.strides)
    k = o = 0  # next source dim, next result dim
    for i in idx:
        if i is None:
            want[o] = st[k] * shp[k] if k < nd else data.itemsize
            o += 1
        elif i is Ellipsis:
            o += nd - used
            k += nd - used
        else:
            o += type(i) is not int
            k += 1
    if tuple(want) == r.strides:
        return r
    return xp.lib.stride_tricks.as_strided(r, r.shape, tuple(want))


def split_advanced(data, idx):
    """(view, advanced index) giving torch's result for a mixed index `idx` on `data`.

    torch applies ints, slices, None and Ellipsis first (ints as select(), so they are not
    advanced indices as in numpy), then indexes the view with the tensors at the dims they
    now sit on: x[0, :, t] on (2, 3, 4) is (3, len(t)) in torch, (len(t), 3) in numpy; an
    Ellipsis spanning no dims does not separate two tensor indices. numpy's placement rule
    applied to that second, slices-and-arrays-only index is torch's."""
    if any(getattr(i, "ndim", 1) == 0 for i in idx if not _is_basic(i)):
        return data, idx  # a 0-d bool (x[True]): numpy's rule is torch's
    nd = data.ndim
    used = sum(
        1 if _is_basic(i) else i.ndim if i.dtype == bool else 1
        for i in idx
        if i is not None and i is not Ellipsis
    )
    basic, adv, pos = [], [], 0
    for i in idx:
        if i is Ellipsis:
            basic.append(i)
            pos += nd - used
        elif i is None:
            basic.append(i)
            pos += 1
        elif type(i) is int:
            basic.append(i)
        elif type(i) is slice:
            basic.append(i)
            pos += 1
        else:
            k = i.ndim if i.dtype == bool else 1  # a mask covers as many dims as it has
            basic.extend([slice(None)] * k)
            adv.append((pos, k, i))
            pos += k
    if not adv:
        return data, idx
    if Ellipsis not in basic:
        basic.append(Ellipsis)
    view = data[tuple(basic)]
    second, at = [], 0
    for p, k, i in adv:
        second.extend([slice(None)] * (p - at))
        second.append(i)
        at = p + k
    return view, tuple(second)
