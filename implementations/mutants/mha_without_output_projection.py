"""Multi-head attention without the output projection: Concat(head_1, ..., head_h) (+ b_O), no W_O.

Violates §3.2.2: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, "W^O in R^(h d_v x d_model)";
the heads are concatenated and then projected once more.
"""

import numpy as np
import torch

from conformance.implementations.reference.adapter import ReferenceAdapter, _keep, _with_weights
from conformance.implementations.reference.model import MultiHeadAttention


class MultiHeadWithoutW_O(MultiHeadAttention):
    def forward(self, query, key, value, keep_mask=None):
        f = self.formulas
        Q, K, V = (f.split_heads(self._project(x, W, b), self.h)
                   for x, W, b in ((query, self.W_Q, self.b_Q), (key, self.W_K, self.b_K), (value, self.W_V, self.b_V)))
        heads, weights = f.attention(Q, K, V, None if keep_mask is None else keep_mask.unsqueeze(1))
        self.last_weights = weights.detach()
        concat = f.merge_heads(heads)  # (B, Lq, d_model)
        return concat if self.b_O is None else concat + self.b_O  # the bug: no @ W_O


def without_W_O(module):
    """Every MultiHeadAttention inside ``module`` (or ``module`` itself) loses its W_O; parameters stay."""
    for m in module.modules():
        if type(m) is MultiHeadAttention:
            m.__class__ = MultiHeadWithoutW_O
    return module


class NoOutputProjection(ReferenceAdapter):
    def _layer(self, cls, weights, h, eps):
        return without_W_O(super()._layer(cls, weights, h, eps))

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, mask):
        d_model, f = np.shape(weights["W_Q"])[0], self._floats
        mha = without_W_O(MultiHeadAttention(d_model, int(h), "b_Q" in weights, self.formulas))
        out = _with_weights(mha, weights, self.torch_dtype)(f(query), f(key), f(value), _keep(mask))
        return self._numpy(out), self._numpy(mha.last_weights)

    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        without_W_O(model.module)
        return model


adapter = NoOutputProjection(name="mutant:mha_without_output_projection")
