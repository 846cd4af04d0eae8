"""`gpu_tensor.cuda`: devices, memory, streams; torch.cuda's names and meanings.

Each submodule defines `__all__`; this package re-exports them. Nothing here
imports cupy at import time.
"""
