"""§5.4 label smoothing whose uniform share is not divided by the vocabulary size: the target is
q = (1 - eps) one_hot + eps on every token (q sums to 1 + (V - 1) eps), where the paper's
smoothed target (PyTorch's label_smoothing) spreads eps over the V tokens: q = (1 - eps) one_hot + eps / V.
The log-softmax and the mean over the non-padding targets are right.

Style: torch functional code (F.log_softmax, F.one_hot, a masked mean), float32; label_smoothed_loss only.
"""

import torch
import torch.nn.functional as F

from conformance import Conventions


class TorchSmoothing:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        z, t = torch.from_numpy(logits), torch.from_numpy(targets).long()
        V = z.shape[-1]
        q = (1.0 - epsilon) * F.one_hot(t, V).to(z.dtype) + epsilon
        per_token = -(q * F.log_softmax(z, dim=-1)).sum(-1)
        keep = t != pad_id
        return float(per_token[keep].sum() / keep.sum())


adapter = TorchSmoothing()
