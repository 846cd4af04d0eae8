"""The named singletons (layouts, qschemes, ReduceOp members) share one base class: each
prints by name and comes back from pickle, or deepcopy, as the very same object."""

import copy
import pickle

import pytest

import gpu_tensor as gt
from gpu_tensor import layouts
from gpu_tensor._constant import Constant
from gpu_tensor.distributed import ReduceOp
from gpu_tensor.quantized import quantizer

CONSTANTS = [
    *(v for n in layouts.__all__ if isinstance(v := getattr(layouts, n), Constant)),
    *(getattr(quantizer, n) for n in quantizer.__all__ if n.startswith("per_")),
    ReduceOp.SUM,
    ReduceOp.BXOR,
]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_constants_unpickle_as_themselves(protocol):
    for c in CONSTANTS:
        assert pickle.loads(pickle.dumps(c, protocol)) is c
        assert copy.deepcopy(c) is c


def test_constants_print_by_name_and_hold_only_their_name():
    assert repr(gt.strided) == "gpu_tensor.strided"
    assert repr(gt.per_channel_affine) == "gpu_tensor.per_channel_affine"
    assert repr(ReduceOp.AVG) == "<ReduceOp.AVG>"
    assert len(CONSTANTS) == 7 + 4 + 5 + 2  # layouts, memory formats, qschemes, ReduceOps
    assert repr(gt.channels_last_3d) == "gpu_tensor.channels_last_3d"
    for c in CONSTANTS:
        assert not hasattr(c, "__dict__")
        with pytest.raises(AttributeError):
            c.other = 1
