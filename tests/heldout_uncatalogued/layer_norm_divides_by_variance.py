"""§3.1 LayerNorm that divides the centred input by the variance plus eps, (x - mu) / (sigma^2 + eps), where the
paper (Ba et al.) divides by the standard deviation sqrt(sigma^2 + eps): the square root is missing (variance used
for standard deviation). torch code on tensors."""

import torch

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="torch")

    def layer_norm(self, x, gamma, beta, eps):
        t = torch.from_numpy(x)
        centred = t - t.mean(dim=-1, keepdim=True)
        var = centred.pow(2).mean(dim=-1, keepdim=True)
        return (torch.from_numpy(gamma) * centred / (var + eps) + torch.from_numpy(beta)).numpy()  # the bug: no sqrt


adapter = Adapter()
