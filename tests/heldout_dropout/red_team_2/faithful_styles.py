"""FAITHFUL: dropout exactly where §5.4 puts it, written the way a lot of real code writes the rest:
PE in float32 via exp/log (Annotated-Transformer style), embedding scale torch.sqrt(torch.tensor(d)) as a float32
tensor, LayerNorm by hand in float64 with eps 1e-6 (declared), dropout as a torch.bernoulli mask, no attention biases,
separate source/target tables and an untied output (declared)."""
import dataclasses, math, torch
from torch import nn
from conformance.adapter import Conventions
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE

def pe_exp_log(n, d):
    pe = torch.zeros(n, d)
    position = torch.arange(0, n).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d, 2).float() * -(math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe

def ln64(x, gamma, beta, eps):
    x64 = x.double()
    mu = x64.mean(-1, keepdim=True)
    var = x64.var(-1, keepdim=True, unbiased=False)
    return (gamma.double() * (x64 - mu) / torch.sqrt(var + eps) + beta.double()).to(x.dtype)

class BernoulliDropout(nn.Module):
    def __init__(self, p): super().__init__(); self.p = p
    def forward(self, x):
        if not self.training or self.p == 0: return x
        mask = torch.bernoulli(torch.full_like(x, 1 - self.p))
        return x * mask / (1 - self.p)

F = dataclasses.replace(REFERENCE, positional_encoding=pe_exp_log, layer_norm=ln64,
                        embed_scale=lambda d: torch.sqrt(torch.tensor(float(d))))

class S(ReferenceAdapter):
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                              supports={"attention_bias": (False,), "eps": (1e-6,), "share_embeddings": (False,),
                                        "tie_output": (False,)})
    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        for name, m in list(model.module.named_modules()):
            for child, sub in list(m.named_children()):
                if isinstance(sub, nn.Dropout):
                    setattr(m, child, BernoulliDropout(sub.p))
        return model

adapter = S(formulas=F, name="redteam2:faithful_styles")
