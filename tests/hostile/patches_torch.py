"""Attack: replace torch's comparisons (``allclose``, ``equal``, ``testing.assert_close``); LayerNorm is wrong.

Expected: the patches live in the worker only; the LayerNorm checks fail.
"""

import torch
import torch.testing

from conformance import Conventions

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)


class Adapter:
    conventions = Conventions(dtype="float32", framework="torch")

    def layer_norm(self, x, gamma, beta, eps):
        t = torch.from_numpy(x)
        return (t - t.mean(-1, keepdim=True)).numpy()  # centred, never scaled


adapter = Adapter()
