"""§5.4 label-smoothed loss that averages -q_k log p_k over the vocabulary instead of summing it: the per-token
cross-entropy divided by V (mean where sum belongs; the mean over the non-padding tokens afterwards is right).
NumPy with a log-sum-exp."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        m = logits.max(-1, keepdims=True)
        logp = logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
        V = logits.shape[-1]
        q = np.full(logits.shape, epsilon / V)
        q[np.arange(len(targets)), targets] += 1.0 - epsilon
        per_token = (-q * logp).mean(-1)  # the bug: mean over the vocabulary, not sum
        return float(per_token[targets != pad_id].mean())


adapter = Adapter()
