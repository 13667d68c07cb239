"""§5.4 label smoothing with the two masses swapped: the true token gets epsilon (plus its share) and the
remaining 1 - epsilon is spread evenly over the vocabulary, i.e. q = epsilon * onehot + (1 - epsilon) / V, where
the paper has q = (1 - epsilon) * onehot + epsilon / V. Pure-Python loops."""

import math

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        total, n = 0.0, 0
        for row, target in zip(logits.tolist(), targets.tolist(), strict=True):
            if target == pad_id:
                continue
            top = max(row)
            log_z = top + math.log(sum(math.exp(v - top) for v in row))
            V = len(row)
            for k, v in enumerate(row):
                weight = (1.0 - epsilon) / V + (epsilon if k == target else 0.0)  # the bug: masses swapped
                total -= weight * (v - log_z)
            n += 1
        return total / n


adapter = Adapter()
