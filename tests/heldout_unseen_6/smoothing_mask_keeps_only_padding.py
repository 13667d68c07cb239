"""§5.4 label-smoothed loss whose padding mask has the wrong polarity: ``mask = targets == pad_id`` where
``targets != pad_id`` was meant, so the loss is the mean over the *padding* targets of the smoothed cross-entropy
(their rows scored against the padding token), and 0 when no target is padding (the count is clamped to 1), where the
paper's (the lesson's) loss is the mean over the non-padding targets. The smoothed target q = (1 - eps) one_hot +
eps / V, the log-softmax and the per-row cross-entropy are right.

Style: torch in float32 (``F.log_softmax``, ``F.one_hot``), a mask multiplied into the per-row losses;
label_smoothed_loss only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


class MaskedSmoothing:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        logits = torch.as_tensor(np.asarray(logits, dtype=np.float32))
        targets = torch.as_tensor(np.asarray(targets, dtype=np.int64))
        V = logits.shape[-1]
        q = (1.0 - epsilon) * F.one_hot(targets, V).float() + epsilon / V
        per_row = -(q * F.log_softmax(logits, dim=-1)).sum(dim=-1)
        mask = (targets == pad_id).float()
        return float((per_row * mask).sum() / mask.sum().clamp(min=1.0))


adapter = MaskedSmoothing()
