"""The trainer uses torch.optim.Adam's defaults, beta2 = 0.999 and epsilon = 1e-8, not the recipe's.

Violates §5.3: "We used the Adam optimizer with beta1 = 0.9, beta2 = 0.98 and epsilon = 10^-9." The
lesson's Step 6: "beta2 = 0.98 instead of 0.999 gives it a shorter memory". A trainer written as
``torch.optim.Adam(params, lr=1.0)`` gets this. The rates, the loss and the forward pass are right;
only the updates differ, by a few percent from the second step on.
"""

from __future__ import annotations

from conformance.implementations.reference.adapter import ReferenceAdapter


class DefaultAdam(ReferenceAdapter):
    """The reference, built with a recipe whose Adam settings are torch's defaults."""

    def build_model(self, config: dict, seed: int):
        recipe = {**config["recipe"], "adam_betas": (0.9, 0.999), "adam_eps": 1e-8}
        return super().build_model({**config, "recipe": recipe}, seed)


adapter = DefaultAdam(name="mutant:train_adam_default_betas")
