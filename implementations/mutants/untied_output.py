"""Output layer with a matrix of its own (left at its initial values) instead of E^T.

Violates §3.4: "we share the same weight matrix between the two embedding layers and the pre-softmax
linear transformation". load_weights fills everything else; the logits ignore E.
"""

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel
from conformance.implementations.reference.model import load_canonical


class UntiedModel(ReferenceModel):
    def __init__(self, config, seed, formulas):
        super().__init__(config.replace(tie_output=False), seed, formulas)
        self.config = config

    def load_weights(self, weights):
        load_canonical(self.module, {**weights, "W_out": self.module.W_out.detach()})

    def dump_weights(self):
        return {name: value for name, value in super().dump_weights().items() if name != "W_out"}


class Untied(ModelSwap):
    model_class = UntiedModel


adapter = Untied(name="mutant:untied_output")
