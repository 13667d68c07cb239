"""No dropout on the sums of embeddings and positions: the first layer reads sqrt(d_model) E[token] + PE(pos) whole.

Violates §5.4: "we apply dropout to the sums of the embeddings and the positional encodings in both the encoder and
decoder stacks"; the lesson's recipe: "Dropout 0.1 on every sublayer's output and on the embeddings plus positions".
Code that keeps one ``nn.Dropout`` per sublayer and none after the positional encoding trains with less noise than the
paper's. Evaluation never shows it (dropout is off there): only a training-mode computation does.
"""

from torch import nn

from conformance.implementations.reference.adapter import ReferenceAdapter


class WithoutEmbeddingDropout(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        model.module.dropout = nn.Identity()  # the bug: the embedding sums go to the first layers undropped
        return model


adapter = WithoutEmbeddingDropout(name="mutant:dropout_missing_on_embeddings")
