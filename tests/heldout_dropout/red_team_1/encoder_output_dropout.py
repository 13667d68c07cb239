"""Misplacement: dropout on the encoder's output (memory = Dropout(LayerNorm(...)) of the last encoder layer),
besides the paper's places. Where does the check say it is?"""
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter

class E(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        t = model.module
        drop = nn.Dropout(model.config.dropout)
        t.add_module("memory_dropout", drop)
        orig = t.encode
        t.encode = lambda src: drop(orig(src))
        return model
adapter = E(name="redteam:encoder_output_dropout")
