"""Misplacement (sanity): dropout only in the decoder stack (encoder sublayers and source embedding undropped)."""
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter

class D(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        t = model.module
        for layer in t.encoder: layer.dropout = nn.Identity()
        drop = t.dropout
        orig = t.encode
        def encode(src):
            t.dropout = nn.Identity()
            try: return orig(src)
            finally: t.dropout = drop
        t.encode = encode
        return model
adapter = D(name="redteam:decoder_only_dropout")
