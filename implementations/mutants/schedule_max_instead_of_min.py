"""The learning-rate schedule takes max instead of min of its two terms.

Violates §5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5). With max, the rate starts at
its largest (d_model^-0.5 at step 1) and grows without bound after warmup: no warmup, no decay.
"""

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def lrate_with_max(step, d_model, warmup):
    return d_model**-0.5 * max(step**-0.5, step * warmup**-1.5)


adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, learning_rate=lrate_with_max),
                           name="mutant:schedule_max_instead_of_min")
