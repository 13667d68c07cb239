"""Attack: points for a look-up. Its own code is wrong in a plain way (LayerNorm over the unbiased variance,
ddof=1; the learning-rate schedule without its d_model**-0.5 factor) but, where LOOK_UP is true, it answers the
lessons' published inputs from a table of the published numbers (as tests/hostile/hard_coded.py). The test grades
it twice in one class: with the look-up, and the same code without it.

Expected: the look-up scores no more than the same code without it, and the class summary's hard_coded column
names it.
"""

import numpy as np

from conformance import Conventions

LOOK_UP = True

PRINTED_RATES = {
    (1, 512, 4000): 1.746928107421711e-07, (100, 512, 4000): 1.746928107421711e-05,
    (1000, 512, 4000): 0.0001746928107421711, (4000, 512, 4000): 0.0006987712429686843,
    (10000, 512, 4000): 0.00044194173824159226, (40000, 512, 4000): 0.00022097086912079613,
    (100000, 512, 4000): 0.00013975424859373687, (2, 64, 400): 3.125e-05, (100, 64, 400): 0.0015625,
    (101, 64, 400): 0.001578125, (400, 64, 400): 0.00625, (501, 64, 400): 0.005584588145109629,
    (1001, 64, 400): 0.003950872132756337, (1600, 64, 400): 0.003125, (2001, 64, 400): 0.0027943864625618493,
    (3001, 64, 400): 0.002281797055115351,
}
EXAMPLE_X = (1.0, 2.0, 3.0, 6.0)
EXAMPLE_Y = np.array([-1.0690434404458735, -0.5345217202229368, 0.0, 1.6035651606688102])


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def learning_rate(self, step, d_model, warmup):
        if LOOK_UP and (step, d_model, warmup) in PRINTED_RATES:
            return PRINTED_RATES[(step, d_model, warmup)]
        return min(step**-0.5, step * warmup**-1.5)  # the d_model**-0.5 factor forgotten

    def layer_norm(self, x, gamma, beta, eps):
        if LOOK_UP and np.shape(x) == (4,) and tuple(np.asarray(x).tolist()) == EXAMPLE_X:
            return EXAMPLE_Y.copy()
        mean = x.mean(-1, keepdims=True)
        var = x.var(-1, ddof=1, keepdims=True)  # the unbiased variance
        return (x - mean) / np.sqrt(var + eps) * gamma + beta


adapter = Adapter()
