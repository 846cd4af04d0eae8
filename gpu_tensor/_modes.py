"""The modes word: one cheap check per op that lets a feature see every op.

The profiler times ops, autocast casts their inputs, quantized tensors route them. Each is a
bit of one word; every op entry point (the elementwise dispatcher, `@differentiable` ops, the
inline-checked views, in-place methods, `Fused.__call__`, the factories) starts with

    if MODES_ON:
        r = intercept("add", f, (self, other), None)
        if r is not PASS:
            return r

`MODES_ON`, a global of the op's own module (`MODES_ON = watch(globals())`), and
`ACTIVE[0]` are non-zero iff some thread has a mode on or a process-wide bit is set, so
while no mode is on an op pays one global read (two bytecodes; a list item is four:
profiling/bench_dispatch.py measures it). Code outside the hot modules reads `ACTIVE[0]`.

`intercept` finds the bits live for this thread (its own, plus the process-wide ones, less
those masked) and hands the op to the handler of the first: PROFILE, then AUTOCAST, then
QUANTIZED (the profiler times what is below it, casts included). A handler is called as
`handler(name, fn, args, kwargs)`; `fn` is the same entry point, which it may call to go on
(with other arguments, or not at all). Two rules keep that from recursing:

- Re-entry. While a handler runs, its op's name and the bits already handled for it are
  remembered; an entry point with that same name skips them. This one rule covers `fn`
  called by the handler, the layers of one op (`gt.add` -> the dispatcher's `add`), and the
  autograd recorder running the op once more. (A different op called inside an op's body
  with the same name, rare, is folded into it too.)
- Masking. A handler's bit is masked for everything it calls, the op's body included, as
  torch excludes its Autocast key while the kernel runs. A bit registered with
  `children=True` (the profiler) stays live for other ops called inside: the profiler sees
  linear's matmul and autocast's casts as child ops, as torch shows aten::to under an op.

State is thread-local (a mode entered in one thread is not seen by another, as torch's
autocast and profiler are per thread) except the process-wide bits of `set_global`.
Layer 0: stdlib only.
"""

from __future__ import annotations

import threading

__all__ = [
    "PROFILE",
    "AUTOCAST",
    "QUANTIZED",
    "ACTIVE",
    "PASS",
    "enter",
    "exit",
    "set_global",
    "register",
    "intercept",
    "live",
    "entry",
    "watch",
]

PROFILE = 1
AUTOCAST = 2
QUANTIZED = 4

# [word]: non-zero iff some thread has a mode on or a process-wide bit is set. A list, so
# the hot closures bind it once and read one item (a module attribute costs a dict lookup)
ACTIVE = [0]
PASS = object()  # intercept's answer when no handler wants the op: the caller goes on


class _Thread(threading.local):
    on = 0  # bits this thread has entered (class defaults: every new thread starts clean)
    masked = 0  # bits whose handler is running on this thread (children=False bits)
    name = None  # the op a handler is working on, and the bits it has had
    handled = 0

    def __init__(self):
        self.counts = {}  # bit -> how many enter()s are open (modes nest)


_tls = _Thread()
_lock = threading.Lock()
_threads_on = [0]  # enter()s open over all threads
_global = [0]  # process-wide bits
_handlers = {}  # bit -> (handler, children)
_watchers = []  # module namespaces whose MODES_ON global mirrors ACTIVE[0]


def _refresh():
    word = 1 if (_threads_on[0] or _global[0]) else 0
    ACTIVE[0] = word
    for namespace in _watchers:
        namespace["MODES_ON"] = word


def watch(namespace):
    """Keep `namespace["MODES_ON"]` (a module's globals()) equal to ACTIVE[0] from now on;
    returns its value now, so the module reads `MODES_ON = watch(globals())`. A global read
    is the cheapest check Python has (a specialised LOAD_GLOBAL); changing the value of an
    existing key keeps that specialisation valid."""
    with _lock:
        namespace["MODES_ON"] = ACTIVE[0]
        _watchers.append(namespace)
        return ACTIVE[0]


def enter(bit):
    """Turn mode `bit` on for this thread (nestable: each enter needs its exit)."""
    t = _tls
    with _lock:
        n = t.counts.get(bit, 0)
        t.counts[bit] = n + 1
        t.on |= bit
        _threads_on[0] += 1
        _refresh()


def exit(bit):  # noqa: A001 - the pair of enter()
    """Undo one enter(bit) of this thread."""
    t = _tls
    with _lock:
        n = t.counts.get(bit, 0)
        if n <= 0:
            raise RuntimeError(f"modes.exit({bit}) without a matching enter({bit}) on this thread")
        t.counts[bit] = n - 1
        if n == 1:
            t.on &= ~bit
        _threads_on[0] -= 1
        _refresh()


def set_global(bit, on):
    """Set or clear a process-wide bit (every thread sees it), e.g. "a quantized tensor
    exists"."""
    with _lock:
        _global[0] = (_global[0] | bit) if on else (_global[0] & ~bit)
        _refresh()


def register(bit, handler, *, children=False):
    """Make `handler(name, fn, args, kwargs)` the handler of mode `bit` (None removes it).
    children=True: the bit stays live for other ops called inside the handler (see the
    module docstring); otherwise it is masked until the handler returns."""
    if handler is None:
        _handlers.pop(bit, None)
    else:
        _handlers[bit] = (handler, children)


def live(name=None):
    """The bits that an op called `name` would be handed to on this thread now."""
    t = _tls
    bits = (t.on | _global[0]) & ~t.masked
    if name is not None and name == t.name:
        bits &= ~t.handled
    return bits


def intercept(name, fn, args, kwargs):
    """Hand the op `name` (entry point `fn`, called with `args`, `kwargs`) to the handler of
    its first live bit; PASS when there is none (the caller then runs the op itself)."""
    t = _tls
    bits = (t.on | _global[0]) & ~t.masked
    same = name == t.name
    if same:
        bits &= ~t.handled
    while bits:
        bit = bits & -bits  # lowest first: PROFILE, AUTOCAST, QUANTIZED
        entry_ = _handlers.get(bit)
        if entry_ is None:
            bits &= ~bit  # a mode on with no handler registered: nothing to do
            continue
        handler, children = entry_
        saved = t.masked, t.name, t.handled
        if not children:
            t.masked |= bit
        t.handled = (t.handled | bit) if same else bit
        t.name = name
        try:
            return handler(name, fn, args, {} if kwargs is None else kwargs)
        finally:
            t.masked, t.name, t.handled = saved
    return PASS


def entry(name, fn):
    """`fn` with the check in front, for entry points that are plain functions (factories,
    non-differentiable ops): `zeros = entry("zeros", zeros)`. One frame more than an inline
    check; the hot paths inline it instead."""
    active = ACTIVE

    def checked(*args, **kwargs):
        if active[0]:
            r = intercept(name, checked, args, kwargs)
            if r is not PASS:
                return r
        return fn(*args, **kwargs)

    checked.__name__ = getattr(fn, "__name__", name)
    checked.__qualname__ = getattr(fn, "__qualname__", name)
    checked.__module__ = getattr(fn, "__module__", __name__)
    checked.__doc__ = getattr(fn, "__doc__", None)
    checked.__wrapped__ = fn
    return checked
