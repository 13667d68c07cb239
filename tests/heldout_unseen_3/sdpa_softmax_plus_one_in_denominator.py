"""§3.2.1 attention whose softmax has 1 added to its denominator (the "softmax_1" / "quiet attention" variant,
an implicit extra key with logit 0): weights = exp(s_j) / (1 + sum_k exp(s_k)), s = Q K^T / sqrt(d_k), where the
paper's softmax is exp(s_j) / sum_k exp(s_k), each query's weights summing to 1. Here every row sums to less than 1
(sum / (1 + sum)), most so when the scores are small. The scaling, the mask (hidden keys contribute nothing) and
the product with V are right.

Style: torch.nn.functional code with a hand-written stable softmax (logsumexp), blocked masks (True = hidden),
float32; scaled_dot_product_attention only.
"""

import math

import torch

from conformance import Conventions


def _softmax_one(scores):
    """exp(s) / (1 + sum exp(s)), computed stably with an extra zero logit."""
    zero = torch.zeros_like(scores[..., :1])
    lse = torch.logsumexp(torch.cat([scores, zero], dim=-1), dim=-1, keepdim=True)
    return torch.exp(scores - lse)


class QuietAttention:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="torch")

    def scaled_dot_product_attention(self, q, k, v, mask):
        q, k, v = (torch.from_numpy(a) for a in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(torch.from_numpy(mask), float("-inf"))
        w = _softmax_one(scores)
        return (w @ v).numpy(), w.numpy()


adapter = QuietAttention()
