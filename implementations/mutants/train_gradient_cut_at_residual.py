"""The residual connections carry no gradient: LayerNorm(x.detach() + Dropout(Sublayer(x))).

Violates §3.1 and §5: the residual connection x + Sublayer(x) is part of the network that is trained;
the gradient of the loss flows back through both terms. Detaching x (a "stop-gradient" left in from
an experiment) gives exactly the same forward pass, so every forward check passes, but each layer's
input now receives its gradient only through its sublayer: the updates differ from the first step,
and the model does not learn to reverse. Trained (seed 0), it reaches 64% exact match at best (step
500), then degrades; the learned-behaviour checks are blocked. Only training can show it.
"""

from __future__ import annotations

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def residual_detached_sublayer(x, fn, norm, dropout):
    return norm(x.detach() + dropout(fn(x)))


adapter = ReferenceAdapter(
    formulas=dataclasses.replace(REFERENCE, sublayer=residual_detached_sublayer),
    name="mutant:train_gradient_cut_at_residual",
)
