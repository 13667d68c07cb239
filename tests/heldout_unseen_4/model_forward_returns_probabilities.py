"""§3.4 model whose output layer applies the softmax: ``forward`` and ``decode`` return softmax(y E^T) (the
next-token probabilities, each position's row summing to 1 over the vocabulary) where the protocol and the paper's
"learned linear transformation" return the pre-softmax logits y E^T (the softmax belongs to the loss, §3.4: "the
usual learned linear transformation and softmax function to convert the decoder output to predicted next-token
probabilities"). Not log-probabilities: plain probabilities in [0, 1]. The argmax of each row is unchanged, so
greedy decoding is right; the embeddings, the encoder, the decoder and the tied projection are right.

Style: the float64 torch dict-of-tensors model of ``_parts.py`` with ``logits`` overridden; model only.
"""

import torch

from _parts import DictTransformer, model_adapter


class ProbabilityHead(DictTransformer):
    def logits(self, y):
        return torch.softmax(super().logits(y), dim=-1)


adapter = model_adapter(ProbabilityHead)
