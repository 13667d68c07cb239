"""§3.2.1 scaled dot-product attention with an element-wise sigmoid in place of the softmax: the weights are
sigmoid(Q K^T / sqrt(d_k)) (0 on hidden keys), each between 0 and 1 but not normalised over the keys, where the
paper's weights are softmax(Q K^T / sqrt(d_k)), each query's row summing to 1. The scaling, the mask and the
product with V are right.

Style: a torch class with one method per step (scores, mask, normalise, mix), blocked masks (True = hidden), float32;
scaled_dot_product_attention only.
"""

import math

import torch

from conformance import Conventions


class StepwiseAttention:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="torch")

    def scores(self, q, k):
        return torch.bmm(q, k.transpose(1, 2)) / math.sqrt(k.shape[-1])

    def hide(self, s, blocked):
        return s if blocked is None else s.masked_fill(blocked, float("-inf"))

    def normalise(self, s):
        return torch.sigmoid(s)

    def mix(self, w, v):
        return torch.bmm(w, v)

    def scaled_dot_product_attention(self, q, k, v, mask):
        q, k, v = map(torch.from_numpy, (q, k, v))
        blocked = None if mask is None else torch.from_numpy(mask)
        w = self.normalise(self.hide(self.scores(q, k), blocked))
        return self.mix(w, v).numpy(), w.numpy()


adapter = StepwiseAttention()
