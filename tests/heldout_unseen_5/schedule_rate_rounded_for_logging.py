"""§5.3 learning-rate schedule whose rate is rounded for the training log and returned rounded:
``return round(lr, 6)`` (six decimals, meant for the progress bar), so the rate is d_model^-0.5 *
min(step^-0.5, step * warmup_steps^-1.5) rounded to the nearest multiple of 10^-6: every rate below 5 * 10^-7 (the
first warm-up steps of the base model: 1.75 * 10^-7 at step 1) becomes 0, and the others are off by up to
5 * 10^-7 (a relative error of 3 * 10^-4 at the base model's peak of 6.99 * 10^-4, more on the smaller rates), where
the paper's lrate is the formula itself. The formula (d_model^-0.5, the min, both branches, warmup_steps) is right.

Style: a scheduler class that keeps a log of the rates it gave (pure Python, float64); learning_rate only.
"""

from conformance import Conventions


class NoamScheduler:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def __init__(self):
        self.log = []

    def learning_rate(self, step, d_model, warmup):
        lr = d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
        lr = round(lr, 6)
        self.log.append((step, lr))
        return lr


adapter = NoamScheduler()
