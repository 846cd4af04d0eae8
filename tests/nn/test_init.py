"""gt.nn.init: torch's bounds and fan computation, in place, seeded, on every device."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpu_tensor as gt
from gpu_tensor import nn


def test_fans_and_gain():
    fan = nn.init._calculate_fan_in_and_fan_out
    assert fan(gt.empty(3, 5)) == (5, 3)
    assert fan(gt.empty(4, 2, 3, 3)) == (18, 36)  # conv weight: receptive field 3x3
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        fan(gt.empty(3))
    assert nn.init.calculate_gain("relu") == math.sqrt(2.0)
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert nn.init.calculate_gain("tanh") == 5.0 / 3
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        nn.init.calculate_gain("swish")


def test_kaiming_and_xavier_bounds(device):
    gt.manual_seed(1)
    w = gt.empty(200, 50, device=device, requires_grad=True)
    out = nn.init.kaiming_uniform_(w, nonlinearity="relu")
    assert out is w and w.is_leaf and w.requires_grad
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 50)
    v = w.detach().cpu().numpy()
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.95 * bound
    assert abs(v.std() - bound / math.sqrt(3)) < 0.05 * bound  # uniform's std
    default = math.sqrt(2.0 / (1 + 5)) * math.sqrt(3.0 / 50)  # torch's default a=sqrt(5)
    v = nn.init.kaiming_uniform_(w, a=math.sqrt(5)).detach().cpu().numpy()
    assert np.abs(v).max() <= default
    x = nn.init.xavier_uniform_(gt.empty(30, 70, device=device), gain=2.0)
    a = 2.0 * math.sqrt(6.0 / 100)
    v = x.cpu().numpy()
    assert np.abs(v).max() <= a and np.abs(v).max() > 0.95 * a
    n = nn.init.kaiming_normal_(gt.empty(300, 100, device=device), mode="fan_out")
    assert abs(n.cpu().numpy().std() - math.sqrt(2.0 / (1 + 0.01**2)) / math.sqrt(300)) < 0.01
    assert nn.init.zeros_(gt.ones(3, device=device)).cpu().numpy().tolist() == [0, 0, 0]


def test_seeded_init_is_reproducible():
    gt.manual_seed(7)
    a = nn.init.xavier_uniform_(gt.empty(4, 4)).numpy().copy()
    gt.manual_seed(7)
    b = nn.init.xavier_uniform_(gt.empty(4, 4)).numpy()
    np.testing.assert_array_equal(a, b)
