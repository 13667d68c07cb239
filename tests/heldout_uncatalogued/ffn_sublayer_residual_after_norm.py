"""§3.1 residual around the FFN sublayer added after the normalisation: LayerNorm(FFN(x)) + x, where the paper's
post-norm sublayer is LayerNorm(x + FFN(x)) (the residual moved outside the norm; not pre-norm either, which is
x + FFN(LayerNorm(x))). The adapter provides only the coarse ffn_sublayer, in torch.nn.functional."""

import torch
import torch.nn.functional as F

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="torch")

    def ffn_sublayer(self, x, weights, eps):
        W = {n: torch.from_numpy(a) for n, a in weights.items()}
        t = torch.from_numpy(x)
        inner = F.linear(F.relu(F.linear(t, W["W1"].T, W["b1"])), W["W2"].T, W["b2"])
        normed = F.layer_norm(inner, (t.shape[-1],), W["norm.gamma"], W["norm.beta"], eps)
        return (normed + t).numpy()  # the bug: LayerNorm(FFN(x)) + x instead of LayerNorm(x + FFN(x))


adapter = Adapter()
