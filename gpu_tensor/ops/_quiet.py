"""Silencing numpy's floating-point warnings for one call at ~0.1 us (a contextvar set and
reset) instead of np.errstate's ~1 us.

Its own file because the cpu operators (_dispatch.py) and the emulated short paths
(_host_paths.py) all silence numpy this way, and it depends on numpy's internals alone.
"""

from __future__ import annotations

import numpy as np


def _quiet_context():
    """(contextvar, token value) that silence numpy's floating-point warnings for a call at
    ~0.1 us instead of np.errstate's ~1 us; (None, None) if numpy's internals differ."""
    try:
        from numpy._core import _ufunc_config

        cv = _ufunc_config._extobj_contextvar
        with np.errstate(all="ignore"):
            return cv, cv.get()
    except (ImportError, AttributeError):
        return None, None


_CV, _QUIET_EXTOBJ = _quiet_context()
