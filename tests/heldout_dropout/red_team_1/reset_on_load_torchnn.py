"""MISPLACED (torch.nn-style dropout on attention weights and the FFN hidden layer, in every layer, besides the
paper's places) + load_weights restarts training (step 0, masks keyed on the step), as reset_on_load.py."""
import dataclasses, torch
from torch.nn import functional as F
from conformance.implementations.reference.model import MultiHeadAttention, FeedForward
from layer0_torchnn_dropout import weights_dropped
from reset_on_load import R, FreshStartModel

class RT(R):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        p = model.config.dropout
        for m in model.module.modules():
            if isinstance(m, MultiHeadAttention):
                m.formulas = dataclasses.replace(m.formulas, attention=weights_dropped(m, p))
            if isinstance(m, FeedForward):
                m.formulas = dataclasses.replace(m.formulas, activation=(lambda m: lambda z: F.dropout(torch.relu(z), p, m.training))(m))
        return model

adapter = RT(name="redteam:reset_on_load_torchnn")
