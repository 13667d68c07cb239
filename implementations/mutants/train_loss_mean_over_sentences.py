"""The training loss is a mean over sentences of each sentence's mean over its tokens, not a mean over all tokens.

Violates §5.4 as the lesson applies it: ``nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)``, one mean
over every real target token of the batch. Averaging per sentence first (a per-sequence loss, as some seq2seq
code reports) weighs a short sentence's tokens more than a long one's: the reported loss and the gradient
differ whenever the batch's sentences differ in length. The adapter's ``label_smoothed_loss`` part (flat
targets) stays right; only the loss the trainer minimises and reports is per sentence.
"""

from __future__ import annotations

import torch
from torch import Tensor

from conformance.implementations.reference.adapter import ReferenceAdapter, ReferenceModel
from conformance.implementations.reference.training import Trainer


class SentenceMeanTrainer(Trainer):
    def loss(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        cfg = self.model.config
        epsilon, V = cfg.recipe.label_smoothing, cfg.tgt_vocab
        log_p = torch.log_softmax(self.model(src, tgt_in), dim=-1)  # (B, T, V)
        q = torch.full_like(log_p, epsilon / V)
        q.scatter_add_(-1, tgt_out.unsqueeze(-1), torch.full_like(log_p[..., :1], 1.0 - epsilon))
        real = (tgt_out != cfg.pad_id).to(log_p.dtype)  # (B, T)
        per_token = -(q * log_p).sum(-1) * real
        return (per_token.sum(1) / real.sum(1).clamp(min=1)).mean()  # the bug: each sentence's mean, then the mean


class SentenceMeanModel(ReferenceModel):
    def __init__(self, config, seed, formulas, dtype):
        super().__init__(config, seed, formulas, dtype)
        self._make_trainer = lambda module: SentenceMeanTrainer(module, seed=seed)


class SentenceMeanLoss(ReferenceAdapter):
    model_class = SentenceMeanModel

    def build_model(self, config: dict, seed: int) -> SentenceMeanModel:
        model = super().build_model(config, seed)
        return SentenceMeanModel(model.config, int(seed), self.formulas, self.torch_dtype)


adapter = SentenceMeanLoss(name="mutant:train_loss_mean_over_sentences")
