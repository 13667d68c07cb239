"""Hidden scores filled with -1e9 instead of -inf: a query whose keys are all hidden reads them all, uniformly.

Breaks the suite's convention for a row with no visible key (docs/claims.md: weights 0, output 0); the paper
("setting to -inf", §3.2.3) defines no softmax over an empty set of keys. Everywhere else it is the paper's:
exp(-1e9) is 0. Real code fills with a finite number: the annotated transformer and many others -1e9,
OpenNMT-py -1e18 (``modules/multi_headed_attn.py``), Hugging Face the dtype's minimum (``masking_utils.py``),
older code -1e4 for float16; each makes a fully hidden row uniform over its keys, padding included.
"""

import functools

from conformance.implementations.mutants._build import attention, with_formulas

adapter = with_formulas("masked_scores_filled_with_minus_1e9", attention=functools.partial(attention, fill=-1e9))
