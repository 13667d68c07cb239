"""§5.4 label smoothing whose confidence lands in every row at every target column of the batch: the smoothed
target is built with ``q[:, targets] += 1 - eps`` (a NumPy fancy index on the columns only) where
``q[np.arange(N), targets] += 1 - eps`` (one entry per row) was meant, so each row's q has 1 - eps added at the
column of *every* distinct target of the batch (its own and the other rows', padding's included), and sums to
1 + (u - 1)(1 - eps) with u distinct targets, where the paper's (PyTorch's) q = (1 - eps) one_hot(y) + eps / V puts
1 - eps on the row's own target only. Right when the batch has one distinct target. The uniform share eps / V, the
log-softmax over the vocabulary and the mean over the non-padding targets are right.

Style: NumPy in float64, a hand-written log-softmax, boolean indexing for the padding; label_smoothed_loss only.
"""

import numpy as np

from conformance import Conventions


def log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


class SmoothedCrossEntropy:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        log_p = log_softmax(np.asarray(logits, dtype=np.float64))
        targets = np.asarray(targets, dtype=np.int64)
        V = log_p.shape[-1]
        q = np.full(log_p.shape, epsilon / V)
        q[:, targets] += 1.0 - epsilon
        per_token = -(q * log_p).sum(axis=-1)
        return float(per_token[targets != pad_id].mean())


adapter = SmoothedCrossEntropy()
