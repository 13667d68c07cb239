"""An additive mask (1 - keep) x -1e9 built in the scores' dtype: -1e9 is -inf in float16, and 0 x -inf is NaN.

Breaks §3.2.3 (hidden scores set to -inf, visible ones left as they are) in float16: -1e9 overflows to -inf, so the
mask's 0 at every visible key becomes 0 x -inf = NaN and every score with it. In float32 and bfloat16 -1e9 is
finite and the mask is the paper's (a fully hidden row then reads its keys uniformly: the suite's convention).
"""

import math

import torch

from conformance.implementations.mutants._build import with_formulas


def attention(q, k, v, keep):
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)
    if keep is not None:
        hidden = (~keep).to(scores.dtype)
        scores = scores + hidden * torch.tensor(-1e9, dtype=scores.dtype)  # the bug: the fill in the dtype
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


adapter = with_formulas("half_additive_mask_built_in_dtype", attention=attention)
