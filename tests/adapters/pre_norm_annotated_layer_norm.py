"""Pre-norm layers behind the annotated transformer's LayerNorm: two deviations at once, as that lesson's code has.

The annotated transformer (harvardnlp) writes its sublayer connection pre-norm, x + Sublayer(LayerNorm(x)), and its
own ``LayerNorm``: ``a_2 * (x - mean) / (std + eps) + b_2`` with ``x.std(-1)``, the unbiased standard deviation,
and eps added to the std, not inside the square root. §3.1 asks for LayerNorm(x + Sublayer(x)) and
gamma * (x - mu) / sqrt(sigma^2 + eps) + beta (variance divided by d). The reference's torch model with those two
formulas swapped: every part is the model's own.
"""

import dataclasses

from torch import Tensor

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def annotated_layer_norm(x: Tensor, a_2: Tensor, b_2: Tensor, eps: float) -> Tensor:
    """The annotated transformer's ``LayerNorm.forward``."""
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True)  # unbiased: divided by d - 1
    return a_2 * (x - mean) / (std + eps) + b_2


def pre_norm_sublayer(x, fn, norm, dropout):
    """The annotated transformer's ``SublayerConnection.forward``: x + dropout(sublayer(norm(x)))."""
    return x + dropout(fn(norm(x)))


adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, sublayer=pre_norm_sublayer,
                                                        layer_norm=annotated_layer_norm),
                           name="pre-norm, annotated-transformer LayerNorm")
