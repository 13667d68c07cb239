"""§5.3 learning rate whose warm-up length never reaches the formula: the schedule is a factory
``noam(d_model, warmup_steps=4000)`` and the adapter's call site builds it as ``noam(d_model)``, so the warmup
argument it receives is dropped and the default 4,000 is always used: lrate = d_model^-0.5 *
min(step^-0.5, step * 4000^-1.5) whatever warmup_steps is asked, where the paper's rate uses the given
warmup_steps: d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5). Right only for warmup_steps = 4000 (the
paper's value); the d_model factor, the linear warm-up shape and the inverse-square-root decay are right.

Style: a closure factory with a keyword default, float arithmetic in pure Python; learning_rate only.
"""

from conformance import Conventions


def noam(d_model, warmup_steps=4000):
    scale = d_model ** -0.5

    def rate(step):
        return scale * min(step ** -0.5, step * warmup_steps ** -1.5)

    return rate


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def learning_rate(self, step, d_model, warmup):
        return float(noam(d_model)(step))


adapter = Adapter()
