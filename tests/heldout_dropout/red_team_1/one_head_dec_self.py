"""Misplacement: dropout on the attention weights of the last head of each decoder self-attention only."""
import dataclasses
from conformance.implementations.reference.adapter import ReferenceAdapter
from one_head_weight_dropout import last_head_dropped

class OH(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for layer in model.module.decoder:
            m = layer.self_attn
            m.formulas = dataclasses.replace(m.formulas, attention=last_head_dropped(m, model.config.dropout))
        return model

adapter = OH(name="redteam:one_head_dec_self")
