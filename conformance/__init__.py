"""transformer-conformance: certifies that an implementation computes what the 2017 Transformer computes.

The public facade: the adapter protocol, the comparator, tolerances, configurations and canonical
weights. Everything else is internal and may change.
"""

from conformance.adapter import ADAPTER_PARTS, MODEL_PARTS, PARTS, Adapter, Conventions, Model
from conformance.compare import assert_close, measure
from conformance.config import ModelConfig, Recipe, base_config, german_config, toy_config
from conformance.errors import AdapterError, BadOutput, Blocked, CheckFailure, LoadError, PartNotImplemented
from conformance.tolerances import Tolerance

__all__ = [
    "ADAPTER_PARTS",
    "MODEL_PARTS",
    "PARTS",
    "Adapter",
    "AdapterError",
    "BadOutput",
    "Blocked",
    "CheckFailure",
    "Conventions",
    "LoadError",
    "Model",
    "ModelConfig",
    "PartNotImplemented",
    "Recipe",
    "Tolerance",
    "assert_close",
    "base_config",
    "german_config",
    "measure",
    "toy_config",
]
