"""MISPLACEMENT: no dropout on the output of each stack's FIRST self-attention (layer 1); everything else as the paper."""
from torch import nn
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference import model as M

def enc_forward(self, x, src_keep):
    x = self.norm1(x + self.self_attn(x, x, x, src_keep))          # no dropout here (the bug)
    return self.formulas.sublayer(x, self.ffn, self.norm2, self.dropout)

def dec_forward(self, y, memory, tgt_keep, src_keep):
    f = self.formulas; T = y.shape[1]
    keep = f.causal_mask(T).to(y.device)
    keep = keep & tgt_keep if tgt_keep is not None else keep.unsqueeze(0)
    y = self.norm1(y + self.self_attn(y, y, y, keep))              # no dropout here (the bug)
    y = f.sublayer(y, lambda y: self.cross_attn(y, memory, memory, src_keep), self.norm2, self.dropout)
    return f.sublayer(y, self.ffn, self.norm3, self.dropout)

class A(ReferenceAdapter):
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        import types
        model.module.encoder[0].forward = types.MethodType(enc_forward, model.module.encoder[0])
        model.module.decoder[0].forward = types.MethodType(dec_forward, model.module.decoder[0])
        return model

adapter = A(name="redteam2:first_selfattn_no_dropout")
