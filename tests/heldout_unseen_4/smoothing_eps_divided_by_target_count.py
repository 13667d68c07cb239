"""§5.4 label smoothing whose uniform share divides epsilon by the number of target positions instead of the
vocabulary size: ``eps / log_p.shape[0]`` (N, the rows) where ``eps / log_p.shape[1]`` (V, the columns) was meant,
so the smoothed target is q = (1 - eps) one_hot + eps / N on every token (it sums to 1 - eps + V eps / N), where the
paper's (PyTorch's) smoothing spreads eps over the V tokens: q = (1 - eps) one_hot + eps / V. Right only when
N = V. The log-softmax over the vocabulary and the mean over the non-padding targets are right.

Style: NumPy with a hand-written log-sum-exp and boolean indexing for the padding, float64; label_smoothed_loss
only.
"""

import numpy as np

from conformance import Conventions


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


class SmoothedNLL:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        log_p = _log_softmax(np.asarray(logits, dtype=np.float64))
        targets = np.asarray(targets, dtype=np.int64)
        q = np.full_like(log_p, epsilon / log_p.shape[0])
        q[np.arange(len(targets)), targets] += 1.0 - epsilon
        per_token = -(q * log_p).sum(-1)
        return float(per_token[targets != pad_id].mean())


adapter = SmoothedNLL()
