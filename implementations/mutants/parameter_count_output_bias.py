"""The output projection gets a bias of its own: V extra parameters.

Violates §3.4 as the lesson counts it: the pre-softmax projection is the transposed embedding, with
no new weights ("a linear layer multiplies by the transposed embedding table, with no new weights").
The base model would count 63,119,496 instead of 63,082,496. The bias has no canonical name: as the
protocol asks, ``load_weights`` leaves it at 0 (so the logits are the paper's) and
``unmapped_parameters`` lists it; only the counts show it.
"""

import numpy as np
import torch
from torch import nn

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel
from conformance.implementations.reference.model import REFERENCE, Transformer, load_canonical


class OutputBiasTransformer(Transformer):
    def __init__(self, config, formulas=REFERENCE, seed=0):
        super().__init__(config, formulas, seed)
        self.output_bias = nn.Parameter(torch.zeros(config.tgt_vocab))

    def decode(self, tgt_in, memory, src):
        return super().decode(tgt_in, memory, src) + self.output_bias


class OutputBiasModel(ReferenceModel):
    def __init__(self, config, seed, formulas=REFERENCE, dtype=torch.float32):
        super().__init__(config, seed, formulas, dtype)
        self.module = OutputBiasTransformer(config, formulas, seed=seed).to(dtype)

    def load_weights(self, weights):
        load_canonical(self.module, {**weights, "output_bias": np.zeros(self.config.tgt_vocab)})  # identity: 0

    def dump_weights(self):
        return {name: value for name, value in super().dump_weights().items() if name != "output_bias"}

    def unmapped_parameters(self):
        return {"output_bias": self.config.tgt_vocab}


class OutputBiasAdapter(ModelSwap):
    model_class = OutputBiasModel

    def parameter_count(self, config: dict) -> int:
        return super().parameter_count(config) + config["tgt_vocab"]


adapter = OutputBiasAdapter(name="mutant:parameter_count_output_bias")
