"""Adapters of the reference model written on ``conformance.adapters``, as real code's adapters are, to show what
the report credits to the implementation and what to the suite's helpers (tests/test_provenance.py).

* ``bare``: the model only, no greedy decoding and no training step of its own, none asked of the suite:
  those checks are not implemented.
* ``supplied``: the same, with the suite's greedy loop and training recipe asked for in one line, and torch's
  LayerNorm as its ``layer_norm`` part: the checks that judge only these are *supplied*, not passed.
* ``own``: the same model with its own greedy loop (the reference's): credited.
* ``loss_summed`` / ``loss_summed_converted`` / ``loss_kl_converted`` / ``rate_lambda_lr_converted``: a loss summed
  over tokens, as it is and converted with ``mean_from_sum``; a KL loss converted with ``cross_entropy_from_kl``; a
  LambdaLR factor read with ``rate_from_lambda_lr`` (LambdaLR's counting, which the lesson writes: no deviation).
"""

import numpy as np

from conformance import Conventions
from conformance.adapters import cross_entropy_from_kl, mean_from_sum, rate_from_lambda_lr
from conformance.adapters.torch import TorchAdapter, torch_layer_norm
from conformance.implementations.reference.adapter import ATTENTION, NAMES
from conformance.implementations.reference.model import REFERENCE, Transformer
from conformance.paper.formulas import lrate

CONVENTIONS = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")
MODEL = {"forward": lambda m, src, tgt_in: m(src, tgt_in), "attention": ATTENTION}


def reference_module(config):
    return Transformer(config, REFERENCE, seed=0)


bare = TorchAdapter(reference_module, names=NAMES, conventions=CONVENTIONS, model=MODEL, name="bare")
supplied = TorchAdapter(reference_module, names=NAMES, conventions=CONVENTIONS, model=MODEL, name="supplied",
                        supplied=("greedy_decode", "train_step"), layer_norm=torch_layer_norm)
own = TorchAdapter(reference_module, names=NAMES, conventions=CONVENTIONS, name="own",
                   model={**MODEL, "greedy_decode": lambda m, src, max_len: m.formulas.greedy_decode(m, src, max_len)})


def _per_token(logits, targets, epsilon, pad_id):
    """The smoothed cross-entropy of each non-padding target, in float64."""
    logits = np.asarray(logits, dtype=np.float64)
    logp = logits - logits.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    vocab = logits.shape[-1]
    q = np.full(logits.shape, epsilon / vocab)
    q[np.arange(len(targets)), targets] += 1.0 - epsilon
    keep = targets != pad_id
    return -(q * logp).sum(-1)[keep], q[keep], logp[keep]


class _Loss:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")


class LossSummed(_Loss):
    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        return float(_per_token(logits, targets, epsilon, pad_id)[0].sum())


class LossSummedConverted(_Loss):
    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        return mean_from_sum(_per_token(logits, targets, epsilon, pad_id)[0].sum(), targets, pad_id)


class LossKLConverted(_Loss):
    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        _, q, logp = _per_token(logits, targets, epsilon, pad_id)
        if not len(q):
            raise ValueError("every target is padding")
        terms = np.where(q > 0, q * (np.log(np.where(q > 0, q, 1.0)) - logp), 0.0)  # 0 log 0 = 0
        kl = float(terms.sum(-1).mean())
        return cross_entropy_from_kl(kl, np.shape(logits)[-1], epsilon)


class RateLambdaLRConverted(_Loss):
    def learning_rate(self, step, d_model, warmup):
        return rate_from_lambda_lr(lambda s: lrate(s + 1, d_model, warmup), step)


loss_summed, loss_summed_converted = LossSummed(), LossSummedConverted()
loss_kl_converted, rate_lambda_lr_converted = LossKLConverted(), RateLambdaLRConverted()
