"""Crash probe: train_step reports NaN (every step), dropout misplaced like torch.nn (should not PASS check 2)."""
from reset_on_load_torchnn import RT
from conformance.implementations.reference.adapter import ReferenceAdapter

class N(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        orig = model.train_step
        def ts(*a):
            out = orig(*a); out["loss"] = float("nan"); return out
        model.train_step = ts
        return model
adapter = N(name="redteam:nan_loss")
