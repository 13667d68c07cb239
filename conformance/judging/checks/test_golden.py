"""Golden outputs of the reference (``fixtures/golden/``) at the paper's base size; the trained toy's
checkpoint has its own module, test_checkpoint.py.

The base-size golden is one forward pass with 63,082,496 parameters drawn from a seed (Table 3's base
configuration, the lesson's 37,000-token vocabulary): the weights are regenerated, not stored.
"""

import numpy as np
import pytest

from conformance.config import base_config
from conformance.diagnosis.localise import locate_encode, locate_forward
from conformance.fixtures import golden
from conformance.fixtures.golden import BASE_SEED
from conformance.paper import claims
from conformance.tolerances import Tolerance
from conformance.weights import model_shapes, random_weights

SECTION = "§3 Model architecture: golden outputs"


@claims.BASE_CONFIGURATION
@pytest.mark.requires("model.forward", "model.encode", "model.load_weights")
def test_base_size_forward_matches_golden(candidate, check):
    """At the paper's base size (N = 6, d_model 512, h 8, d_ff 2048, V 37,000) logits equal the reference's."""
    stored = golden.load("base_forward")
    config = base_config()
    model = candidate.build_model(config, seed=0)
    weights = random_weights(model_shapes(config), np.random.default_rng(BASE_SEED))
    model.load_weights(weights)
    tol = golden.tolerance_for("base_forward", candidate.conventions.dtype)
    src, tgt_in = stored["src"], stored["tgt_in"]
    memory = model.encode(src)  # the localisation's answer too: a second model would load 252 MB of weights again
    check.close(memory, stored["memory"], tol, what="memory (1, 3, 512)",
                locate=lambda: locate_encode(candidate, config, weights, src, answer=lambda: memory))
    logits = model.forward(src, tgt_in).astype(np.float64)
    check.close(logits[..., : stored["logits_head"].shape[-1]], stored["logits_head"], tol,
                what="logits[..., :256] of (1, 4, 37000)",
                locate=lambda: locate_forward(candidate, model, config, weights, src, tgt_in))
    top = logits.max(-1, keepdims=True)
    check.close(top[..., 0] + np.log(np.exp(logits - top).sum(-1)), stored["logsumexp"], tol,
                what="logsumexp over all 37,000 logits")
    check.close(logits.argmax(-1), stored["argmax"], Tolerance(0, 0, "token ids are exact"), what="argmax token")
