"""The trainer's loss has no label smoothing: plain cross-entropy, although the recipe says eps = 0.1.

Violates §5.4: "During training, we employed label smoothing of value eps_ls = 0.1"; the lesson's
``nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)``. Without it the reported loss falls
towards 0 instead of the floor 0.537, and the toy's top probabilities reach 0.99 instead of staying near
0.92. The adapter's ``label_smoothed_loss`` part, which gets eps as an argument, is right; only
training shows it.
"""

from __future__ import annotations

from conformance.implementations.reference.adapter import ReferenceAdapter


class WithoutSmoothing(ReferenceAdapter):
    """The reference, whose trainer reads a recipe with label smoothing 0."""

    def build_model(self, config: dict, seed: int):
        recipe = {**config["recipe"], "label_smoothing": 0.0}  # the bug: eps dropped from the loss
        return super().build_model({**config, "recipe": recipe}, seed)


adapter = WithoutSmoothing(name="mutant:train_no_label_smoothing")
