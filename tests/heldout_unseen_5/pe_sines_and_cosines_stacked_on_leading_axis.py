"""§3.5 positional encoding that stacks the sines and the cosines on a new *leading* axis and reshapes:
``torch.stack([angle.sin(), angle.cos()], dim=0).reshape(n, d_model)`` where ``dim=-1`` (interleave each
position's sine and cosine) was meant. The (2, n, d_model/2) stack read as (n, d_model) puts the sines of positions
2r and 2r + 1 side by side in row r for the first half of the rows, and the cosines in the second half, where the
paper's row pos holds sin(pos / 10000^(2i/d_model)) in column 2i and cos(...) in column 2i + 1. Even position 0 is
wrong (its row is sin(0), ..., sin(1 / 10000^(2i/d_model)), ..., not 0, 1, 0, 1, ...). The angles themselves (base,
exponent, positions) are right.

Style: torch functional code (torch.exp of a log-spaced frequency vector, outer product by broadcasting,
torch.stack + reshape), float32; a module-level adapter object; positional_encoding only.
"""

import math
from types import SimpleNamespace

import torch

from conformance import Conventions


def positional_encoding(n, d_model):
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    angle = pos * freq[None, :]  # (n, d_model / 2)
    pe = torch.stack([angle.sin(), angle.cos()], dim=0).reshape(n, d_model)
    return pe.numpy()


adapter = SimpleNamespace(
    conventions=Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)"),
    positional_encoding=positional_encoding,
)
