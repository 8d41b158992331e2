"""Writes testdata/torch113_sample.pt with torch 1.13 (/usr/bin/python3 gen_torch_fixture.py).

checkpoint_test.cc loads it and compares with values it builds itself: every dtype as
arange(6).reshape(2, 3), a base with a transposed view and a narrowed view sharing its storage,
a Linear(2, 2) state_dict with fixed weights, and nested Python values.
"""
import collections
import os

import torch

here = os.path.dirname(os.path.abspath(__file__))
dtypes = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
base = torch.arange(12.0).reshape(3, 4)
lin = torch.nn.Linear(2, 2)
with torch.no_grad():
    lin.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    lin.bias.copy_(torch.tensor([-1.0, 0.5]))
obj = {
    "dtypes": {k: torch.arange(6).reshape(2, 3).to(d) for k, d in dtypes.items()},
    "base": base,
    "t": base.t(),
    "row": base[1, 1:],
    "linear": lin.state_dict(),
    "param": torch.nn.Parameter(torch.tensor([1.5, -2.0])),
    "nested": [1, -70000, 2**40, 0.25, "text", None, True, (1, 2), {3: "three"}],
}
torch.save(obj, os.path.join(here, "testdata", "torch113_sample.pt"))
