"""What a decoder's self-attention hides instead of the future, recognised by the cells it puts at weight 0.

Each pattern recognised here is the signature of a catalogue entry, and what is said of it is that entry's own
sentence (its module's ``SIGNATURES["causal_pattern"]``): the check that compares the maps with the published
causal masks holds no list of wrong masks, and no sentence about a known bug lives outside its module.
"""

from __future__ import annotations

import numpy as np

from conformance.implementations import mutants


def causal_pattern_bug(visible: np.ndarray, allowed: np.ndarray) -> str | None:
    """The catalogue entry whose signature the hidden cells are, or None for a pattern none shows.
    ``visible`` (h, T, T): the weights that are not 0; ``allowed`` (T, T): the published pattern."""
    hidden, future = ~visible, ~allowed
    if not hidden.any():
        return "no_causal_mask"  # or a mask ignored, or a finite fill: its sentence names them
    if (hidden == (future | np.eye(len(allowed), dtype=bool))).all():
        return "causal_diagonal_blocked"
    if (hidden == future.T).all():
        return "attention_maps_transposed"  # or the mask transposed: its sentence says so
    if (hidden == allowed).all():
        return "attention_mask_inverted"
    return None


def causal_pattern_cause(visible: np.ndarray, allowed: np.ndarray) -> str | None:
    """What the decoder's self-attention hides instead of the future, in the words of the catalogue entry whose
    signature it is; None when it is no usual mistake."""
    bug = causal_pattern_bug(visible, allowed)
    return mutants.signatures(bug)["causal_pattern"] if bug else None
