"""Dropout exactly where §5.4 says; train_step reports the training-mode loss of the batch recomputed AFTER the
update (as some loops log it). Whether that is protocol-conformant is argued in the report."""
import torch
from conformance.adapters.torch import PaperRecipe
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference import training

class AfterTrainer(training.Trainer):
    def train_step(self, src, tgt_in, tgt_out):
        out = super().train_step(src, tgt_in, tgt_out)
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.random.default_generator.manual_seed(self.dropout_seed())
            out["loss"] = float(self.loss(src, tgt_in, tgt_out).item())
        return out

class A(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        model._make_trainer = lambda m: AfterTrainer(m, seed=seed)
        return model

adapter = A(name="redteam:loss_after_update")
