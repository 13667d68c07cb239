"""§3.5 sinusoidal positional encoding whose exponent 2i/d_model is computed with integer (floor) division: the
column indices are an integer tensor and the code writes ``two_i // d_model``, which is 0 for every 2i < d_model,
so 10000^(2i // d_model) = 1 and every column pair gets the angle pos itself: PE(pos, 2i) = sin(pos),
PE(pos, 2i+1) = cos(pos), where the paper has sin(pos / 10000^(2i/d_model)) and cos(pos / 10000^(2i/d_model))
(true division: wavelengths from 2 pi to 10000 * 2 pi). Column pair 0 is right; every other pair repeats it.

Style: torch functional code on integer index tensors, float32; positional_encoding only.
"""

import torch

from conformance import Conventions


class TorchSinusoids:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    def positional_encoding(self, n, d_model):
        pos = torch.arange(n).unsqueeze(1)  # (n, 1), int64
        two_i = torch.arange(0, d_model, 2)  # (d/2,), int64
        denom = torch.pow(10000.0, two_i // d_model)  # (d/2,)
        angle = pos / denom
        pe = torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(n, d_model)
        return pe.to(torch.float32).numpy()


adapter = TorchSinusoids()
