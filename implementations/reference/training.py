"""The paper's training recipe for the reference model (Vaswani et al. 2017, §5.3 and §5.4).

The recipe is the suite's one: ``conformance.adapters.torch.PaperRecipe`` (as in the lesson's ``train_reversal.py``,
Step 6 and the toy run: Adam with beta1 = 0.9, beta2 = 0.98, eps = 1e-9 and a base rate of 1.0, which ``LambdaLR``
multiplies by lrate(step) with steps counted from 1; dropout in training mode; the label-smoothed cross-entropy that
ignores padding targets). The reference trains it with its own formulas, ``model.formulas.learning_rate`` and
``model.formulas.smoothed_loss``, so a mutant that swaps one of them trains with the swapped one.
"""

from __future__ import annotations

from conformance.adapters.torch import PaperRecipe
from conformance.implementations.reference.model import Transformer


def _call(model: Transformer, src, tgt_in):
    return model(src, tgt_in)


class Trainer(PaperRecipe):
    """One optimiser and schedule for one model; ``train_step`` is one update of the recipe.

    ``seed`` makes the dropout masks reproducible: update n draws them from ``seed`` and n, without
    touching the global random state. The reference's training step is its own code, not code the suite
    supplies to it, so it carries no provenance record (``conformance.provenance``).
    """

    def __init__(self, model: Transformer, seed: int = 0):
        cfg, formulas = model.config, model.formulas
        epsilon, pad_id = cfg.recipe.label_smoothing, cfg.pad_id

        def smoothed_loss(logits, targets):
            return formulas.smoothed_loss(logits, targets, epsilon, pad_id)

        super().__init__(model, cfg, forward=_call, seed=seed, loss=smoothed_loss, rate=formulas.learning_rate)
        self.model = model
        self.provenance = None

    def dropout_seed(self) -> int:
        """The seed of update n's dropout masks: the golden toy checkpoint was trained with these masks."""
        return self.seed * 1_000_003 + self.steps_done
