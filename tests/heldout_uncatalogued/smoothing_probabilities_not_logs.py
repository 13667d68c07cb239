"""§5.4 label-smoothed loss that weighs the softmax probabilities instead of their logarithms:
-sum_k q_k * p_k where the paper's cross-entropy is -sum_k q_k * log p_k (softmax used where log_softmax belongs).
torch.nn.functional."""

import torch
import torch.nn.functional as F

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="torch")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        z, t = torch.from_numpy(logits), torch.from_numpy(targets)
        V = z.shape[-1]
        q = torch.full_like(z, epsilon / V).scatter_add_(1, t[:, None], torch.full((len(t), 1), 1 - epsilon,
                                                                                       dtype=z.dtype))
        per_token = -(q * F.softmax(z, dim=-1)).sum(-1)  # the bug: softmax, not log_softmax
        real = t != pad_id
        return float(per_token[real].mean())


adapter = Adapter()
