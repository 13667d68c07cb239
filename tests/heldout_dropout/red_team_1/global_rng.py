"""FAITHFUL: the reference model trained by a plain loop whose nn.Dropout draws from torch's global generator
(the most common way to write it: no per-step seeding)."""
import torch
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.adapters.torch import lrate

class PlainTrainer:
    provenance = None
    def __init__(self, module):
        cfg = module.config; r = cfg.recipe
        self.module, self.cfg = module, cfg
        self.opt = torch.optim.Adam(module.parameters(), lr=1.0, betas=tuple(r.adam_betas), eps=r.adam_eps)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: lrate(s + 1, cfg.d_model, r.warmup))
        self.crit = nn.CrossEntropyLoss(ignore_index=cfg.pad_id, label_smoothing=r.label_smoothing)
    def train_step(self, src, tgt_in, tgt_out):
        self.module.train()
        lr = self.opt.param_groups[0]["lr"]
        logits = self.module(src, tgt_in)
        loss = self.crit(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        self.opt.zero_grad(); loss.backward(); self.opt.step(); self.sched.step()
        return {"loss": float(loss.item()), "lr": float(lr)}

class G(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        model._make_trainer = PlainTrainer
        return model
adapter = G(name="redteam:global_rng")
