"""FAITHFUL places, non-inverted dropout (Srivastava et al. 2014): training multiplies by the Bernoulli mask only,
evaluation multiplies by (1 - p). Expected: these two checks pass (the eval-mode scaling is another check's)."""
import torch
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter

class NonInverted(nn.Module):
    def __init__(self, p): super().__init__(); self.p = p
    def forward(self, x):
        if self.training:
            return x * torch.bernoulli(torch.full_like(x, 1 - self.p))
        return x * (1 - self.p)

class N(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        t = model.module; p = model.config.dropout
        t.dropout = NonInverted(p)
        for layer in list(t.encoder) + list(t.decoder):
            layer.dropout = NonInverted(p)
        return model
adapter = N(name="redteam:non_inverted")
