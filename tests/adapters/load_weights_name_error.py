"""The reference whose load_weights raises a name-map error (a KeyError for a name it cannot place): the adapter's own
error, which no check may read as a verdict about the paper."""

from conformance.implementations.reference.adapter import ReferenceAdapter


class MisnamedModel:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def load_weights(self, weights):
        raise KeyError("encoder.layers.0.self_attn.in_proj_weight: no canonical name maps here")


class LoadWeightsNameError(ReferenceAdapter):
    def build_model(self, config, seed):
        return MisnamedModel(super().build_model(config, seed))


adapter = LoadWeightsNameError()
