"""The schedule counts steps from 0: it returns lrate(step + 1) for step.

Violates §5.3 as the lesson applies it: LambdaLR counts from 0, so the lesson's lambda is
lrate(s + 1); adding one more shifts every rate by a step. Only the first steps differ much, which is
why the published tables catch it at step 1 (1.747e-07 vs 3.494e-07) while most random steps do not.
"""

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE, noam_learning_rate


def lrate_next_step(step, d_model, warmup):
    return noam_learning_rate(step + 1, d_model, warmup)


CAUGHT_BY = {
    "lrate_matches_formula_for_any_step",
    "lrate_matches_published_paper_table",
    "lrate_matches_published_toy_values",
    "lrate_matches_the_toy_training_log",
    "lrate_rises_linearly_then_decays_from_the_peak_at_warmup",
    "published_learning_rates",
}
ERRORED = set()
adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, learning_rate=lrate_next_step),
                           name="mutant:schedule_off_by_one")
