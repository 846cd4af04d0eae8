"""Elementwise fusion: one op table, one codegen path, `gt.fuse`.

Importing this package never imports cupy (the compile step does, lazily).
"""

from .fuse import Fused, FusionError, fuse

__all__ = ["fuse", "Fused", "FusionError"]
