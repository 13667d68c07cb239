"""§5.3 learning rate written in fairseq's normalised form with the d_model factor as its peak:
lrate = d_model^-0.5 * min(step / warmup_steps, (step / warmup_steps)^-0.5), which equals the paper's
d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5) times sqrt(warmup_steps): the factor warmup_steps^-0.5 of
the paper's peak d_model^-0.5 * warmup_steps^-0.5 is missing. The shape is right (linear rise, peak at
warmup_steps, inverse-square-root decay); every rate is sqrt(warmup_steps) times too large (63.2 for 4,000).

Style: a frozen dataclass holding the schedule's configuration, with the rate as a method; learning_rate only.
"""

from dataclasses import dataclass

from conformance import Conventions


@dataclass(frozen=True)
class InverseSqrtConfig:
    d_model: int
    warmup_updates: int

    @property
    def peak_lr(self) -> float:
        return self.d_model ** -0.5  # the bug: the paper's peak is d_model^-0.5 * warmup^-0.5

    def lr_at(self, num_updates: int) -> float:
        progress = num_updates / self.warmup_updates
        return self.peak_lr * min(progress, progress ** -0.5)


class DataclassSchedule:
    conventions = Conventions(mask="keep", dtype="float64", framework="python (dataclass)")

    def learning_rate(self, step, d_model, warmup):
        return InverseSqrtConfig(int(d_model), int(warmup)).lr_at(int(step))


adapter = DataclassSchedule()
