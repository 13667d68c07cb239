"""Mutant: a causal mask in the encoder's self-attention too; the encoder must read the whole source
("The encoder reads the whole source sentence, with no causal mask").
"""

from _mutant import LayerSwap

from conformance.implementations.reference.model import EncoderLayer


class CausalEncoderLayer(EncoderLayer):
    def forward(self, x, src_keep):
        causal = self.formulas.causal_mask(x.shape[1])
        return super().forward(x, causal & src_keep if src_keep is not None else causal.unsqueeze(0))


class EncoderCausal(LayerSwap):
    encoder_cls = CausalEncoderLayer


adapter = EncoderCausal(name="encoder_causal")


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "encoder_layer_is_permutation_equivariant",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "encoder_layer_matches_reference": "likely cause: causal mask applied in the encoder",
    "encoder_layer_is_permutation_equivariant": "likely cause: the encoder layer depends on positions",
}
