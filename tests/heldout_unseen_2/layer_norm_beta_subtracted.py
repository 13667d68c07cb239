"""§3.1 LayerNorm whose shift has the wrong sign: the output is gamma * (x - mu) / sqrt(sigma^2 + eps) - beta,
where the paper's layer normalisation (Ba et al., 2016) adds the learned bias: gamma * x_hat + beta. The mean,
the biased variance, eps inside the square root and the gain are right; only beta enters with a minus sign
(right only when beta = 0, its initial value).

Style: a small class hierarchy on torch tensors (a ``Standardiser`` base that computes x_hat, an ``AffineNorm``
subclass that applies the gain and the shift), float64; layer_norm only.
"""

import torch

from conformance import Conventions


class Standardiser:
    def __init__(self, eps):
        self.eps = eps

    def standardise(self, x):
        mu = x.mean(dim=-1, keepdim=True)
        var = (x - mu).pow(2).mean(dim=-1, keepdim=True)
        return (x - mu) * torch.rsqrt(var + self.eps)


class AffineNorm(Standardiser):
    def __init__(self, gamma, beta, eps):
        super().__init__(eps)
        self.gamma, self.beta = gamma, beta

    def __call__(self, x):
        return self.gamma * self.standardise(x) - self.beta


class HierarchyAdapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch")

    def layer_norm(self, x, gamma, beta, eps):
        t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
        return AffineNorm(t(gamma), t(beta), float(eps))(t(x)).numpy()


adapter = HierarchyAdapter()
