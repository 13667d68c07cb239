"""Misplacement (missing dropout): the first layer of each stack has no dropout on its sublayer outputs
(e.g. code that passes dropout=0 to layer 0 believing the embedding dropout covers it). Layers >= 1 faithful."""
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter

class L0(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        model.module.encoder[0].dropout = nn.Identity()
        model.module.decoder[0].dropout = nn.Identity()
        return model

adapter = L0(name="redteam:layer0_no_dropout")
