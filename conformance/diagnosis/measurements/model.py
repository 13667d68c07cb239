"""§3.4 read off the candidate's model: the embedding scale, how many times the positions are added, the logits'
scale, and whether it returns log-probabilities.

With the parts' own refitted formulas in place (a candidate's attention scale is fitted on its attention), the
neighbour's model has three free constants: x = s E[token] + k PE(pos) at the bottom of each stack (the paper:
s = sqrt(d_model), k = 1), and logits = c y E^T (c = 1), possibly through a log-softmax. On a small padded
batch, at two d_model, c follows from the others in closed form and (s, k) by a simplex search from the paper's
values; each is then written as a law (d_model^a), and named only when the rebuilt model's logits equal the
candidate's at both sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from conformance.diagnosis.measurements.base import MEASUREMENTS, Knob, measured, measurement
from conformance.diagnosis.neighbour import nice
from conformance.problems.scenarios import LOADED_MODEL, ModelSizes, loaded_model, model_weights, source_and_target
from conformance.tolerances import MODEL, for_dtype

D_MODELS = (8, 16)


@dataclass(frozen=True)
class Law:
    """A constant, or d_model^exponent."""

    kind: str  # "power" or "constant"
    value: float

    def __call__(self, d_model: int) -> float:
        return d_model**self.value if self.kind == "power" else self.value

    def written(self) -> str:
        if self.kind == "constant":
            return f"{self.value:.4g}"
        return "1 (not scaled)" if self.value == 0 else f"d_model^{self.value:g}"


SQRT = Law("power", 0.5)
ONE = Law("power", 0.0)


@dataclass(frozen=True)
class ModelScales:
    embed: Law  # the embedding scale s (the paper: d_model^0.5)
    positions: float  # k
    logits: Law  # the logits' scale c (the paper: 1)
    log_softmax: bool = False
    fixed_embed: float | None = None  # while fitting: s itself, at one d_model

    def embedding(self, d_model: int) -> float:
        return self.fixed_embed if self.fixed_embed is not None else self.embed(d_model)

    def output(self, logits, d_model: int):
        scaled = logits * self.logits(d_model)
        if not self.log_softmax:
            return scaled
        shifted = scaled - scaled.max(-1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))

    def texts(self) -> list[str]:
        found = []
        if self.embed != SQRT:
            found.append(f"the embeddings multiplied by {self.embed.written()} (paper: sqrt(d_model))")
        if self.positions != 1:
            found.append("no positional encoding added" if self.positions == 0 else
                         f"the positional encoding added {self.positions:g} times (paper: once)")
        if self.logits not in (ONE, Law("constant", 1.0)):
            found.append(f"the logits multiplied by {self.logits.written()} (paper: 1)")
        if self.log_softmax:
            found.append("the model returns log-probabilities (log_softmax of the logits) where the logits are"
                         " asked for")
        return found


def _nelder_mead(f, start, step, iterations: int = 120, enough: float = 0.0):
    """A plain simplex minimisation of ``f`` (a few parameters, a smooth objective), stopped early once the best
    value is ``enough``."""
    n = len(start)
    simplex = [np.asarray(start, np.float64)] + [np.asarray(start, np.float64) + step * np.eye(n)[i] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(values)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[0] <= enough:
            break
        centre = np.mean(simplex[:-1], axis=0)
        reflected = centre + (centre - simplex[-1])
        fr = f(reflected)
        if fr < values[0]:
            expanded = centre + 2 * (centre - simplex[-1])
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centre + 0.5 * (simplex[-1] - centre)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                simplex = [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex]
                values = [f(x) for x in simplex]
    best = int(np.argmin(values))
    return simplex[best], values[best]


def _problem(candidate, d_model: int, seed: int):
    from conformance.config import ModelConfig

    for bias in (True, False):
        # two layers: a constant of the stacks' input is not confused with one added at each layer's input
        config = candidate.fit(ModelConfig(src_vocab=16, tgt_vocab=16, d_model=d_model, h=2, d_ff=4 * d_model, N=2,
                                           attention_bias=bias))
        sizes = ModelSizes(config, B=2, S=5, T=4, seed=seed)
        rng = sizes.rng()
        weights = model_weights(config, rng)
        src, tgt_in = source_and_target(sizes, rng)
        try:
            return config, weights, src, tgt_in, loaded_model(candidate, config, weights).forward(src, tgt_in)
        except Exception:  # noqa: BLE001 - the other bias setting, or nothing
            continue
    return None


def _neighbour(part_knobs: dict, scales: ModelScales | None):
    from conformance.boundary.candidate import Candidate
    from conformance.diagnosis.neighbour import Neighbour

    laws = {name: knob.law for name, knob in part_knobs.items()}
    if scales is not None:
        laws["model_scales"] = scales
    return Candidate(Neighbour(laws), name="neighbour", timeout_s=None)


def _logits(neighbour, problem) -> np.ndarray:
    config, weights, src, tgt_in, _ = problem
    return np.asarray(loaded_model(neighbour, config, weights).forward(src, tgt_in), np.float64)


def _raw_logits(part_knobs: dict, problem, s: float, k: float) -> np.ndarray:
    """The neighbour's logits with embedding scale ``s`` and ``k`` times the positions, straight from its NumPy
    model (no candidate boundary: the simplex asks this a hundred times)."""
    from conformance.diagnosis.neighbour import Neighbour

    config, weights, src, tgt_in, _ = problem
    laws = {name: knob.law for name, knob in part_knobs.items()}
    laws["model_scales"] = ModelScales(SQRT, k, ONE, fixed_embed=s)
    adapter = Neighbour(laws)
    model = adapter.model_class(adapter, config, 0)
    model.load_weights(weights)
    return np.asarray(model.forward(src, tgt_in), np.float64)


def _fit_one(part_knobs, problem, log_probs: bool) -> tuple[float, float, float] | None:
    """(s, k, c) at one size: (s, k) by the simplex, the logits' scale c in closed form for each."""
    config, *_, mine = problem
    mine = np.asarray(mine, np.float64)
    d = config.d_model
    target = mine - mine.mean(-1, keepdims=True) if log_probs else mine

    def c_and_error(x):
        raw = _raw_logits(part_knobs, problem, *x)
        raw = raw - raw.mean(-1, keepdims=True) if log_probs else raw
        denominator = float((raw * raw).sum())
        c = float((raw * target).sum()) / denominator if denominator else 0.0
        return c, float(np.abs(c * raw - target).max())

    best, error = _nelder_mead(lambda x: c_and_error(x)[1], (math.sqrt(d), 1.0), np.array([0.5 * math.sqrt(d), 0.5]),
                               enough=1e-5 * max(1.0, float(np.abs(target).max())))
    if error > 1e-2 * max(1.0, float(np.abs(target).max())):
        return None
    c, _ = c_and_error(best)
    return float(best[0]), float(best[1]), c


def _law(values: list[tuple[int, float]]) -> Law | None:
    """d^a with the same a at every d, else the same constant at every d, else None."""
    if all(v > 0 for _, v in values):
        exponents = [math.log(v) / math.log(d) for d, v in values]
        if abs(exponents[0] - exponents[1]) <= 2e-2:
            return Law("power", nice(float(np.mean(exponents)), tol=2e-2))
    (_, first), (_, second) = values
    if abs(first - second) <= 1e-2 * max(abs(first), 1e-12):
        return Law("constant", float(f"{np.mean([first, second]):.4g}"))
    return None


@measurement("model_scales", "refit", (*LOADED_MODEL, "model.forward"),
             "the embeddings multiplied by d_model^<a>; the positional encoding added <k> times; the logits"
             " multiplied by d_model^<a>; log-probabilities returned", reads=("build_model",))
def model_scales(candidate):
    part_knobs = {knob.name: knob for item in MEASUREMENTS if item.kind == "refit" and item.name != "model_scales"
                  for knob in measured(candidate, item)}
    problems = [_problem(candidate, d, 97 + d) for d in D_MODELS]
    if any(p is None for p in problems):
        return []
    tol = for_dtype(MODEL, candidate.conventions.dtype)
    if all(_same(_logits(_neighbour(part_knobs, None), p), p[-1], tol) for p in problems):
        return []  # the model is the neighbour's with the paper's scales: nothing to fit here
    # rows whose exponentials sum to 1 are log-probabilities: fitted through a log-softmax, else as logits
    log_probs = all(np.abs(_logsumexp(p[-1])).max() < 1e-3 for p in problems)
    fits = []
    for p in problems:  # the second size only when the first one fits
        fits.append(_fit_one(part_knobs, p, log_probs))
        if fits[-1] is None:
            return []
    embed = _law([(d, s) for d, (s, _, _) in zip(D_MODELS, fits, strict=True)])
    logits = _law([(d, c) for d, (_, _, c) in zip(D_MODELS, fits, strict=True)])
    ks = [k for _, k, _ in fits]
    if embed is None or logits is None or abs(ks[0] - ks[1]) > 1e-2:
        return []
    k = float(round(ks[0])) if abs(ks[0] - round(ks[0])) < 1e-2 else round(ks[0], 3)
    scales = ModelScales(embed, k, logits, log_probs)
    neighbour = _neighbour(part_knobs, scales)
    if not scales.texts() or not all(_same(_logits(neighbour, p), p[-1], tol) for p in problems):
        return []
    facts = {"embedding": embed.written(), "positions": k, "logits": logits.written(), "log_softmax": log_probs}
    key = "model_scales:" + ",".join(f"{name}={value}" for name, value in facts.items())
    return [Knob("model_scales", scales, "model constants refitted from the candidate's logits: "
                 + "; ".join(scales.texts()), key, facts)]


def _logsumexp(x):
    x = np.asarray(x, np.float64)
    top = x.max(-1, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(-1, keepdims=True)))[..., 0]


def _same(a, b, tol) -> bool:
    from conformance.diagnosis.matching import agrees

    return agrees(np.asarray(a, np.float64), np.asarray(b, np.float64), tol)
