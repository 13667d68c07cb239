"""The reference whose model gives its attention weights under names of its own (the adapter's hooks sat on the wrong
modules): a per-check error that names what is missing and the likely cause, never an internal error."""

from conformance.implementations.reference.adapter import ReferenceAdapter


class OwnNames(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        given = model.attention_weights
        model.attention_weights = lambda src, tgt_in: {f"layers.{k}": v for k, v in given(src, tgt_in).items()}
        return model


adapter = OwnNames(name="attention-weights-unnamed")
