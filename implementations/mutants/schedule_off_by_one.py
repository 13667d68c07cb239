"""The schedule counts steps from 0: it returns lrate(step + 1) for step.

Violates §5.3 as the lesson applies it: LambdaLR counts from 0, so the lesson's lambda is
lrate(s + 1); adding one more shifts every rate by a step. Only the first steps differ much, which is
why the published tables catch it at step 1 (1.747e-07 vs 3.494e-07) while most random steps do not.
It is also the rate a log read after ``sched.step()`` shows: the next step's ("A log printed after
sched.step() shows 1.58e-03, the rate of the next step").
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class NextStepsRate(NumpyAdapter):
    def learning_rate(self, step, d_model, warmup):
        return super().learning_rate(step + 1, d_model, warmup)  # the bug: one step ahead


adapter = NextStepsRate()
