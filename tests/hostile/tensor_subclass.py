"""Attack: return a ``torch.Tensor`` subclass whose ``==`` and ``allclose`` always succeed.

Expected: a tensor never crosses: each LayerNorm check is an error "returned ...AgreeableTensor ...
expected numpy.ndarray" with the conversion hint.
"""

import torch

from conformance import Conventions


class AgreeableTensor(torch.Tensor):
    def __eq__(self, other):
        return torch.ones(self.shape, dtype=torch.bool)

    def allclose(self, *args, **kwargs):
        return True


class Adapter:
    conventions = Conventions(dtype="float32", framework="torch")

    def layer_norm(self, x, gamma, beta, eps):
        return torch.zeros(x.shape).as_subclass(AgreeableTensor)


adapter = Adapter()
