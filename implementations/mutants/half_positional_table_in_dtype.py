"""The positional table computed in the half dtype: positions and angles rounded (float16 exact to 2,048, bfloat16 256).

Breaks §3.5, PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), in half precision: the positions themselves (4,999 is 5,000
in float16, 4,992 in bfloat16) and the angles pos x omega are rounded before the sine, which turns an angle off by
a few radians into another value. Real code builds its table with ``dtype=x.dtype``. In float32 runs this mutant is
the reference (its table in float64).
"""

import dataclasses

import torch

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE

HALF = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def positional_encoding_in(dtype: torch.dtype):
    def positional_encoding(n: int, d_model: int):
        pos = torch.arange(n, dtype=dtype).unsqueeze(1)
        two_i = torch.arange(0, d_model, 2, dtype=dtype)
        angle = pos / torch.pow(torch.tensor(10000.0, dtype=dtype), two_i / d_model)  # the bug: all in the dtype
        pe = torch.zeros(n, d_model, dtype=dtype)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
        return pe.to(torch.float64)
    return positional_encoding


class TableInDtype(ReferenceAdapter):
    def _set_dtype(self, dtype: str) -> None:
        super()._set_dtype(dtype)
        if dtype in HALF:
            self.formulas = dataclasses.replace(REFERENCE, positional_encoding=positional_encoding_in(HALF[dtype]))


adapter = TableInDtype(name="mutant:half_positional_table_in_dtype")
