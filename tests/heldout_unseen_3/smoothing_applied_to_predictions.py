"""§5.4 label smoothing applied to the model's predicted distribution instead of the target: the loss is the
plain cross-entropy against the one-hot target of a smoothed prediction, -log((1 - eps) p_y + eps / V) with
p = softmax(logits), averaged over the non-padding targets, where the paper (PyTorch's label_smoothing) smooths the
target: -sum_k q_k log p_k with q = (1 - eps) one_hot(y) + eps / V. The log-softmax normaliser, the eps / V share,
the padding mask and the mean are right; with eps = 0 the two agree.

Style: torch.nn.functional (``softmax``, ``gather``), float32; label_smoothed_loss only.
"""

import torch
import torch.nn.functional as F

from conformance import Conventions


class SmoothedPrediction:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        z, y = torch.from_numpy(logits), torch.from_numpy(targets).long()
        V = z.shape[-1]
        p = (1.0 - epsilon) * F.softmax(z, dim=-1) + epsilon / V
        nll = -torch.log(p.gather(1, y[:, None]).squeeze(1))
        real = y != pad_id
        return float(nll[real].mean())


adapter = SmoothedPrediction()
