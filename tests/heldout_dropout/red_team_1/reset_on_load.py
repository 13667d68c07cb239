"""FAITHFUL (dropout exactly where §5.4 says). load_weights starts a new training run: a fresh optimiser whose
step counter is 0 (as a Flax TrainState.create(params=...) does), and each update's dropout masks are drawn from
(seed, step) (jax.random.fold_in(key, state.step) style). Every real run draws a new mask at every update."""
from conformance.implementations.reference.adapter import ReferenceAdapter, ReferenceModel

class FreshStartModel(ReferenceModel):
    def load_weights(self, weights):
        super().load_weights(weights)
        self._trainer = None  # new optimiser, Adam moments 0, step 0: loading weights starts a run

class R(ReferenceAdapter):
    model_class = FreshStartModel
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        model.__class__ = FreshStartModel
        return model

adapter = R(name="redteam:reset_on_load")
