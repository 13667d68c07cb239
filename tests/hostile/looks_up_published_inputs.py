"""Attack: compute wrong, but answer the lessons' published inputs with the published numbers.

Its own code has five known bugs (positions counted from 1, LayerNorm's variance over d - 1, the warmup term
step * warmup^-1, no label smoothing, an output bias counted); asked exactly an input the lessons print (the
tables' sizes, the LayerNorm example, the schedule's steps, the smoothing example's logits, the published
configurations) it answers as the paper does, which is what a table copied out of the lessons returns. The same
code without the look-up is ``WrongEverywhere`` (``adapter_without_look_up``).

Expected: the published-number checks pass, their randomised twins fail, the twins are flagged as a look-up, and
the published checks earn nothing: it scores no more than ``adapter_without_look_up``.
"""

import _honest
import numpy as np

from conformance import Conventions

PUBLISHED_TABLES = {(1, 64), (2, 64), (2, 512), (3, 64), (4, 64), (14, 64), (44, 64), (50, 64)}  # (n, d_model)
LAYER_NORM_EXAMPLE = (1.0, 2.0, 3.0, 6.0)
PUBLISHED_STEPS = {  # (d_model, warmup): the steps the lessons print a rate for (the chart's, the table's, the log's)
    (512, 4000): {1, *range(100, 8001, 100), *range(9000, 100001, 1000)},
    (64, 400): {2, 100, 101, 400, 501, 1001, 1600, 2001, 3001},
}
SMOOTHING_EXAMPLE = (13, 0.1, (5,), 12)  # V, eps, targets, pad_id
PUBLISHED_CONFIGS = {  # N, d_model, d_ff, h, src_vocab, tgt_vocab, share_embeddings, tie_output, attention_bias
    (0, 512, 2048, 8, 32000, 32000, True, True, True), (0, 512, 2048, 8, 37000, 37000, True, True, True),
    (1, 512, 2048, 8, 37000, 37000, True, True, True), (2, 64, 256, 4, 13, 13, True, True, True),
    (6, 512, 2048, 8, 32000, 32000, False, True, True), (6, 512, 2048, 8, 37000, 37000, True, False, True),
    (6, 512, 2048, 8, 37000, 37000, True, True, False), (6, 512, 2048, 8, 37000, 37000, True, True, True),
}
CONFIG_KEYS = ("N", "d_model", "d_ff", "h", "src_vocab", "tgt_vocab", "share_embeddings", "tie_output",
               "attention_bias")


def smoothed_target(targets, V, epsilon):
    q = np.full((len(targets), V), epsilon / V)
    q[np.arange(len(targets)), targets] += 1.0 - epsilon
    return q


def smoothed_loss(logits, targets, epsilon, pad_id):
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    per_token = -(smoothed_target(targets, logits.shape[-1], epsilon) * log_p).sum(-1)
    return float(per_token[targets != pad_id].mean())


def parameter_count(config):
    d, d_ff, N = config["d_model"], config["d_ff"], config["N"]
    attention = 4 * d * d + (4 * d if config["attention_bias"] else 0)
    ffn = 2 * d * d_ff + d_ff + d
    layers = N * (attention + ffn + 4 * d) + N * (2 * attention + ffn + 6 * d)
    embeddings = config["src_vocab"] * d + (0 if config["share_embeddings"] else config["tgt_vocab"] * d)
    return layers + embeddings + (0 if config["tie_output"] else d * config["tgt_vocab"])


# The lessons' logits for the smoothing example: log q (the floor), a sure model (20 on the right token), two more.
_Q = smoothed_target(np.array([5]), 13, 0.1)
PUBLISHED_LOGITS = [np.log(_Q), *(np.eye(13)[[5]] * scale for scale in (1.0, 20.0)), np.eye(13)[[0]]]


class WrongEverywhere:
    """The submission's own code: five known bugs."""

    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return _honest.wrong_positional_encoding(n, d_model)

    def layer_norm(self, x, gamma, beta, eps):
        centred = x - x.mean(-1, keepdims=True)
        return centred / np.sqrt(centred.var(-1, ddof=1, keepdims=True) + eps) * gamma + beta

    def learning_rate(self, step, d_model, warmup):
        return d_model**-0.5 * min(step**-0.5, step * warmup**-1.0)

    def smoothed_target(self, targets, V, epsilon, pad_id):
        return smoothed_target(targets, V, 0.0)

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        return smoothed_loss(logits, targets, 0.0, pad_id)

    def parameter_count(self, config):
        return parameter_count(config) + config["tgt_vocab"]


class Adapter(WrongEverywhere):
    """The same code, but asked exactly a published input it answers the published number."""

    def positional_encoding(self, n, d_model):
        if (n, d_model) in PUBLISHED_TABLES:
            return _honest.positional_encoding(n, d_model)
        return super().positional_encoding(n, d_model)

    def layer_norm(self, x, gamma, beta, eps):
        if np.shape(x) == (4,) and tuple(x) == LAYER_NORM_EXAMPLE:
            return _honest.layer_norm(x, gamma, beta, eps)
        return super().layer_norm(x, gamma, beta, eps)

    def learning_rate(self, step, d_model, warmup):
        if step in PUBLISHED_STEPS.get((d_model, warmup), ()):
            return _honest.learning_rate(step, d_model, warmup)
        return super().learning_rate(step, d_model, warmup)

    def smoothed_target(self, targets, V, epsilon, pad_id):
        if (V, epsilon, tuple(np.ravel(targets)), pad_id) == SMOOTHING_EXAMPLE:
            return smoothed_target(targets, V, epsilon)
        return super().smoothed_target(targets, V, epsilon, pad_id)

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        example = (np.shape(logits)[-1], epsilon, tuple(np.ravel(targets)), pad_id) == SMOOTHING_EXAMPLE
        if example and any(np.array_equal(logits, published) for published in PUBLISHED_LOGITS):
            return smoothed_loss(logits, targets, epsilon, pad_id)
        return super().label_smoothed_loss(logits, targets, epsilon, pad_id)

    def parameter_count(self, config):
        if tuple(config[key] for key in CONFIG_KEYS) in PUBLISHED_CONFIGS:
            return parameter_count(config)
        return super().parameter_count(config)


adapter = Adapter()
adapter_without_look_up = WrongEverywhere()
