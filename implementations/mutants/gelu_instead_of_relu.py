"""GELU instead of ReLU in the feed-forward network.

Violates §3.3: FFN(x) = max(0, x W1 + b1) W2 + b2, "two linear transformations with a ReLU activation
in between" (GELU is BERT's and GPT's choice, not the original Transformer's).
"""

from torch.nn import functional

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("gelu_instead_of_relu", activation=functional.gelu)
