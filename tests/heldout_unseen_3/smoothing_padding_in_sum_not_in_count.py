"""§5.4 label-smoothed loss whose padding mask reaches the count but not the sum: the per-token cross-entropy
against q = (1 - eps) one_hot + eps / V is summed over all N targets, padding ones included, and the total is
divided by the number of non-padding targets, where the paper's loss (PyTorch's ignore_index) is the mean over the
non-padding targets only, the padding targets contributing nothing to the sum either. Without padding targets it is
right; with them the loss is too large by the padding targets' cross-entropy over the real count.

Style: NumPy with a hand-written log-sum-exp and explicit loops over the rows, float64; label_smoothed_loss only.
"""

import numpy as np

from conformance import Conventions


class LoopLoss:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        N, V = logits.shape
        total, count = 0.0, 0
        for row, target in zip(logits, targets):
            top = row.max()
            log_p = row - (top + np.log(np.exp(row - top).sum()))
            q = np.full(V, epsilon / V)
            q[int(target)] += 1.0 - epsilon
            total += float(-(q * log_p).sum())
            if target != pad_id:
                count += 1
        return total / count if count else float("nan")


adapter = LoopLoss()
