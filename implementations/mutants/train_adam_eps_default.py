"""The trainer's Adam uses epsilon = 1e-8 (torch.optim.Adam's default) instead of 1e-9; the betas are right.

Violates §5.3: "We used the Adam optimizer with beta1 = 0.9, beta2 = 0.98 and epsilon = 10^-9"; the
lesson's ``torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)``. Epsilon bounds
the step of a parameter whose gradients are tiny: ten times larger, those steps shrink. The rates, the
loss and the forward pass are right; only the updates differ.
"""

from __future__ import annotations

from conformance.implementations.reference.adapter import ReferenceAdapter


class DefaultEpsilon(ReferenceAdapter):
    """The reference, built with a recipe whose Adam epsilon is torch's default."""

    def build_model(self, config: dict, seed: int):
        recipe = {**config["recipe"], "adam_eps": 1e-8}  # the bug: epsilon 1e-8
        return super().build_model({**config, "recipe": recipe}, seed)


adapter = DefaultEpsilon(name="mutant:train_adam_eps_default")
