"""Label smoothing as torch.nn.KLDivLoss(reduction="sum") over the non-padding tokens: a KL divergence, summed."""

import torch
import torch.nn.functional as F

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="torch")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        logits, targets = torch.from_numpy(logits), torch.from_numpy(targets)
        V = logits.shape[-1]
        q = torch.full_like(logits, epsilon / V)
        q[torch.arange(len(targets)), targets] += 1 - epsilon
        real = targets != pad_id
        return float(F.kl_div(logits[real].log_softmax(-1), q[real], reduction="sum"))


adapter = Adapter()
