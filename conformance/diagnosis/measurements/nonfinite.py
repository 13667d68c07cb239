"""Where non-finite values appear, and which input makes them.

A part that returns NaN or inf ends its check in an error before any comparison, so no known bug can be matched
on it. This measurement asks the part again on purpose-built inputs that hold one suspect each (a query row whose
keys are all hidden, a row of equal values, padded positions) beside ordinary ones, and says where the
non-finite values fall, as a pattern over the batch, the positions and the heads, when that pattern is exactly
the suspect input's, at two sizes.
"""

from __future__ import annotations

import numpy as np

from conformance.diagnosis.measurements.base import as_description, measurement
from conformance.problems.scenarios import LayerSizes, layer_weights, loaded_model, model_weights, token_ids


def _bad(values) -> np.ndarray:
    return ~np.isfinite(np.asarray(values, np.float64))


def _rows(bad: np.ndarray, axes: int) -> np.ndarray:
    """Collapse every axis after the first ``axes``: is any value of that row non-finite?"""
    return bad.reshape(*bad.shape[:axes], -1).any(-1)


def _attention(candidate, part: str, size: tuple[int, int, int], seed: int):
    """(non-finite (B, Lq) rows, fully hidden (B, Lq) rows) of the bare or multi-head attention."""
    B, Lq, Lk = size
    rng = np.random.default_rng(seed)
    keep = rng.random((B, Lq, Lk)) < 0.6
    keep[..., 0] = True
    keep[0, 1] = keep[B - 1, Lq - 1] = False  # two rows whose keys are all hidden
    if part == "scaled_dot_product_attention":
        q, k, v = (rng.normal(0, 1, s) for s in ((B, Lq, 8), (B, Lk, 8), (B, Lk, 4)))
        raw = candidate.call(part, candidate.adapter, candidate.cast(q), candidate.cast(k), candidate.cast(v),
                             candidate.to_mask(keep))
        bad = _rows(_bad(raw[0]), 2) | _rows(_bad(raw[1]), 2)
    else:
        from conformance.weights import attention_shapes, random_weights

        weights = random_weights(attention_shapes(8, bias=False), rng)
        x = rng.normal(0, 1, (B, Lq, 8)).astype(np.float32)
        memory = rng.normal(0, 1, (B, Lk, 8)).astype(np.float32)
        raw = candidate.call(part, candidate.adapter, candidate.to_layout(candidate.cast(x)),
                             candidate.to_layout(candidate.cast(memory)), candidate.to_layout(candidate.cast(memory)),
                             candidate.cast_weights(weights), 2, candidate.to_mask(keep))
        out = np.asarray(candidate.from_layout(raw[0]), np.float64)
        bad = _rows(_bad(out), 2) | _bad(raw[1]).reshape(B, 2, Lq, -1).any(-1).any(1)
    return bad, ~keep.any(-1)


def _layer_norm(candidate, size: tuple[int, int], seed: int):
    rows, d = size
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, (rows, d))
    x[1] = 2.0  # a row of equal values (exactly representable: its mean is exact), variance 0
    raw = candidate.call("layer_norm", candidate.adapter, candidate.cast(x), candidate.cast(np.ones(d)),
                         candidate.cast(np.zeros(d)), 1e-5)
    return _rows(_bad(raw), 1), np.ptp(x, axis=-1) == 0


def _model(candidate, method: str, size: tuple[int, int, int], seed: int):
    """(non-finite (B, L) positions, padded (B, L) positions) of the model's forward or encode."""
    from conformance.config import ModelConfig

    d_model, S, T = size
    config = candidate.fit(ModelConfig(src_vocab=16, tgt_vocab=16, d_model=d_model, h=2, d_ff=4 * d_model, N=1))
    rng = np.random.default_rng(seed)
    src_keep = np.arange(S)[None] < np.array([S, S - 2])[:, None]
    tgt_keep = np.arange(T)[None] < np.array([T, T - 2])[:, None]
    src = token_ids(rng, config, 2, S, keep=src_keep)
    tgt_in = token_ids(rng, config, 2, T, keep=tgt_keep, start=config.bos_id)
    model = loaded_model(candidate, config, model_weights(config, rng))
    if method == "encode":
        raw = candidate.call("model.encode", model.model, model._ids(src))
        return _rows(_bad(candidate.from_layout(raw)), 2), ~src_keep
    raw = candidate.call("model.forward", model.model, model._ids(src), model._ids(tgt_in))
    return _rows(_bad(candidate.from_layout(raw)), 2), ~tgt_keep


def _layer(candidate, stack: str, size: LayerSizes):
    rng = size.rng()
    weights = layer_weights(size, stack, rng)
    L = size.S if stack == "encoder" else size.T
    x = rng.normal(0, 1, (size.B, L, size.d_model)).astype(np.float32)
    keep = np.ones((size.B, L), bool)
    keep[1, -2:] = False
    if stack == "encoder":
        raw = candidate.call("encoder_layer", candidate.adapter, candidate.to_layout(candidate.cast(x)),
                             candidate.cast_weights(weights), size.h, size.eps, candidate.to_mask(keep))
    else:
        memory = rng.normal(0, 1, (size.B, size.S, size.d_model)).astype(np.float32)
        raw = candidate.call("decoder_layer", candidate.adapter, candidate.to_layout(candidate.cast(x)),
                             candidate.to_layout(candidate.cast(memory)), candidate.cast_weights(weights), size.h,
                             size.eps, candidate.to_mask(keep), candidate.to_mask(np.ones((size.B, size.S), bool)))
    return _rows(_bad(candidate.from_layout(raw)), 2), ~keep


PROBES = {
    "scaled_dot_product_attention": (lambda c, s, seed: _attention(c, "scaled_dot_product_attention", s, seed),
                                     ((2, 4, 5), (3, 5, 6)), "the query rows whose keys are all hidden (a softmax over"
                                     " a row of -inf is 0/0)"),
    "multi_head_attention": (lambda c, s, seed: _attention(c, "multi_head_attention", s, seed),
                             ((2, 4, 5), (3, 5, 6)), "the query rows whose keys are all hidden (a softmax over a row of"
                                                     " -inf is 0/0)"),
    "layer_norm": (_layer_norm, ((4, 6), (5, 3)), "the rows whose values are all equal (variance 0: eps is not"
                                                  " added, or added after the root of 0)"),
    "model.forward": (lambda c, s, seed: _model(c, "forward", s, seed), ((8, 5, 4), (16, 6, 5)),
                      "the padded target positions"),
    "model.encode": (lambda c, s, seed: _model(c, "encode", s, seed), ((8, 5, 4), (16, 6, 5)),
                     "the padded source positions"),
    "encoder_layer": (lambda c, s, seed: _layer(c, "encoder", s), (
        LayerSizes(B=2, S=5, T=4, h=2, d_k=4, d_ff=16, bias=True, seed=71),
        LayerSizes(B=2, S=6, T=5, h=2, d_k=3, d_ff=24, bias=True, seed=72)), "the padded positions"),
    "decoder_layer": (lambda c, s, seed: _layer(c, "decoder", s), (
        LayerSizes(B=2, S=5, T=4, h=2, d_k=4, d_ff=16, bias=True, seed=71),
        LayerSizes(B=2, S=6, T=5, h=2, d_k=3, d_ff=24, bias=True, seed=72)), "the padded target positions"),
}


def part_of(message_part: str | None) -> str | None:
    """"layer_norm(x(3, 1))" -> "layer_norm"; "model.forward(src(2, 5), ...)" -> "model.forward"."""
    if not message_part:
        return None
    name = message_part.split("(", 1)[0]
    return name if name in PROBES else None


@measurement("nonfinite", "error", (), "non-finite values appear exactly at <the query rows whose keys are all hidden"
             " / the rows of equal values / the padded positions>, and nowhere else; everywhere")
def describe_nonfinite(candidate, part: str) -> list[dict]:
    """Where ``part`` returns non-finite values, when it is exactly where its suspect input is, at two sizes."""
    probe, sizes, suspect = PROBES[part]
    found = []
    for i, size in enumerate(sizes):
        try:
            bad, where = probe(candidate, size, 1000 + i)
        except Exception:  # noqa: BLE001 - the probe cannot run: say nothing
            return []
        found.append((np.asarray(bad, bool), np.asarray(where, bool)))
    if all(bad.any() and np.array_equal(bad, where) for bad, where in found):
        text = f"non-finite values appear exactly at {suspect}, and nowhere else (probed at two sizes)"
        return [as_description("nonfinite", "probe", text, f"nonfinite:{part}:{suspect.split(' (')[0]}")]
    if all(bad.all() for bad, _ in found):
        return [as_description("nonfinite", "probe", f"non-finite values appear everywhere in {part}'s output,"
                               " whatever the input (probed at two sizes)", f"nonfinite:{part}:everywhere")]
    return []
