"""Localisation inside a layer through the coarse parts: ``attention_sublayer`` and ``ffn_sublayer``.

An implementation whose attention and FFN modules fold in the residual and the LayerNorm has no bare
``multi_head_attention`` or ``feed_forward`` to rerun on the oracle's inputs (``localise``); its adapter's
composite parts are rerun instead, each on the oracle's input to that sublayer and compared with the
oracle's state after the sublayer's norm. The message then names the sublayer, residual and norm included.
"""

from __future__ import annotations

import numpy as np

from conformance.diagnosis.matching import agrees
from conformance.problems.scenarios import key_padding
from conformance.weights import sublayer_weights

COARSE = {"multi_head_attention": "attention_sublayer", "feed_forward": "ffn_sublayer"}
WHOLE = "(attention_sublayer: the attention, its residual or its norm)"


def testable(candidate, part: str) -> bool:
    """Whether the candidate's sublayer ``part`` can be rerun alone, bare or with its residual and norm."""
    return candidate.provides(part) or candidate.provides(COARSE[part])


def _coarse_only(candidate, part: str) -> bool:
    return not candidate.provides(part) and candidate.provides(COARSE[part])


def suspect_in_encoder(candidate, x, w, h, eps, keep, want: dict, tol) -> str | None:
    """The first composite sublayer of an encoder layer that disagrees, or None."""
    if _coarse_only(candidate, "multi_head_attention"):
        got = candidate.attention_sublayer(x, None, sublayer_weights(w, "self_attn", "norm1"), h, eps,
                                           key_padding(keep, x.shape[1]))
        if not agrees(got, want["norm1"], tol):
            return f"self-attention sublayer suspected {WHOLE}"
    return _ffn(candidate, want["norm1"], w, "norm2", eps, want["out"], tol)


def suspect_in_decoder(candidate, y, memory, w, h, eps, src_keep, want: dict, tol) -> str | None:
    """The first composite sublayer of a decoder layer that disagrees, or None."""
    if _coarse_only(candidate, "multi_head_attention"):
        self_keep = np.broadcast_to(want["self_keep"], (y.shape[0], *want["self_keep"].shape[1:]))
        got = candidate.attention_sublayer(y, None, sublayer_weights(w, "self_attn", "norm1"), h, eps, self_keep)
        if not agrees(got, want["norm1"], tol):
            return f"masked self-attention sublayer suspected {WHOLE}"
        got = candidate.attention_sublayer(want["norm1"], memory, sublayer_weights(w, "cross_attn", "norm2"), h, eps,
                                           key_padding(src_keep, y.shape[1]))
        if not agrees(got, want["norm2"], tol):
            return f"cross-attention sublayer suspected {WHOLE}"
    return _ffn(candidate, want["norm2"], w, "norm3", eps, want["out"], tol)


def _ffn(candidate, x, w, norm: str, eps, want, tol) -> str | None:
    if _coarse_only(candidate, "feed_forward") and not agrees(
            candidate.ffn_sublayer(x, sublayer_weights(w, "ffn", norm), eps), want, tol):
        return "feed-forward sublayer suspected (ffn_sublayer: the FFN, its residual or its norm)"
    return None
