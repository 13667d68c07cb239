"""The paper's training recipe for the reference model (Vaswani et al. 2017, §5.3 and §5.4).

As in the lesson's ``train_reversal.py`` (Step 6 and the toy run): Adam with beta1 = 0.9, beta2 = 0.98,
eps = 1e-9 and a base rate of 1.0, which ``LambdaLR`` multiplies by lrate(step) with steps counted from 1;
dropout in training mode; the label-smoothed cross-entropy that ignores padding targets.
"""

from __future__ import annotations

import torch
from torch import Tensor

from conformance.implementations.reference.model import Transformer


class Trainer:
    """One optimiser and schedule for one model; ``train_step`` is one update of the recipe.

    ``seed`` makes the dropout masks reproducible: update n draws them from ``seed`` and n, without
    touching the global random state.
    """

    def __init__(self, model: Transformer, seed: int = 0):
        self.model, self.seed, self.steps_done = model, seed, 0
        cfg, recipe = model.config, model.config.recipe
        self.optimizer = torch.optim.Adam(
            model.parameters(), lr=1.0, betas=tuple(recipe.adam_betas), eps=recipe.adam_eps
        )
        rate = model.formulas.learning_rate
        # LambdaLR counts from 0; the paper's step counts from 1.
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: rate(s + 1, cfg.d_model, recipe.warmup)
        )

    def loss(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        """The smoothed loss of one batch: logits (B, T, V) flattened to (B*T, V) against tgt_out (B*T,)."""
        cfg = self.model.config
        logits = self.model(src, tgt_in)
        return self.model.formulas.smoothed_loss(
            logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), cfg.recipe.label_smoothing, cfg.pad_id
        )

    def train_step(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> dict:
        """One update. Returns the batch's loss before the update and the rate this update used."""
        self.model.train()
        lr = self.optimizer.param_groups[0]["lr"]  # read before sched.step(), which moves to the next rate
        with torch.random.fork_rng(devices=[]):
            # dropout masks of this update; the CPU generator alone, which is what fork_rng restores: torch.manual_seed
            # would also queue a lazy CUDA seeding with its stack trace at every update (2 ms each)
            torch.random.default_generator.manual_seed(self.seed * 1_000_003 + self.steps_done)
            loss = self.loss(src, tgt_in, tgt_out)
            self.optimizer.zero_grad()
            loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        self.steps_done += 1
        return {"loss": float(loss.item()), "lr": float(lr)}
