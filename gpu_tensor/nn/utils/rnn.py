"""PackedSequence and torch.nn.utils.rnn's helpers: pad_sequence, pack_padded_sequence,
pad_packed_sequence, pack_sequence, unpad_sequence, unpack_sequence.

A PackedSequence holds the time-major concatenation of the batch's valid steps (sorted by
decreasing length), torch's layout, so `data` and `batch_sizes` read the same. The
recurrent layers take one by padding it back and masking the steps past each length
(exact: a masked step leaves the state unchanged), then pack their output again.
"""

from __future__ import annotations

from typing import NamedTuple

import gpu_tensor as gt

__all__ = [
    "PackedSequence",
    "pad_sequence",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pack_sequence",
    "unpad_sequence",
    "unpack_sequence",
    "invert_permutation",
]


class PackedSequence(NamedTuple):
    data: object
    batch_sizes: object = None
    sorted_indices: object = None
    unsorted_indices: object = None

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(data.device)

        return PackedSequence(
            data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices)
        )

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation):
    if permutation is None:
        return None
    out = gt.empty_like(permutation)
    out[permutation] = gt.arange(permutation.numel(), device=permutation.device)
    return out


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack variable-length (L_i, *) tensors into (L_max, B, *) (or (B, L_max, *))."""
    if padding_side not in ("right", "left"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    seqs = list(sequences)
    longest = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        pad = longest - s.shape[0]
        if pad:
            fill = gt.full((pad, *s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = gt.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return gt.stack(rows, 0 if batch_first else 1)


def _lengths_list(lengths):
    return [int(v) for v in (lengths.tolist() if isinstance(lengths, gt.Tensor) else lengths)]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    lens = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:], strict=False)):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when "
                "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                "to pack_padded_sequence and/or pack_sequence to sidestep this "
                "requirement if you do not need ONNX exportability."
            )
        order = None
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])
    x = input.transpose(0, 1) if batch_first else input  # (T, B, *)
    if order is not None:
        x = x.index_select(1, gt.tensor(order, device=x.device))
        lens = [lens[i] for i in order]
    if lens and min(lens) <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an "
            "element in 'lengths' that is <= 0"
        )
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(max(lens))]
    data = gt.cat([x[t, :b] for t, b in enumerate(batch_sizes)], 0)
    sorted_indices = None if order is None else gt.tensor(order, device=input.device)
    return PackedSequence(
        data, gt.tensor(batch_sizes), sorted_indices, invert_permutation(sorted_indices)
    )


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded (T, B, *) or (B, T, *), lengths) from a PackedSequence, batch in the
    original order."""
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                f"Expected total_length to be at least the length of the longest "
                f"sequence in input, but got total_length={total_length} and max "
                f"sequence length being {steps}"
            )
        steps = total_length
    batch = batch_sizes[0]
    rows, k = [], 0
    for b in batch_sizes:
        part = data[k : k + b]
        if b < batch:
            fill = gt.full(
                (batch - b, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device
            )
            part = gt.cat([part, fill], 0)
        rows.append(part)
        k += b
    for _ in range(steps - len(batch_sizes)):
        rows.append(
            gt.full((batch, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
        )
    padded = gt.stack(rows, 0)
    lengths = gt.tensor([sum(1 for b in batch_sizes if b > i) for i in range(batch)])
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu()]
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def padded_sorted(sequence):
    """(T, B, *) padded with zeros, in the packed (sorted) batch order, and the lengths."""
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    batch, rows, k = batch_sizes[0], [], 0
    for b in batch_sizes:
        part = data[k : k + b]
        if b < batch:
            part = gt.cat(
                [
                    part,
                    gt.zeros((batch - b, *data.shape[1:]), dtype=data.dtype, device=data.device),
                ],
                0,
            )
        rows.append(part)
        k += b
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(batch)]
    return gt.stack(rows, 0), lengths


def repack(padded, sequence):
    """`padded` (T, B, *) in sorted order, packed with `sequence`'s batch sizes."""
    sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    data = gt.cat([padded[t, :b] for t, b in enumerate(sizes)], 0)
    return PackedSequence(
        data, sequence.batch_sizes, sequence.sorted_indices, sequence.unsorted_indices
    )


def pack_sequence(sequences, enforce_sorted=True):
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
