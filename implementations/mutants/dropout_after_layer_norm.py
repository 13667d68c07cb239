"""Dropout after the LayerNorm instead of before the residual sum: Dropout(LayerNorm(x + Sublayer(x))).

Violates §5.4: "We apply dropout to the output of each sub-layer, before it is added to the sub-layer input and
normalized", the lesson's output = LayerNorm(x + Dropout(Sublayer(x))). Dropped after the norm, the residual stream
itself loses numbers at every layer, the embeddings' included. Evaluation never shows it: only a training-mode
computation does.
"""

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("dropout_after_layer_norm",
                        sublayer=lambda x, fn, norm, dropout: dropout(norm(x + fn(x))))  # the bug: after the norm
