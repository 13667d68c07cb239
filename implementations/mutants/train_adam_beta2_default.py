"""The trainer's Adam uses beta2 = 0.999 (torch.optim.Adam's default) instead of 0.98; epsilon is right.

Violates §5.3: "We used the Adam optimizer with beta1 = 0.9, beta2 = 0.98 and epsilon = 10^-9." The
lesson's Step 6: "beta2 = 0.98 instead of 0.999 gives it a shorter memory". A trainer written as
``torch.optim.Adam(params, lr=1.0, eps=1e-9)`` gets this. The rates, the loss and the forward pass are
right; only the updates differ, from the second step on.
"""

from __future__ import annotations

from conformance.implementations.reference.adapter import ReferenceAdapter


class DefaultBeta2(ReferenceAdapter):
    """The reference, built with a recipe whose Adam beta2 is torch's default."""

    def build_model(self, config: dict, seed: int):
        recipe = {**config["recipe"], "adam_betas": (0.9, 0.999)}  # the bug: beta2 0.999
        return super().build_model({**config, "recipe": recipe}, seed)


adapter = DefaultBeta2(name="mutant:train_adam_beta2_default")
