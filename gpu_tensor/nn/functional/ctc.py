"""ctc_loss: the connectionist temporal classification loss (Graves et al. 2006), torch's
arguments and reductions.

The forward (alpha) recursion runs over the blank-extended targets for all samples at once,
one vectorised step per input frame, in log space; autograd through the recursion gives the
exact gradient. Impossible alignments use a finite floor (-1e30) instead of -inf, so no
0 * inf reaches the gradient; a loss at that floor is reported as inf, as torch reports it
(or 0, without gradient, under zero_infinity=True). log_probs.grad is torch's (see the note
in ctc_loss).
"""

from __future__ import annotations

import numpy as np

import gpu_tensor as gt
from gpu_tensor.autograd.composite import composite

__all__ = ["ctc_loss"]

_FLOOR = -1e30  # log(0) stand-in: exp underflows to 0 against any real path
_IMPOSSIBLE = 1e29  # a loss this large came from the floor: no valid alignment


def _lse(*terms):
    """log(sum(exp(terms))) elementwise, stable (the max is a constant for autograd)."""
    m = terms[0].detach()
    for t in terms[1:]:
        m = gt.maximum(m, t.detach())
    return sum((t - m).exp() for t in terms).log() + m


def _host_ints(x):
    return [int(v) for v in (x.tolist() if isinstance(x, gt.Tensor) else x)]


def _extended(targets, target_lengths, blank):
    """(N, 2 S + 1) blank-interleaved labels (padded with blank), and where a skip over
    the previous blank is allowed (a label differing from the one two places back)."""
    lens = _host_ints(target_lengths)
    host = targets.cpu().numpy() if isinstance(targets, gt.Tensor) else np.asarray(targets)
    if host.ndim == 1:  # concatenated targets
        rows, k = [], 0
        for n in lens:
            rows.append(host[k : k + n])
            k += n
    else:
        rows = [host[b, :n] for b, n in enumerate(lens)]
    width = 2 * max(lens, default=0) + 1
    ext = np.full((len(rows), width), blank, dtype=np.int64)
    skip = np.zeros((len(rows), width), dtype=bool)
    for b, row in enumerate(rows):
        ext[b, 1 : 2 * len(row) : 2] = row
        for s in range(3, 2 * len(row), 2):
            skip[b, s] = ext[b, s] != ext[b, s - 2]
    return ext, skip, lens


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """log_probs: (T, N, C) (or (T, C) unbatched) log-softmax outputs; targets: (N, S)
    padded or 1-D concatenated; 'mean' divides each loss by its target length, then
    averages over the batch."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if isinstance(targets, gt.Tensor) else [targets]
        input_lengths = (
            [int(input_lengths)]
            if not isinstance(input_lengths, (list, tuple))
            and not (isinstance(input_lengths, gt.Tensor) and input_lengths.ndim)
            else input_lengths
        )
        target_lengths = (
            [int(target_lengths)]
            if not isinstance(target_lengths, (list, tuple))
            and not (isinstance(target_lengths, gt.Tensor) and target_lengths.ndim)
            else target_lengths
        )
    steps, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    ext_np, skip_np, t_lens = _extended(targets, target_lengths, blank)
    in_lens = _host_ints(input_lengths)
    if len(in_lens) != batch or len(t_lens) != batch:
        raise RuntimeError(
            f"input_lengths and target_lengths must have {batch} entries, got "
            f"{len(in_lens)} and {len(t_lens)}"
        )
    if any(n > steps for n in in_lens):
        raise RuntimeError(
            f"Expected input_lengths to have value at most {steps}, but got value {max(in_lens)}"
        )
    dev, width = log_probs.device, ext_np.shape[1]
    ext = gt.tensor(ext_np, device=dev)
    floor = gt.full((batch, width), _FLOOR, dtype=log_probs.dtype, device=dev)
    skip = gt.tensor(skip_np, device=dev)
    first = gt.tensor(
        np.arange(width) < np.minimum(2, 2 * np.array(t_lens)[:, None] + 1), device=dev
    )
    alive = gt.tensor(
        np.array(in_lens)[None, :, None] > np.arange(steps)[:, None, None], device=dev
    )  # (T, N, 1): frame t is inside sample n's input
    both = gt.tensor([[True, n > 0] for n in t_lens], device=dev)
    last = gt.tensor([[2 * n, max(2 * n - 1, 0)] for n in t_lens], device=dev)

    def per_sample(lp):
        alpha = gt.where(first, lp[0].gather(1, ext), floor)
        pad1 = gt.full((batch, 1), _FLOOR, dtype=lp.dtype, device=dev)
        pad2 = gt.full((batch, 2), _FLOOR, dtype=lp.dtype, device=dev)
        for t in range(1, steps):
            prev1 = gt.cat([pad1, alpha[:, :-1]], 1)
            prev2 = gt.where(skip, gt.cat([pad2, alpha[:, :-2]], 1), floor)
            step = lp[t].gather(1, ext) + _lse(alpha, prev1, prev2)
            alpha = gt.where(alive[t], step, alpha)
        ends = alpha.gather(1, last)
        loss = -_lse(ends[:, 0], gt.where(both[:, 1], ends[:, 1], floor[:, 0]))
        # torch's backward returns exp(log_probs) - occupancy over each sample's frames: the
        # gradient with respect to the logits under a log_softmax (the true one w.r.t.
        # log_probs lacks the exp term; through log_softmax both give the same logits
        # gradient). A term of value zero whose gradient is that exp makes log_probs.grad
        # torch's too.
        mass = (lp.exp() * alive.to(lp.dtype)).sum((0, 2))
        loss = loss + (mass - mass.detach())
        return gt.where(loss > _IMPOSSIBLE, gt.full_like(loss, float("inf")), loss)

    loss = composite("CtcLossBackward0", per_sample, log_probs)
    if zero_infinity:
        loss = gt.where(loss == float("inf"), gt.zeros_like(loss), loss)
    if reduction == "mean":
        denom = gt.tensor(t_lens, dtype=loss.dtype, device=dev).clamp(min=1)
        return (loss / denom).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
