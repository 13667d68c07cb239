"""Structural patterns no single mutant reproduces numerically: torch.nn.Transformer's two traps.

An extra LayerNorm after a stack (its gamma and beta are not canonical weights, so its effect depends on
values the suite cannot set) and outputs at padded positions replaced by a constant (the nested-tensor
fast path). Each has one detector; a failing encode/decode/forward check runs the candidate's model once
more on a fixed padded probe batch where both show, and compares it with the paper's.

``normalised_once_more`` is the one detector of the extra LayerNorm, whoever looks for it: the probe here, the
localisation (the candidate's own layers chained, ``localise``) and the ablation of a model-only adapter (every
sublayer switched off, ``ablation``). What each says is the catalogue entry's (``EXTRA_NORM``): its module
declares the sentences (``SIGNATURES``), read by ``extra_norm_said``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from conformance.diagnosis.matching import agrees
from conformance.implementations import mutants
from conformance.paper import formulas
from conformance.tolerances import Tolerance

EXTRA_NORM = "extra_final_layer_norm"  # the catalogue entry whose signature ``normalised_once_more`` recognises
PROBE_EPS = 1e-5  # the probe's LayerNorm epsilon (ModelConfig's default); its gamma and beta are fitted


@functools.cache
def _extra_norm_signatures() -> dict[str, str]:
    return mutants.signatures(EXTRA_NORM)


def extra_norm_said(where: str) -> str:
    """What the catalogue entry ``EXTRA_NORM`` says where its signature is seen: "probe", "after_layers",
    "sublayers_off", "sublayers_off_pre_norm" (the keys of its module's ``SIGNATURES``)."""
    return _extra_norm_signatures()[where]


def _states(states: np.ndarray) -> np.ndarray:
    return states


def with_extra_norm(before, eps: float, to_output: Callable = _states) -> np.ndarray:
    """What comes out with one more LayerNorm (gamma 1, beta 0) after ``before``: ``to_output`` of the normalised
    states (the identity, or a decoder's logits)."""
    return to_output(formulas.plain_layer_norm(before, eps))


def normalised_once_more(actual, before, real, tol: Tolerance, *, eps: float, to_output: Callable = _states,
                         fit: bool = False) -> bool:
    """Is ``actual`` ``before`` with one more LayerNorm after it, and not ``before`` itself, at the ``real``
    positions? The signature of an extra LayerNorm after the stack (``EXTRA_NORM``).

    ``before`` (B, L, d): what comes before that norm (the oracle's last states, the candidate's own layers
    chained, an embedding); ``to_output`` maps states to what ``actual`` holds (a decoder's logits); ``real``
    (B, L): the positions judged, a fast path may fill the padded ones. The norm's gamma and beta are 1 and 0
    (a norm whose weights have no canonical name, left at its initial values); with ``fit`` (``actual`` holds
    states) any gamma and beta, a least-squares fit per feature over the real positions: it needs more than 2
    of them to mean anything, and an exact fit then is the signature."""
    actual, before, real = np.asarray(actual, np.float64), np.asarray(before, np.float64), np.asarray(real, bool)
    if actual.shape[:2] != real.shape:
        return False
    got = actual[real]
    if fit and got.shape[0] < 3:
        return False
    if agrees(got, to_output(before)[real], tol):
        return False
    normed = with_extra_norm(before, eps, to_output)[real]
    return agrees(got, _affine_fit(got, normed) if fit else normed, tol)


def _affine_fit(rows: np.ndarray, normed: np.ndarray) -> np.ndarray:
    """gamma * normed + beta closest to ``rows`` by least squares, gamma and beta per feature."""
    fitted = np.empty_like(normed)
    for feature in range(normed.shape[-1]):
        design = np.stack([normed[:, feature], np.ones(len(normed))], axis=1)
        coef, *_ = np.linalg.lstsq(design, rows[:, feature], rcond=None)
        fitted[:, feature] = design @ coef
    return fitted


def padded_positions_constant(actual: np.ndarray, expected: np.ndarray, keep: np.ndarray) -> bool:
    """Are the outputs at padded positions one constant vector (0, or a final norm's beta) where the
    formulas give different rows? The signature of a padded fast path (nested tensors)."""
    padded = actual[~keep]
    if padded.shape[0] < 2:
        return False
    want = expected[~keep]
    return bool(np.ptp(padded, axis=0).max() == 0.0 and np.ptp(want, axis=0).max() > 0.0)


PATTERNS = {
    EXTRA_NORM: extra_norm_said("probe"),
    "padded_positions_constant": "outputs at padded positions replaced by a constant (torch.nn's nested-tensor fast"
                                 " path; set encoder.use_nested_tensor = False)",
}


def structural_patterns(actual, expected, keep, tol: Tolerance) -> list[str]:
    """The names of the patterns ``actual`` shows against ``expected`` (batch-first (B, L, d), keep (B, L))."""
    actual, expected, keep = np.asarray(actual, np.float64), np.asarray(expected, np.float64), np.asarray(keep, bool)
    found = []
    if normalised_once_more(actual, expected, keep, tol, eps=PROBE_EPS, fit=True):
        found.append(EXTRA_NORM)
    if padded_positions_constant(actual, expected, keep):
        found.append("padded_positions_constant")
    return found


# -- the structural probe: the model checks' way to look for the two patterns ------------------------
# The failing example of a property check is often tiny (hypothesis starts from the smallest sizes): one
# unpadded position shows neither pattern. So a failing encode/decode/forward check runs the candidate's
# model once more on a fixed padded batch built so that both show (several real positions per row, two
# heads, attention biases: the conditions of torch.nn's fast path), and compares it with the oracle.
PROBE_LENGTHS = {"src": (7, 5, 3), "tgt": (6, 4, 2)}


def probe_config():
    from conformance.config import ModelConfig

    # tgt_vocab >= 2 d_model, so that the decoder states can be read back from the tied logits y E^T.
    return ModelConfig(src_vocab=40, tgt_vocab=40, d_model=16, h=2, d_ff=64, N=2, attention_bias=True)


def _probe_ids(rng, config, lengths, start=None) -> np.ndarray:
    from conformance.problems.scenarios import token_ids

    L = max(lengths)
    keep = np.arange(L)[None, :] < np.array(lengths)[:, None]  # trailing padding, row 0 full
    return token_ids(rng, config, len(lengths), L, keep=keep, start=start)


def structural_probe(candidate, stack: str) -> list[str]:
    """The patterns the candidate's ``encode`` (stack "encoder") or ``decode`` (the decoder states read
    back from the tied logits by least squares) shows on the probe batch; [] when it shows none or the
    model cannot run it. The probe is built in the configurations the candidate declares, and without
    attention biases when it refuses them (they only make torch.nn's fast path possible)."""
    from conformance.errors import PartNotImplemented

    for config in (probe_config(), probe_config().replace(attention_bias=False)):
        try:
            return _structural_probe(candidate, stack, candidate.fit(config))
        except PartNotImplemented:
            continue
        except Exception:  # a probe that cannot run explains nothing; the failure stands on its own
            return []
    return []


def _structural_probe(candidate, stack: str, config) -> list[str]:
    from conformance.problems import oracle
    from conformance.problems.scenarios import loaded_model, model_weights
    from conformance.tolerances import MODEL, for_dtype

    rng = np.random.default_rng(0)
    weights = model_weights(config, rng)
    src = _probe_ids(rng, config, PROBE_LENGTHS["src"])
    model, reference = loaded_model(candidate, config, weights), oracle.OracleModel(config, weights)
    if stack == "encoder":
        actual, expected, keep = model.encode(src), reference.encode(src), src != config.pad_id
    else:
        tgt_in = _probe_ids(rng, config, PROBE_LENGTHS["tgt"], start=config.bos_id)
        memory = reference.encode(src).astype(np.float32)
        logits = np.asarray(model.decode(tgt_in, memory, src), np.float64)  # (B, T, V) = y E^T
        E = np.asarray(weights["E"], np.float64)  # (V, d_model)
        actual = np.linalg.lstsq(E, logits.reshape(-1, E.shape[0]).T, rcond=None)[0].T.reshape(
            *logits.shape[:2], E.shape[1])
        expected, keep = reference.decoder_states(tgt_in, memory, src)[-1], tgt_in != config.pad_id
    return structural_patterns(actual, expected, keep, for_dtype(MODEL, candidate.conventions.dtype))


def find_structure(candidate, *stacks: str) -> list[str]:
    """The structural patterns (``PATTERNS``) the candidate's model shows on the probe, for these stacks."""
    return list(dict.fromkeys(name for stack in stacks for name in structural_probe(candidate, stack)))
