"""Scaled dot-product attention without the 1/sqrt(d_k) factor: softmax(Q K^T) V.

Violates §3.2.1: "We suspect that for large values of d_k, the dot products grow large in magnitude,
pushing the softmax function into regions where it has extremely small gradients. To counteract
this effect, we scale the dot products by 1/sqrt(d_k)."
"""

import dataclasses

import torch

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def unscaled_attention(q, k, v, keep_mask):
    scores = q @ k.transpose(-2, -1)
    if keep_mask is not None:
        has_key = keep_mask.any(-1, keepdim=True)
        scores = scores.masked_fill(~keep_mask, float("-inf")).masked_fill(~has_key, 0.0)
        weights = torch.where(has_key, torch.softmax(scores, dim=-1), 0.0)
    else:
        weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


CAUGHT_BY = {"attention_matches_formula", "fully_masked_row_gives_zero_weights_and_output"}
adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, attention=unscaled_attention),
                           name="mutant:attention_no_scaling")
