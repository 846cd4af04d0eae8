"""What Adam's host step (optim/host_step.py) reuses from one step of a parameter group to
the next: its runs' flat views, state arrays and storages, keyed by everything that, replaced,
would make them stale (parameters, their arrays, the state tensors and their arrays, the
step counts' versions). A step whose key differs takes the checking path
and plans again; a test replaces each of these and compares with a fresh optimizer
(tests/optim/test_host_step.py)."""

from __future__ import annotations

from itertools import chain
from operator import attrgetter, is_, itemgetter, methodcaller

__all__ = ["Plan"]

_DATA, _VERSION = attrgetter("_data"), attrgetter("_version")
_RAVEL = methodcaller("reshape", -1)


class _Run:
    """One run of a plan: its parameters' places in the step's list (`take` picks their
    gradients; a large parameter's run sits between the small ones it interrupts), their
    flat views, the flat state arrays, and the scratch slices scattered back from."""

    __slots__ = ("at", "take", "offsets", "total", "flat", "state", "_pieces")

    def __init__(self, places, offsets, total, run, state):
        self.at, self.take = places[0], itemgetter(*places)
        self.offsets, self.total = offsets, total
        self.flat = [p._data.reshape(-1) for p in run]
        self.state, self._pieces = state, (None, None)

    def gathered(self, grads) -> list:
        """The run's gradients (of the step's list), flat."""
        return list(map(_RAVEL, map(_DATA, self.take(grads))))

    def pieces(self, pf):
        """pf cut at the parameters' offsets, kept while the scratch buffer is the same."""
        base, cut = self._pieces
        if base is not pf.base or base is None:
            cut = [pf[o : o + a.size] for o, a in zip(self.offsets, self.flat, strict=True)]
            self._pieces = (pf.base, cut)
        return cut


class Plan:
    """What a group's step needs that does not change between steps while `key` holds: the
    parameters (identity, array), their state tensors (identity, array), and
    the step counts' storage versions as the last step left them (unwritten since, so still
    equal). A parameter replaced or `set_`, a state loaded (load_state_dict) or written
    (a new entry, `step.fill_`) fails it, and the step takes the checking path again."""

    __slots__ = ("names", "key", "runs", "step_data", "step_st", "versions", "bumps")

    def __init__(self, opt, params, names, lay):
        self.names, self.key = names, _key(opt, params)
        steps = [opt.state[p]["step"] for p in params]
        if len(set(map(id, steps))) != len(steps):
            self.key = None  # a step count shared by two parameters: check every step
        self.step_data = list(map(_DATA, steps))
        self.step_st = [s._storage for s in steps]
        self.runs, bumps = [], {}
        place = {id(p): k for k, p in enumerate(params)}
        for run, offsets, total, flats in lay.runs:
            state = flats
            if offsets is None:
                state = [opt.state[run[0]][n]._data.reshape(-1) for n in names]
            places = [place[id(p)] for p in run]
            self.runs.append(_Run(places, offsets, total, run, state))
            for p in run:
                for t in (p, *(opt.state[p][n] for n in names)):
                    st = t._storage
                    bumps[st] = bumps.get(st, 0) + 1
        for st in self.step_st:
            bumps[st] = bumps.get(st, 0) + 1
        self.bumps = list(bumps.items())
        self.versions = None

    def bump_versions(self) -> None:
        """The step's writes: each storage by as many bumps as tensors on it were written
        (one per parameter, state tensor and step count), and the step counts' new versions."""
        for st, n in self.bumps:
            st._version += n
        self.versions = tuple(map(_VERSION, self.step_st))

    def holds(self, opt, params, names) -> bool:
        key = self.key
        if key is None or names != self.names:
            return False
        now = _key(opt, params)
        return (
            now is not None
            and len(now) == len(key)
            and all(map(is_, now, key))
            and tuple(map(_VERSION, self.step_st)) == self.versions
        )


def _key(opt, params):
    """The parameters, their arrays (a tensor's device, dtype, shape and storage change only
    with its array: set_, resize_), the state dicts' entries and those tensors' arrays; the
    plan holds them, so `is` compares them. None for a state entry that is not a tensor."""
    try:
        vals = [*chain.from_iterable(map(dict.values, map(opt.state.__getitem__, params)))]
        return [*params, *map(_DATA, params), *vals, *map(_DATA, vals)]
    except (AttributeError, TypeError):  # a state that is not a dict of tensors: check every step
        return None
