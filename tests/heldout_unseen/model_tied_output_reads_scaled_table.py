"""§3.4 tied output projection that reads the *scaled* embedding table: the model keeps sqrt(d_model) * E as its
embedding weight (scaled once, at load time, so that the lookup needs no multiply) and ties the pre-softmax
projection to that same tensor, so the logits are y (sqrt(d_model) E)^T = sqrt(d_model) * y E^T, where the paper
shares E itself between the embedding layers and the pre-softmax linear transformation (logits y E^T; only the
embedding layers multiply by sqrt(d_model)). The embeddings entering the stacks are right.

Style: the torch.nn.Module model of ``_parts.py`` with its table scaled in place at load time; model only
(build_model).
"""

import math

import numpy as np
import torch

from _parts import CONVENTIONS, Model, Transformer, sinusoid_table


class Net(Transformer):
    def embed(self, ids, side):
        # the table already holds sqrt(d_model) * E (see ScaledTableModel.load_weights)
        return self.table(side)[ids] + sinusoid_table(ids.shape[1], self.c["d_model"])


class ScaledTableModel(Model):
    net_class = Net

    def load_weights(self, weights):
        super().load_weights(weights)
        with torch.no_grad():
            for name, p in self.net.named_parameters():
                if name in ("E", "E_src", "E_tgt"):
                    p.mul_(math.sqrt(self.net.c["d_model"]))  # the bug: the tied output reads this table too

    def dump_weights(self):
        out = super().dump_weights()
        for name in ("E", "E_src", "E_tgt"):
            if name in out:
                out[name] = (out[name] / np.float32(math.sqrt(self.net.c["d_model"]))).astype(np.float32)
        return out


class ModelOnly:
    conventions = CONVENTIONS
    model_class = ScaledTableModel

    def build_model(self, config, seed):
        return ScaledTableModel(config, seed)


adapter = ModelOnly()
