"""Misplacement (minor): the sublayer's output bias (b_O, b2) is added after the dropout:
LN(x + Dropout(h W) + b) instead of LN(x + Dropout(h W + b))."""
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import FeedForward

class B(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        t = model.module
        for layer in list(t.encoder) + list(t.decoder):
            drop = layer.dropout
            layer.dropout = nn.Identity()
            layer.add_module("inner_dropout", drop)
            for name in ("self_attn", "cross_attn", "ffn"):
                m = getattr(layer, name, None)
                if m is None: continue
                bias = m.b2 if isinstance(m, FeedForward) else m.b_O
                orig = m.forward
                if bias is None:
                    m.forward = lambda *a, _f=orig, _d=drop, **k: _d(_f(*a, **k))
                else:
                    m.forward = lambda *a, _f=orig, _d=drop, _b=bias, **k: _d(_f(*a, **k) - _b) + _b
        return model
adapter = B(name="redteam:bias_after_dropout")
