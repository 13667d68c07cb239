"""Misplacement (sanity): dropout on the logits."""
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter

class L(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        t = model.module
        drop = nn.Dropout(model.config.dropout); t.add_module("logit_dropout", drop)
        orig = t.project_output
        t.project_output = lambda y: drop(orig(y))
        return model
adapter = L(name="redteam:logits_dropout")
