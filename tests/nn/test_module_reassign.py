"""Assigning to a name a Module already holds as a parameter, child module or buffer: None
or a value of the slot's kind replaces it; anything else is a TypeError whose message is
torch's (recorded from torch 2.13, except the buffer one: torch also names nn.Buffer)."""

import pytest

import gpu_tensor as gt
from gpu_tensor import nn


def _module():
    m = nn.Module()
    m.p = nn.Parameter(gt.zeros(2))
    m.c = nn.Linear(2, 2)
    m.register_buffer("b", gt.zeros(1))
    return m


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("p", 3, "cannot assign 'int' as parameter 'p' (torch.nn.Parameter or None expected)"),
        ("c", 3, "cannot assign 'int' as child module 'c' (torch.nn.Module or None expected)"),
        ("b", 3, "cannot assign 'int' as buffer 'b' (torch.Tensor or None expected)"),
    ],
)
def test_reassigning_a_slot_with_the_wrong_kind_raises(name, value, message):
    m = _module()
    with pytest.raises(TypeError) as info:
        setattr(m, name, value)
    assert str(info.value) == message


def test_reassigning_none_or_the_slot_kind_replaces_the_entry():
    m = _module()
    m.p, m.c, m.b = None, None, None
    assert (m._parameters["p"], m._modules["c"], m._buffers["b"]) == (None, None, None)
    m.b = gt.ones(1)
    assert m._buffers["b"].tolist() == [1.0] and "b" not in m.__dict__
