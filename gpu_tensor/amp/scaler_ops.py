"""GradScaler's two device-side steps, torch's `_amp_foreach_non_finite_check_and_unscale_`
and `_amp_update_scale_`, as gpu_tensor ops that never read a value back to the host.

- `check_and_unscale_(grads, found_inf, inv_scale)`: the per-grad path (host devices, and on
  cuda the grads the multi-tensor kernel of grad_tables.py does not take, as torch's slow
  path; a few ops per grad): sets found_inf to 1 when any element
  of any grad is inf or NaN (`isfinite(g).all()` per grad, exact: a plain `g.sum()` could
  overflow to inf on finite values), and multiplies every grad by inv_scale in place.
- `update_scale_(scale, tracker, found_inf, growth, backoff, interval)`: one fused kernel
  that writes the new scale and growth tracker in place (torch's state machine: back off on
  inf, grow after `interval` clean steps unless the grown scale would be inf).
"""

from __future__ import annotations

import functools

import gpu_tensor as gt

__all__ = ["check_and_unscale_", "update_scale_", "finite_flags"]


def finite_flags(grads):
    """One 0-dim bool tensor per grad: are all its elements finite? (On the grads' device;
    nothing is read back.)"""
    return [gt.isfinite(g).all() for g in grads]


def check_and_unscale_(grads, found_inf, inv_scale, unscale=True) -> list:
    """torch._amp_foreach_non_finite_check_and_unscale_ over one device's grads of one dtype:
    found_inf (0-dim float32) becomes 1 if any element is non-finite; each grad is
    multiplied by inv_scale (0-dim float32) in place, computed in float32 (unscale=False:
    the check only). Returns the per-grad flags (for GradScaler's overflow report)."""
    if not grads:
        return []
    flags = finite_flags(grads)
    ok = flags[0]
    for flag in flags[1:]:
        ok = gt.logical_and(ok, flag)
    _merge_flag(ok, found_inf, out=(found_inf,))
    if unscale:
        for g in grads:
            g.mul_(inv_scale)
    return flags


@gt.fuse
def _merge_flag(ok, found):
    """found_inf = 1 unless every grad was finite."""
    return gt.where(ok, found, 1.0)


@functools.cache
def _update_kernel():
    def update(scale, tracker, found, growth, backoff, interval):
        successful = tracker + 1
        grown = (scale.double() * growth).float()  # torch: computed in double, stored f32
        finite = grown * 0 == 0  # (inf * 0 is NaN): never grow to inf
        at_interval = successful == interval
        kept = gt.where(at_interval, gt.where(finite, grown, scale), scale)
        new_scale = gt.where(found != 0, (scale.double() * backoff).float(), kept)
        new_tracker = gt.where(found != 0, 0, gt.where(at_interval, 0, successful))
        return new_scale, new_tracker

    return gt.fuse(update, kernel_name="amp_update_scale")


def update_scale_(
    scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval
) -> None:
    """torch._amp_update_scale_: the new scale and growth tracker, written in place."""
    _update_kernel()(
        scale,
        tracker,
        found_inf,
        float(growth_factor),
        float(backoff_factor),
        int(growth_interval),
        out=(scale, tracker),
    )
