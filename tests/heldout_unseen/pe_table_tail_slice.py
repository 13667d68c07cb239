"""§3.5 positional encoding read from a precomputed table of 5,000 rows with the wrong slice: ``table[-n:]`` (the
last n rows) instead of ``table[:n]``, so the first token gets PE(5000 - n), the second PE(5001 - n), ...:
every position is offset by 5000 - n, where the paper gives position pos the encoding PE(pos) from pos = 0. Each
row is still a correct sinusoid row of some position; only the positions are wrong (right only for n = 5000).

Style: a torch.nn.Module holding the table as a registered buffer (the tutorials' ``PositionalEncoding``), float32;
positional_encoding only.
"""

import math

import torch
from torch import nn

from conformance import Conventions

MAX_LEN = 5000


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=MAX_LEN):
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)[:, : d_model // 2]
        self.register_buffer("pe", pe.float())

    def forward(self, n):
        return self.pe[-n:]  # the bug: the last n rows, not the first n


class BufferAdapter:
    conventions = Conventions(mask="keep", dtype="float32", framework="torch (nn.Module)",
                              supports={"max_len": MAX_LEN}, reasons={"max_len": "a table of 5,000 rows"})

    def positional_encoding(self, n, d_model):
        return PositionalEncoding(int(d_model))(int(n)).numpy()


adapter = BufferAdapter()
