"""§3.1 Encoder stack: N identical layers of multi-head self-attention, then the position-wise FFN,
each sublayer wrapped as LayerNorm(x + Dropout(Sublayer(x))): the norm comes after the residual
addition (post-norm). ``encode`` applies the N layers to sqrt(d_model) E[src] + PE and returns the
memory, (B, S, d_model) ("The original transformer, step by step", Steps 1-3; "Vanilla Transformer" §2).

Compared with the reference run in float64 on random canonical weights with gamma and beta far from
1 and 0 (so an extra or a missing LayerNorm shows), and padded sources. When ``encode`` fails, the
message names the known bug it matches (confirmed on a second problem), the first encoder layer and
sublayer that diverges on the oracle's own inputs, and whether the model shows a structural pattern on
a padded probe batch (an extra LayerNorm after the stack, padded positions replaced by a constant).
"""

import pytest
from hypothesis import given

from conformance.config import toy_config
from conformance.diagnosis import Question, find_structure
from conformance.diagnosis.localise import locate_encode, suspect_in_encoder_layer
from conformance.errors import PartNotImplemented
from conformance.judging import epsilon
from conformance.paper import claims
from conformance.problems import oracle, questions
from conformance.problems.scenarios import LOADED_MODEL, LayerSizes, fast_failure, layer_sizes, model_sizes
from conformance.tolerances import LAYER, MODEL, for_candidate

SECTION = "§3.1 Encoder stack"


def assert_layer_matches_oracle(candidate, check, sizes: LayerSizes, *, what: str):
    weights, x, keep = questions.encoder_layer_problem(sizes)
    check.close(
        questions.encoder_layer_output(candidate, sizes), oracle.encoder_layer(x, weights, sizes.h, sizes.eps, keep),
        for_candidate(LAYER, candidate), what=f"{what} (x{x.shape}, h={sizes.h})",
        ask=Question(questions.encoder_layer_output, sizes),
        locate=lambda: suspect_in_encoder_layer(candidate, x, weights, sizes.h, sizes.eps, keep),
    )


@claims.POST_NORM
@pytest.mark.requires("encoder_layer")
@fast_failure()
@given(sizes=layer_sizes())
def test_encoder_layer_matches_reference(candidate, check, sizes):
    """An encoder layer with a padded source equals the reference: post-norm self-attention, then FFN."""
    assert_layer_matches_oracle(candidate, check, sizes, what="encoder layer")


@claims.POST_NORM
@pytest.mark.requires("encoder_layer")
def test_encoder_layer_matches_reference_at_base_size(candidate, check):
    """At the paper's base size (d_model 512, h 8, d_ff 2048) an encoder layer equals the reference."""
    sizes = candidate.fit(LayerSizes(B=2, S=9, T=9, h=8, d_k=64, d_ff=2048, bias=True, seed=6))
    assert_layer_matches_oracle(candidate, check, sizes, what="base-size encoder layer")


@claims.EMBEDDING
@pytest.mark.requires(*LOADED_MODEL, "model.encode")
@fast_failure(2 / 3)
@given(sizes=model_sizes())
def test_encode_matches_reference(candidate, check, sizes):
    """encode(src) equals the reference's memory: embedding x sqrt(d_model) + PE, then N encoder layers."""
    cfg = sizes.config
    weights, src, _ = questions.model_problem(sizes)
    check.close(
        questions.memory(candidate, sizes), oracle.OracleModel(cfg, weights).encode(src),
        for_candidate(MODEL, candidate),
        what=f"memory = encode(src{src.shape}) (N={cfg.N}, d_model={cfg.d_model}, h={cfg.h})",
        ask=Question(questions.memory, sizes),
        locate=lambda: locate_encode(candidate, cfg, weights, src),
        structure=lambda: find_structure(candidate, "encoder"),
    )


LESSONS_EPS = 1e-5
SMALL_LAYER = LayerSizes(B=1, S=3, T=3, h=2, d_k=4, d_ff=32, bias=True, seed=0)  # the paper's shape: d_ff = 4 d_model


def run_a_normed_part(candidate) -> None:
    """One call of a part whose LayerNorms the epsilon is about (an encoder layer, else a model built, else a decoder
    layer), so that a check about what the code declares runs only where the code runs; not implemented without."""
    if candidate.provides("encoder_layer"):
        questions.encoder_layer_output(candidate, candidate.fit(SMALL_LAYER))
    elif candidate.provides("build_model"):
        candidate.build_model(candidate.fit(toy_config()), seed=0)
    elif candidate.provides("decoder_layer"):
        questions.decoder_layer_output(candidate, candidate.fit(SMALL_LAYER))
    else:
        raise PartNotImplemented(f"{candidate.name} provides no encoder or decoder layer and no model: no LayerNorm"
                                 " epsilon to read", part="encoder_layer")


@claims.LESSONS_EPSILON
def test_layers_use_the_lessons_layer_norm_epsilon(candidate, check):
    """The layers' LayerNorm ε is the lesson's 10⁻⁵, or any the suite gives them.

    Read off the declaration, once a layer or the model has run: one that declares its own (fixed in its code) is
    said, with the value and the reason it gives. A model that declares none is measured: its encoder made to
    normalise rows of tiny variance (``epsilon.measured``), where an ε fixed in its code shows."""
    run_a_normed_part(candidate)
    declared = candidate.conventions.supports.get("eps")
    reason = candidate.conventions.reasons.get("eps")
    values = ", ".join(f"{float(eps):g}" for eps in declared or ())
    check.claim(declared is None or any(abs(float(eps) - LESSONS_EPS) <= 1e-12 for eps in declared),
                f"the layers' LayerNorm epsilon is declared {values}{f' ({reason})' if reason else ''}, where the"
                " lesson's is 1e-05 (PyTorch's default): rows whose variance is near either value normalise"
                " differently", expected="eps 1e-05 (or any given)", actual=f"eps {values}")
    found = epsilon.measured(candidate) if declared is None else None
    if found is not None:
        check.record("measured_eps", list(found))
        values = " or ".join(f"{eps:g}" for eps in found)
        check.claim(LESSONS_EPS in found, f"the layers' LayerNorm epsilon measures {values}, undeclared, where the"
                    " config asks the lesson's 1e-05 (PyTorch's default): the encoder, made to normalise rows of"
                    " variance 1e-06 and 1e-09, computes what the paper's formulas give with that epsilon (fixed in"
                    " the code? declare it: supports={'eps': (...)})", expected="eps 1e-05 (the config's)",
                    actual=f"eps {values}")
