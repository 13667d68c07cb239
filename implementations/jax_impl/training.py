"""The paper's training recipe in optax (Vaswani et al. 2017, §5.3 and §5.4).

Adam with the recipe's beta1, beta2 and epsilon (0.9, 0.98, 1e-9), its rate given by ``paper_schedule``; the
label-smoothed cross-entropy over the real (non-padding) targets; dropout on, its keys drawn from the model's
``nnx.Rngs`` (seeded from ``build_model``'s seed). One update is one ``nnx.jit``-compiled function.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from conformance.config import ModelConfig
from conformance.implementations.jax_impl.model import Transformer


# §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), steps counted from 1.
def paper_schedule(d_model: int, warmup: int) -> optax.Schedule:
    """The rate of an update as a function of optax's count of the updates before it (0 for the first)."""
    scale, ramp = d_model**-0.5, warmup**-1.5

    def schedule(count):
        step = jnp.asarray(count, dtype=jnp.float32) + 1.0  # optax counts from 0, the paper from 1
        return scale * jnp.minimum(jax.lax.rsqrt(step), step * ramp)

    return schedule


# §5.4: cross-entropy against q(k) = (1 - eps)[k = target] + eps / V, averaged over the real targets.
def smoothed_loss(logits: jax.Array, targets: jax.Array, epsilon: float, pad_id: int) -> jax.Array:
    """logits (N, V), targets (N,) -> the mean over the targets that are not padding (NaN if none is)."""
    labels = optax.smooth_labels(jax.nn.one_hot(targets, logits.shape[-1]), epsilon)  # (N, V)
    per_token = optax.softmax_cross_entropy(logits, labels)  # (N,)
    real = targets != pad_id
    return jnp.where(real, per_token, 0.0).sum() / real.sum()


def adam(config: ModelConfig) -> optax.GradientTransformation:
    recipe = config.recipe
    b1, b2 = recipe.adam_betas
    return optax.adam(paper_schedule(config.d_model, recipe.warmup), b1=b1, b2=b2, eps=recipe.adam_eps)


@nnx.jit
def update(model: Transformer, optimizer: nnx.Optimizer, src, tgt_in, tgt_out) -> jax.Array:
    """One Adam step on one batch, the model in training mode; returns the batch's loss before the step."""
    cfg = model.config

    def loss_of(model: Transformer) -> jax.Array:
        logits = model(src, tgt_in)  # (B, T, V)
        return smoothed_loss(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),
                             cfg.recipe.label_smoothing, cfg.pad_id)

    loss, grads = nnx.value_and_grad(loss_of)(model)
    optimizer.update(model, grads)
    return loss


class Trainer:
    """The optimiser of one model; ``step`` is one update of the recipe."""

    def __init__(self, model: Transformer):
        self.model, config = model, model.config
        self.schedule = paper_schedule(config.d_model, config.recipe.warmup)
        self.optimizer = nnx.Optimizer(model, adam(config), wrt=nnx.Param)

    def step(self, src, tgt_in, tgt_out) -> dict:
        """One update; the loss of this batch before it, and the rate it used."""
        lr = self.schedule(self.optimizer.step[...])  # the count optax's schedule reads for this update
        self.model.train()
        try:
            loss = update(self.model, self.optimizer, src, tgt_in, tgt_out)
        finally:
            self.model.eval()
        return {"loss": float(loss), "lr": float(lr)}
