"""Misplacement: dropout on the attention weights of the last head only (in every attention), besides the paper's."""
import dataclasses, torch
from torch.nn import functional as F
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import MultiHeadAttention

def last_head_dropped(module, p):
    attention = module.formulas.attention
    def attend(q, k, v, keep):
        _, w = attention(q, k, v, keep)
        w2 = torch.cat([w[:, :-1], F.dropout(w[:, -1:], p, module.training)], 1)
        return w2 @ v, w
    return attend

class OH(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for m in model.module.modules():
            if isinstance(m, MultiHeadAttention):
                m.formulas = dataclasses.replace(m.formulas, attention=last_head_dropped(m, model.config.dropout))
        return model

adapter = OH(name="redteam:one_head_weight_dropout")
