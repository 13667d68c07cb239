"""LayerNorm divides the variance by d - 1 (torch.var's default) instead of d.

Violates §3.1 / the lesson's Step 3: "σ² their variance (divided by d, not by d − 1)". On the
lesson's example x = (1, 2, 3, 6) it gives (-0.926, -0.463, 0, 1.389) instead of
(-1.069, -0.535, 0, 1.604).
"""

import dataclasses

import torch

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def unbiased_layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "layer_norm_matches_formula",
    "layer_norm_matches_published_example",
    "layer_norm_normalises_each_row_over_its_own_features",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "published_layer_norm_example",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, layer_norm=unbiased_layer_norm),
                           name="mutant:layer_norm_unbiased_variance")
