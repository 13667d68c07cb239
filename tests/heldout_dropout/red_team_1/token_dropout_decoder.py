"""Misplacement of kind: on the decoder side, dropout drops whole d_model vectors (one Bernoulli per token:
nn.Dropout2d-style / T2T broadcast over the hidden dim / drop-path), not single numbers. Encoder faithful."""
import torch
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter

class TokenDropout(nn.Module):
    def __init__(self, p): super().__init__(); self.p = p
    def forward(self, x):
        if not self.training or self.p == 0: return x
        keep = torch.bernoulli(torch.full(x.shape[:-1] + (1,), 1 - self.p, dtype=x.dtype))
        return x * keep / (1 - self.p)

class T(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        t = model.module
        p = model.config.dropout
        for layer in t.decoder:
            layer.dropout = TokenDropout(p)
        # the target's embedding sum gets token dropout, the source's keeps element dropout
        elementwise, token = t.dropout, TokenDropout(p)
        orig_decode = t.decode
        def decode(tgt_in, memory, src):
            t.dropout = token
            try: return orig_decode(tgt_in, memory, src)
            finally: t.dropout = elementwise
        t.decode = decode
        return model

adapter = T(name="redteam:token_dropout_decoder")
