"""The smoothed loss computed in the half dtype: log-softmax and the weighted sum rounded to float16 or bfloat16.

Breaks §5.4 (the lesson's loss, whose floor is 0.537 to three decimals) in half precision: log-probabilities near -20
are held to 1/64 in float16 and 1/8 in bfloat16, which moves the loss by far more than float32 would. Every library
upcasts the logits to float32 for the loss. In float32 and float64 runs it is the reference's loss.
"""

import torch

from conformance.implementations.mutants._build import low, with_formulas


def smoothed_loss(logits, targets, epsilon, pad_id):
    log_p = torch.log_softmax(low(logits), dim=-1)  # the bug: no upcast to float32
    q = torch.full_like(log_p, epsilon / logits.shape[-1])
    q.scatter_add_(-1, targets.unsqueeze(-1), torch.full_like(log_p[:, :1], 1.0 - epsilon))
    per_token = -(q * log_p).sum(-1)
    return per_token[targets != pad_id].mean()


adapter = with_formulas("half_loss_in_dtype", smoothed_loss=smoothed_loss)
