"""MISPLACEMENT: dropout on the attention weights of every SELF-attention (encoder and decoder), with one mask for all
heads and the batch (Flax's dot_product_attention default, broadcast_dropout=True: dropout_shape = (1,..,1, Lq, Lk)).
The cross-attentions have no attention dropout. Everything else as the paper."""
import dataclasses, torch
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import MultiHeadAttention

def broadcast_dropped(module, p):
    attention = module.formulas.attention
    def attend(q, k, v, keep):
        _, w = attention(q, k, v, keep)
        if module.training and p > 0:
            m = torch.bernoulli(torch.full((1, 1) + tuple(w.shape[-2:]), 1 - p, dtype=w.dtype))  # shared by batch and heads
            w2 = w * m / (1 - p)
        else:
            w2 = w
        return w2 @ v, w
    return attend

class B(ReferenceAdapter):
    where = ("self_attn",)
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for name, m in model.module.named_modules():
            if isinstance(m, MultiHeadAttention) and name.rsplit(".", 1)[-1] in self.where:
                m.formulas = dataclasses.replace(m.formulas, attention=broadcast_dropped(m, model.config.dropout))
        return model

adapter = B(name="redteam2:selfattn_broadcast_weight_dropout")
