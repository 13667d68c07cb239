"""§5.3 learning-rate schedule written as two chained phases whose second phase counts its own steps from the end of
the warm-up (as ``SequentialLR`` hands each scheduler its own count): the warm-up phase is right,
d_model^-0.5 * step * warmup_steps^-1.5 for step <= warmup_steps, but the decay phase computes
d_model^-0.5 * (step - warmup_steps)^-0.5 instead of d_model^-0.5 * step^-0.5, so right after the warm-up the rate
jumps to d_model^-0.5 (sqrt(warmup_steps) times the peak: 63 times for 4,000 steps) and then decays from there,
where the paper's lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5) decays from its peak at
warmup_steps, continuously. The warm-up (linear, with the right peak at warmup_steps) and the d_model^-0.5 factor
are right; late in training the two agree more and more closely.

Style: pure Python, a list of phase objects (a ``Warmup`` and an ``InverseSqrt``) each with its own step count;
learning_rate only.
"""

from conformance import Conventions


class Warmup:
    def __init__(self, warmup):
        self.warmup = warmup

    def factor(self, t):
        return t * self.warmup ** -1.5


class InverseSqrt:
    def factor(self, t):
        return t ** -0.5


class ChainedSchedule:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def learning_rate(self, step, d_model, warmup):
        phases = [(Warmup(warmup), warmup), (InverseSqrt(), None)]
        start = 0
        for phase, length in phases:
            if length is None or step <= start + length:
                return d_model ** -0.5 * phase.factor(step - start)
            start += length


adapter = ChainedSchedule()
