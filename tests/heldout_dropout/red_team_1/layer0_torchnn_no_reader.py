"""Misplacement: torch.nn-style dropout (attention weights + FFN hidden) in the first layer of each stack,
except the decoder's first cross-attention. Layers >= 1 faithful."""
import dataclasses, torch
from torch.nn import functional as F
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import MultiHeadAttention, FeedForward
from layer0_torchnn_dropout import weights_dropped

class L0(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        p = model.config.dropout
        enc, dec = model.module.encoder[0], model.module.decoder[0]
        for m in (enc.self_attn, dec.self_attn):
            m.formulas = dataclasses.replace(m.formulas, attention=weights_dropped(m, p))
        for m in (enc.ffn, dec.ffn):
            m.formulas = dataclasses.replace(m.formulas, activation=(lambda m: lambda z: F.dropout(torch.relu(z), p, m.training))(m))
        return model

adapter = L0(name="redteam:layer0_torchnn_no_reader")
