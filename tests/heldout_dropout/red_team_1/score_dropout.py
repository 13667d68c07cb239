"""Misplacement: dropout on the attention scores before the softmax (and DropKey-style), nowhere on V/weights."""
import dataclasses, math, torch
from torch.nn import functional as F
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import MultiHeadAttention

def dropping_scores(module, p):
    def attend(q, k, v, keep):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if module.training:  # DropKey (Li et al. 2023): drop keys by a large negative score
            scores = scores - 1e12 * torch.bernoulli(torch.full_like(scores, p))
        if keep is not None:
            scores = scores.masked_fill(~keep, float("-inf"))
        w = torch.softmax(scores, -1)
        return w @ v, w
    return attend

class S(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for m in model.module.modules():
            if isinstance(m, MultiHeadAttention):
                m.formulas = dataclasses.replace(m.formulas, attention=dropping_scores(m, model.config.dropout))
        return model

adapter = S(name="redteam:score_dropout")
