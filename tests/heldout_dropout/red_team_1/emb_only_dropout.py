"""Misplacement: dropout on the token embeddings alone (RNN-LM style embedding dropout), PE added after."""
import types
from conformance.implementations.reference.adapter import ReferenceAdapter

def embed(self, ids, table):
    d = self.config.d_model
    pe = self.formulas.positional_encoding(ids.shape[1], d).to(table)
    return self.dropout(table[ids]) * self.formulas.embed_scale(d) + pe

class P(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        model.module.embed = types.MethodType(embed, model.module)
        return model

adapter = P(name="redteam:emb_only_dropout")
