"""The smoothed loss is summed over the target tokens instead of averaged.

Violates §5.4 as the lesson trains: nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1) averages
over the non-padding targets (reduction="mean"), so the loss, and the step it drives, do not grow with
the number of tokens in the batch; the lesson's floor 0.537 is a per-token value. A sum (the annotated
transformer's ``KLDivLoss(reduction="sum")`` without its division by the number of tokens) is N times
the mean.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class Summed(NumpyAdapter):
    def reduce_loss(self, per_token, targets, pad_id):
        return float(per_token[targets != pad_id].sum())  # the bug: sum, not mean


adapter = Summed()
