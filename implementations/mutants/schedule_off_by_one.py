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


adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, learning_rate=lrate_next_step),
                           name="mutant:schedule_off_by_one")
