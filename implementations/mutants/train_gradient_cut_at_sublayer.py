"""The sublayers carry no gradient: LayerNorm(x + Dropout(Sublayer(x)).detach()).

Violates §3.1 and §5: the output of each sub-layer is LayerNorm(x + Sublayer(x)), and training fits
every parameter of the sublayers (attention and feed-forward). Detaching the sublayer's output (a
stop-gradient, or an output computed under ``torch.no_grad()``) gives exactly the same forward pass,
so every forward check passes, but only the embeddings and the LayerNorms ever learn.
"""

from __future__ import annotations

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def sublayer_detached(x, fn, norm, dropout):
    return norm(x + dropout(fn(x)).detach())  # the bug: no gradient into fn's parameters


adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, sublayer=sublayer_detached),
                           name="mutant:train_gradient_cut_at_sublayer")
