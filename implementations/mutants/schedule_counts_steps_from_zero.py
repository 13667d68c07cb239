"""The schedule counts steps from 0: step s gets lrate(s - 1), steps 1 and 2 both lrate(1).

Violates §5.3 as the lesson applies it: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5) with
steps counted from 1, which is why the lesson's ``LambdaLR(opt, lambda s: lrate(s + 1, 64, 400))`` adds
one to LambdaLR's count from 0. Without the + 1, step 0 has no rate (0^-0.5); the annotated transformer's
guard counts it as 1, so every rate after the first is the previous step's.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class CountsFromZero(NumpyAdapter):
    def learning_rate(self, step, d_model, warmup):
        return super().learning_rate(max(step - 1, 1), d_model, warmup)  # the bug: LambdaLR's count, no + 1


adapter = CountsFromZero()
