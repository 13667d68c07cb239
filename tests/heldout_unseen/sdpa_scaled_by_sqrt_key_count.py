"""§3.2.1 scaled dot-product attention that divides the scores by the square root of the number of keys, Lk
(``len(keys)``, an index slip: the keys' first dimension read where their last was meant), instead of sqrt(d_k):
softmax(Q K^T / sqrt(Lk)) V. Right only when the sequence of keys happens to be d_k long.

Style: pure-Python loops over lists (batch, query, key, feature), keep-polarity masks, float64;
scaled_dot_product_attention only.
"""

import math

import numpy as np

from conformance import Conventions


def _attend_one(queries, keys, values, keep):
    scale = math.sqrt(len(keys))  # the bug: the number of keys, not the width d_k = len(keys[0])
    outs, maps = [], []
    for i, q in enumerate(queries):
        scores = []
        for j, k in enumerate(keys):
            s = sum(a * b for a, b in zip(q, k)) / scale
            scores.append(s if keep is None or keep[i][j] else None)
        visible = [s for s in scores if s is not None]
        if not visible:
            maps.append([0.0] * len(keys))
            outs.append([0.0] * len(values[0]))
            continue
        top = max(visible)
        exps = [0.0 if s is None else math.exp(s - top) for s in scores]
        total = sum(exps)
        w = [e / total for e in exps]
        maps.append(w)
        outs.append([sum(w[j] * values[j][c] for j in range(len(keys))) for c in range(len(values[0]))])
    return outs, maps


class Loops:
    conventions = Conventions(mask="keep", dtype="float64", framework="pure python")

    def scaled_dot_product_attention(self, q, k, v, mask):
        q, k, v = (np.asarray(a, dtype=np.float64).tolist() for a in (q, k, v))
        masks = [None] * len(q) if mask is None else np.asarray(mask, dtype=bool).tolist()
        outs, maps = zip(*(_attend_one(q[b], k[b], v[b], masks[b]) for b in range(len(q))))
        B, Lq, Lk, d_v = len(q), len(q[0]), len(k[0]), len(v[0][0])
        return (np.array(outs, dtype=np.float64).reshape(B, Lq, d_v),
                np.array(maps, dtype=np.float64).reshape(B, Lq, Lk))


adapter = Loops()
