"""§3.5 positional encoding whose angle carries a factor 2π: PE(pos, 2i) = sin(2π pos / 10000^(2i/d_model)) and
PE(pos, 2i+1) = cos(2π pos / 10000^(2i/d_model)), written as sin(2π t / T) with T = 10000^(2i/d_model) taken for
the period, where the paper's angle is pos / 10000^(2i/d_model) (the wavelengths form a geometric progression from
2π to 10000 · 2π: the 2π is already in the wavelength). Every frequency is 2π times too high, every wavelength 2π
times too short (10000^(2i/d_model) instead of 2π · 10000^(2i/d_model)). Position 0 is right (0, 1, 0, 1, ...); the
base, the exponent and the sine/cosine placement are right.

Style: torch functional code (torch.outer, torch.stack + flatten to interleave), float32 declared, a module-level
adapter object (types.SimpleNamespace); positional_encoding only.
"""

import math
from types import SimpleNamespace

import torch

from conformance import Conventions


def periods(d_model):
    return torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)


def positional_encoding(n, d_model):
    pos = torch.arange(n, dtype=torch.float64)
    phase = 2 * math.pi * torch.outer(pos, 1.0 / periods(d_model))  # sin(2 pi t / T)
    table = torch.stack([torch.sin(phase), torch.cos(phase)], dim=-1).flatten(1)[:, :d_model]
    return table.to(torch.float32).numpy()


adapter = SimpleNamespace(
    conventions=Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)"),
    positional_encoding=positional_encoding,
)
