"""MISPLACEMENT (extra dropout): stochastic depth / drop-path on every residual branch (timm's DropPath: one Bernoulli
per sample, scaled by 1/keep), on top of the paper's elementwise dropout: LN(x + DropPath(Dropout(Sublayer(x))))."""
import torch
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter

class DropPathThenDropout(nn.Module):
    def __init__(self, dropout): super().__init__(); self.dropout = dropout; self.p = dropout.p
    def forward(self, x):
        x = self.dropout(x)
        if not self.training or self.p == 0: return x
        keep = torch.bernoulli(torch.full((x.shape[0],) + (1,) * (x.dim() - 1), 1 - self.p, dtype=x.dtype))
        return x * keep / (1 - self.p)

class D(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for layer in list(model.module.encoder) + list(model.module.decoder):
            layer.dropout = DropPathThenDropout(layer.dropout)
        return model
adapter = D(name="redteam2:drop_path_extra")
