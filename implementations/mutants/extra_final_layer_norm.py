"""An extra LayerNorm after the encoder stack and after the decoder stack (gamma 1, beta 0).

Violates §3.1: in the post-norm model "the output of each sub-layer is LayerNorm(x + Sublayer(x))", so
each stack already ends in a LayerNorm and has no final one; ``torch.nn.Transformer`` adds one by
default (``encoder.norm``, ``decoder.norm``), the lesson's "Common mistake". Its gamma and beta are not
canonical weights: left at 1 and 0 they change almost nothing after a last norm whose own gamma and beta
are 1 and 0, so the bug hides on fresh weights. The checks load gamma and beta far from 1 and 0 into the
last layer, and then the renormalisation shows.
"""

import torch

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel
from conformance.implementations.reference.model import Transformer

# What the diagnosis says where it sees this bug's signature, the model's output normalised once more after what
# should be the last step (conformance/diagnosis/structure.py, ``normalised_once_more``): on the structural
# probe, after the candidate's own layers chained ("{last}": the last layer; "{verdict}": found, or suspected
# behind divergent layers), and with every sublayer switched off (after the last layer, or after the embedding
# of pre-norm layers).
SIGNATURES = {
    "probe": ("an extra LayerNorm after the stack (torch.nn.Transformer's default encoder.norm / decoder.norm; the"
              " post-norm paper has none: set them to None)"),
    "after_layers": ("after {last}: an extra LayerNorm (gamma 1, beta 0) {verdict}: the model's output is its own"
                     " layers', normalised once more (a final norm like torch.nn's encoder.norm / decoder.norm or"
                     " OpenNMT-py's; the post-norm paper has none)"),
    "sublayers_off": ("the output is the paper's, normalised once more: an extra LayerNorm after the last layer"
                      " (torch.nn.Transformer's default encoder.norm / decoder.norm) suspected"),
    "sublayers_off_pre_norm": ("the output is the normalised embedding: pre-norm with a final LayerNorm after the"
                               " stack suspected"),
}


class FinalNormTransformer(Transformer):
    def final_norm(self, x):
        d = x.shape[-1]
        return self.formulas.layer_norm(x, torch.ones(d, dtype=x.dtype), torch.zeros(d, dtype=x.dtype),
                                        self.config.eps)

    def encode(self, src):
        return self.final_norm(super().encode(src))

    def decode(self, tgt_in, memory, src):
        f, pad = self.formulas, self.config.pad_id
        tgt_keep, src_keep = f.padding_mask(tgt_in, pad), f.padding_mask(src, pad)
        y = self.embed(tgt_in, self.tgt_embedding)
        for layer in self.decoder:
            y = layer(y, memory, tgt_keep, src_keep)
        return self.project_output(self.final_norm(y))  # the bug: a norm before the output projection


class FinalNormModel(ReferenceModel):
    def __init__(self, config, seed, formulas):
        super().__init__(config, seed, formulas)
        self.module = FinalNormTransformer(config, formulas, seed=seed)


class ExtraFinalLayerNorm(ModelSwap):
    model_class = FinalNormModel


adapter = ExtraFinalLayerNorm(name="mutant:extra_final_layer_norm")
