"""@gt.fuse on cuda (over the simulated CuPy in the sim tier: the generated kernel runs from
its CUDA source) when out= overlaps an input in another layout: the kernel would read
elements it has already written; the result must match numpy's (computed before writing)."""

import numpy as np

import gpu_tensor as gt
from gpu_tensor import creation as cr


def test_out_aliasing_an_input_in_another_layout(device):
    @gt.fuse
    def add_one(x):
        return x + 1.0

    base = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    x = cr.tensor(base, device=device)
    add_one(x, out=x.t())
    assert x.cpu().numpy().tolist() == (base.T + 1.0).tolist()
    y = cr.tensor(base, device=device)
    add_one(y, out=y)  # same layout: in place is fine
    assert y.cpu().numpy().tolist() == (base + 1.0).tolist()
