"""The trainer's schedule uses the paper's warmup of 4,000 steps whatever the configuration says.

Violates §5.3 as the lesson applies it: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)
with the run's own warmup_steps: "The only change is the warmup: 400 steps instead of 4,000, because
the run has 3,000 steps instead of 100,000." A trainer with ``warmup=4000`` written in (a default
argument, ``lrate(step, d_model=512, warmup=4000)``) warms the toy up ten times too slowly: its peak
would come after the run ends. The adapter's ``learning_rate`` part, which gets the warmup as an
argument, is right; only training shows it.
"""

from __future__ import annotations

from conformance.implementations.reference.adapter import ReferenceAdapter


class Warmup4000(ReferenceAdapter):
    """The reference, whose trainer reads a recipe with warmup 4,000."""

    def build_model(self, config: dict, seed: int):
        recipe = {**config["recipe"], "warmup": 4000}  # the bug: the paper's warmup, not the config's
        return super().build_model({**config, "recipe": recipe}, seed)


adapter = Warmup4000(name="mutant:train_warmup_fixed_at_4000")
