"""MISPLACEMENT: dropout INSIDE every sublayer, on whole token vectors: nn.Dropout1d on the (B, L, features) tensor
(Dropout1d reads (N, C, L): each position is a 'channel', so whole positions are dropped) applied to the heads'
concatenation before W_O, and to the FFN's hidden layer before W2; plus the paper's dropout where §5.4 puts it."""
import torch
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import MultiHeadAttention, FeedForward

def mha_forward(self, query, key, value, keep_mask=None):
    f = self.formulas
    Q = f.split_heads(self._project(query, self.W_Q, self.b_Q), self.h)
    K = f.split_heads(self._project(key, self.W_K, self.b_K), self.h)
    V = f.split_heads(self._project(value, self.W_V, self.b_V), self.h)
    mask = None if keep_mask is None else keep_mask.unsqueeze(1)
    heads, weights = f.attention(Q, K, V, mask)
    self.last_weights = weights.detach()
    return self._project(self.drop_tokens(f.merge_heads(heads)), self.W_O, self.b_O)   # the bug

def ffn_forward(self, x):
    hidden = self.formulas.activation(x @ self.W1 + self.b1)
    return self.drop_tokens(hidden) @ self.W2 + self.b2                                  # the bug

class T(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        import types
        for m in model.module.modules():
            if isinstance(m, MultiHeadAttention):
                m.drop_tokens = nn.Dropout1d(model.config.dropout); m.forward = types.MethodType(mha_forward, m)
            elif isinstance(m, FeedForward):
                m.drop_tokens = nn.Dropout1d(model.config.dropout); m.forward = types.MethodType(ffn_forward, m)
        return model
adapter = T(name="redteam2:token_dropout_inside")
