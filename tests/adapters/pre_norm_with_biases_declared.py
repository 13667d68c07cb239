"""The pre-norm mutant declaring biases on every projection (supports: attention_bias (True,)): the layer checks draw
bias-free layers too, fitted to biases before they run. Its failing example must show the layer as it ran."""

import copy

from conformance.adapter import Conventions
from conformance.implementations.mutants.pre_norm import adapter as pre_norm

adapter = copy.copy(pre_norm)
adapter.conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                                  supports={"attention_bias": (True,)})
