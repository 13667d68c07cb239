"""Misplacement: dropout on the projected queries and keys (inside attention), nowhere on V / weights."""
import dataclasses
from torch.nn import functional as F
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import MultiHeadAttention

def dropping_qk(module, p):
    attention = module.formulas.attention
    def attend(q, k, v, keep):
        return attention(F.dropout(q, p, module.training), F.dropout(k, p, module.training), v, keep)
    return attend

class QK(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for m in model.module.modules():
            if isinstance(m, MultiHeadAttention):
                m.formulas = dataclasses.replace(m.formulas, attention=dropping_qk(m, model.config.dropout))
        return model

adapter = QK(name="redteam:qk_dropout")
