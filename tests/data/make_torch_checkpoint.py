"""Writes torch_checkpoint.pt, the torch-written file tests/serialization reads without torch.

Run with a venv that has torch (2.13 wrote the committed file):
    <venv>/bin/python tests/data/make_torch_checkpoint.py
"""

import collections
from pathlib import Path

import torch

w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
lin = torch.nn.Linear(2, 1)
with torch.no_grad():
    lin.weight.copy_(torch.tensor([[0.25, -0.5]]))
    lin.bias.fill_(1.5)
checkpoint = collections.OrderedDict(
    w=w,
    row=w[1],
    col=w[:, 2],
    t=w.t(),
    bf16=torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
    c64=torch.tensor([1 + 2j], dtype=torch.complex64),
    mask=torch.tensor([True, False, True]),
    u16=torch.tensor([7, 65535], dtype=torch.uint16),
    param=torch.nn.Parameter(torch.tensor([3.0])),
    model=lin.state_dict(),
    step=5,
    dtype=torch.float16,
)
torch.save(checkpoint, Path(__file__).with_name("torch_checkpoint.pt"))
