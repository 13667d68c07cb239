"""§3.1 feed-forward sublayer that normalises first and then adds the residual from the normalised input:
z = LayerNorm(x), output = z + FFN(z), with no LayerNorm after the sum, where the paper's sublayer is
LayerNorm(x + FFN(x)): the FFN reads x itself, the residual adds x, and the norm comes last. (Not pre-norm either:
pre-norm would add x, not LayerNorm(x), back.) The FFN and the LayerNorm formula are right.

Style: torch functional code (F.layer_norm, F.linear with the canonical matrices transposed, F.relu), float64;
ffn_sublayer only (the code's FFN module holds its residual and norm).
"""

import torch
import torch.nn.functional as F

from conformance import Conventions


class FunctionalBlock:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch")

    @torch.no_grad()
    def ffn_sublayer(self, x, weights, eps):
        w = {name: torch.from_numpy(a) for name, a in weights.items()}
        x = torch.from_numpy(x)
        x = F.layer_norm(x, x.shape[-1:], w["norm.gamma"], w["norm.beta"], float(eps))
        hidden = F.relu(F.linear(x, w["W1"].T, w["b1"]))
        return (x + F.linear(hidden, w["W2"].T, w["b2"])).numpy()


adapter = FunctionalBlock()
