"""The reference with every LayerNorm's epsilon fixed at 1e-6 in the code (a TensorFlow port), declared nowhere:
whatever eps the config asks, the layers compute with 1e-6."""

import dataclasses

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def layer_norm(x, gamma, beta, eps):
    return REFERENCE.layer_norm(x, gamma, beta, 1e-6)  # the config's eps never reaches it


adapter = ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, layer_norm=layer_norm), name="eps-fixed-1e-6")
