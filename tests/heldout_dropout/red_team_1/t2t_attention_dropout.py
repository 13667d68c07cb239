"""Misplacement: dropout on the attention weights (tensor2tensor's attention_dropout, 0.1 in transformer_base_v2)
with T2T's default attention_dropout_broadcast_dims="0,1": one mask per (query, key), shared by the batch and heads.
Besides that, the paper's dropout at the paper's places."""
import dataclasses, torch
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import MultiHeadAttention

def broadcast_weight_dropout(module, p):
    attention = module.formulas.attention
    def attend(q, k, v, keep):
        _, w = attention(q, k, v, keep)
        if module.training and p > 0:
            mask = torch.bernoulli(torch.full((1, 1) + tuple(w.shape[-2:]), 1 - p, dtype=w.dtype))
            w_d = w * mask / (1 - p)
        else:
            w_d = w
        return w_d @ v, w
    return attend

class T2T(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for m in model.module.modules():
            if isinstance(m, MultiHeadAttention):
                m.formulas = dataclasses.replace(m.formulas, attention=broadcast_weight_dropout(m, model.config.dropout))
        return model

adapter = T2T(name="redteam:t2t_attention_dropout")
