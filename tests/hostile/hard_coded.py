"""Attack: hard-code the lesson's printed numbers: the schedule's table and the LayerNorm example.

Expected: the published-number checks pass (those numbers are right), every randomised twin fails,
and the twin's failure says "matches the published values but not the formula on fresh inputs:
hard-coded?".
"""

import numpy as np

from conformance import Conventions

# lrate(step, d_model, warmup) at every point the lessons print (the paper's table, the toy's checks,
# the toy's log), copied out.
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
        return PRINTED_RATES.get((step, d_model, warmup), 1e-3)

    def layer_norm(self, x, gamma, beta, eps):
        if np.shape(x) == (4,) and tuple(x) == EXAMPLE_X:
            return EXAMPLE_Y.copy()
        return x - x.mean(-1, keepdims=True)


adapter = Adapter()
