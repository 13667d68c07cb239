"""Misplacement: the first layer of each stack drops like torch.nn.TransformerEncoderLayer does (attention weights
and the FFN's hidden layer) in addition to the paper's places. Layers >= 1 faithful."""
import dataclasses, torch
from torch.nn import functional as F
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import MultiHeadAttention, FeedForward

def weights_dropped(module, p):
    attention = module.formulas.attention
    def attend(q, k, v, keep):
        _, w = attention(q, k, v, keep)
        return F.dropout(w, p, module.training) @ v, w
    return attend

class L0(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        p = model.config.dropout
        for layer in (model.module.encoder[0], model.module.decoder[0]):
            for m in layer.modules():
                if isinstance(m, MultiHeadAttention):
                    m.formulas = dataclasses.replace(m.formulas, attention=weights_dropped(m, p))
                if isinstance(m, FeedForward):
                    m.formulas = dataclasses.replace(m.formulas, activation=(lambda m: lambda z: F.dropout(torch.relu(z), p, m.training))(m))
        return model

adapter = L0(name="redteam:layer0_torchnn_dropout")
