"""ParameterDict's key order and update() errors, recorded from torch 2.13: a plain dict is
taken in sorted key order (it names the parameters, so state_dict() follows), an OrderedDict,
a ParameterDict or a sequence of pairs as given."""

from collections import OrderedDict

import pytest

import gpu_tensor as gt


def _p():
    return gt.nn.Parameter(gt.ones(1))


def test_a_plain_dict_is_taken_in_sorted_key_order():
    pd = gt.nn.ParameterDict({"b": _p(), "a": _p(), "c": _p()})
    assert list(pd.keys()) == ["a", "b", "c"]

    class M(gt.nn.Module):
        def __init__(self):
            super().__init__()
            self.params = gt.nn.ParameterDict({"z": _p(), "y": _p()})

    assert list(M().state_dict()) == ["params.y", "params.z"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: OrderedDict([("b", _p()), ("a", _p())]),
        lambda: [("b", _p()), ("a", _p())],
        lambda: gt.nn.ParameterDict(OrderedDict([("b", _p()), ("a", _p())])),
    ],
    ids=["OrderedDict", "pairs", "ParameterDict"],
)
def test_ordered_inputs_keep_their_order(make):
    assert list(gt.nn.ParameterDict(make()).keys()) == ["b", "a"]


def test_update_errors_are_torchs():
    with pytest.raises(TypeError, match="should be called with an iterable of key/value pairs"):
        gt.nn.ParameterDict(5)
    with pytest.raises(ValueError, match=r"element #0 has length 1; 2 is required"):
        gt.nn.ParameterDict([("a",)])
    with pytest.raises(TypeError, match=r"element #0 should be Iterable"):
        gt.nn.ParameterDict([5])
