"""The LayerNorm epsilon a model computes with, measured, not read off a declaration (§3.1, the lesson's 10⁻⁵).

An epsilon fixed in the code (10⁻⁶ in TensorFlow ports, 10⁻¹² in BERT's) changes only rows of tiny variance, so no
check on random weights sees it. Here every encoder layer is made to feed its first LayerNorm the same row of a
chosen tiny variance v, whatever reached it: a one-token source attends only to itself, so with W_V = I and
W_O = -I the self-attention returns minus its input, the residual sum is b_O alone (a row of variance v), and the
FFN is silenced (W2 = 0, b2 = 0). The memory is then LayerNorm2(LayerNorm1(b_O)), the first with gamma sqrt(v) so
that the second normalises a row of tiny variance too: it depends on the epsilon and on nothing of the embedding
(its scale, the positional encoding, learned positions). The candidate's memory is compared with the paper's
formulas at each usual epsilon, at two variances (10⁻⁶ and 10⁻⁹, where 10⁻⁵ and the tiny ones are told apart).
Needs post-norm layers (§3.1) and the attention's output bias; otherwise nothing is measured.
"""

from __future__ import annotations

import numpy as np

from conformance.config import ModelConfig, toy_config

# The epsilons real code uses: the lesson's and PyTorch's, TensorFlow/Keras and Flax's, BERT's, and others seen.
USUAL = (1e-5, 1e-6, 1e-12, 1e-8, 1e-9, 1e-7, 1e-10, 1e-3, 1e-4, 0.0)
VARIANCES = (1e-6, 1e-9)
CLOSE = 0.02  # relative L2 distance under which the memory is that epsilon's (float32 cancellation at 10^-9)


def probe(config: ModelConfig, variance: float, rng: np.random.Generator) -> dict:
    """Weights under which every encoder layer's first LayerNorm normalises b_O, a row of ``variance``."""
    from conformance.weights import model_shapes, random_weights

    weights = random_weights(model_shapes(config), rng)
    d = config.d_model
    row = rng.normal(size=d)
    row = (row - row.mean()) / row.std() * np.sqrt(variance) + 0.1  # a mean the LayerNorm removes
    for layer in range(config.N):
        at = f"encoder.{layer}"
        weights[f"{at}.self_attn.W_V"] = np.eye(d, dtype=np.float32)
        weights[f"{at}.self_attn.b_V"] = np.zeros(d, np.float32)
        weights[f"{at}.self_attn.W_O"] = -np.eye(d, dtype=np.float32)
        weights[f"{at}.self_attn.b_O"] = row.astype(np.float32)
        weights[f"{at}.ffn.W2"] = np.zeros_like(weights[f"{at}.ffn.W2"])
        weights[f"{at}.ffn.b2"] = np.zeros_like(weights[f"{at}.ffn.b2"])
        # gamma1 = sqrt(v): the second LayerNorm gets a row of variance about v too (with gamma 1 it would undo the
        # first's scale, which is where the epsilon shows)
        weights[f"{at}.norm1.gamma"] = np.full(d, np.sqrt(variance), np.float32)
        weights[f"{at}.norm2.gamma"] = np.ones(d, np.float32)
        for norm in ("norm1", "norm2"):
            weights[f"{at}.{norm}.beta"] = np.zeros(d, np.float32)
    return weights


def measured(candidate, seed: int = 0) -> tuple[float, ...] | None:
    """The usual epsilons the candidate's memory agrees with at every probed variance (the paper's first when it
    is among them); None when it agrees with none (not post-norm, or something else differs) or cannot be asked."""
    from conformance.problems.oracle import OracleModel

    config = candidate.fit(toy_config(N=1))
    if candidate.conventions.dtype in ("float16", "bfloat16"):
        return None  # a variance of 10^-9 is below what half precision holds: nothing to tell apart
    if not config.attention_bias or not all(candidate.provides(part) for part in
                                            ("build_model", "model.load_weights", "model.encode")):
        return None
    rng = np.random.default_rng(seed)
    src = np.array([[3]], dtype=np.int64)  # one token (a letter): it attends to itself alone
    agreeing = set(USUAL)
    model = candidate.build_model(config, seed=seed)
    for variance in VARIANCES:
        weights = probe(config, variance, rng)
        model.load_weights(weights)
        mine = np.asarray(model.encode(src), np.float64)
        for eps in tuple(agreeing):
            theirs = OracleModel(config.replace(eps=eps), weights).encode(src)
            if np.linalg.norm(mine - theirs) > CLOSE * np.linalg.norm(theirs):
                agreeing.discard(eps)
    return tuple(eps for eps in USUAL if eps in agreeing) or None
