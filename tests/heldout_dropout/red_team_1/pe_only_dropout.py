"""Misplacement: dropout on the positional encodings alone, x = sqrt(d) E[tok] + Dropout(PE), not on their sum."""
import types
from conformance.implementations.reference.adapter import ReferenceAdapter

def embed(self, ids, table):
    d = self.config.d_model
    pe = self.formulas.positional_encoding(ids.shape[1], d).to(table)
    return table[ids] * self.formulas.embed_scale(d) + self.dropout(pe)

class P(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        model.module.embed = types.MethodType(embed, model.module)
        return model

adapter = P(name="redteam:pe_only_dropout")
