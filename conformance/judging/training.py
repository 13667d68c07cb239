"""The training check (§5.3, §5.4 and the lesson's toy run): the data, the run, and its verdict.

The lesson trains the toy model (toy_config(): d_model 64, 4 heads, d_ff 256, 2 + 2 layers, 13 tokens)
to reverse 3 to 8 letters with the paper's recipe: Adam (0.9, 0.98, 1e-9), lrate with 400 warmup
steps, dropout 0.1, label smoothing 0.1, batches of 64, teacher forcing. Its log (``PUBLISHED_LOG``)
reaches 88.8% exact match on 500 held-out sequences at step 500 and 98.2% at step 1,000.

``train(candidate, seed)`` runs the same recipe on any candidate through ``train_step`` and decides
as soon as the verdict is certain: *passed* when greedy decoding of the held-out set crosses
``Plan.pass_exact_match``, *failed* at ``Plan.deadline``, or earlier when the loss is not finite,
when the model has diverged, or when a rate the candidate applied is not lrate(step). Thresholds and
their margins are measured on the reference over many seeds: docs/training-check.md.

Framework-neutral: numpy only; the candidate does the training. Every array here is batch-first,
the suite's convention; ``CandidateModel`` converts.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from conformance.boundary.candidate import CandidateModel
from conformance.config import ModelConfig, toy_config
from conformance.errors import BadOutput, ConformanceOutcome, PartNotImplemented
from conformance.paper import formulas, published

# --------------------------------------------------------------------------------------------------
# What the lesson published
# --------------------------------------------------------------------------------------------------

# Read from fixtures/published.toml by id (``published.fact``, which does not mark them as used by a check).
PUBLISHED_STEPS = published.fact("toy_run.steps")["value"]  # the lesson's full run: 3,000
PUBLISHED_EXAMPLE = published.fact("greedy.source")["value"].replace(" ", "")  # "cabed" -> "d e b a c </s>"
PUBLISHED_TOP_PROBABILITIES = tuple(published.fact("greedy.probabilities")["value"])  # 0.916 ... 0.927


def _published_log() -> tuple[dict, ...]:
    """train_reversal.py's printed log. It prints after sched.step(), so its "lr" is the rate of the NEXT
    update, lrate(step + 1, 64, 400); the loss is the batch's loss before that step's update."""
    def at(step: int, what: str):
        return published.fact(f"toy_run.log.step{step}.{what}")["value"]

    return tuple({"step": step, "lr_next": at(step, "lr"), "train_loss": at(step, "loss"),
                  "exact_match": round(at(step, "exact_match") / 100, 4)}  # printed in percent
                 for step in published.fact("toy_run.log_steps")["value"])


PUBLISHED_LOG = _published_log()


# The formulas live once, in conformance.paper.formulas; training reads them under their old names.
lrate, smoothed_target, smoothed_loss_floor, smoothed_loss = (
    formulas.lrate, formulas.smoothed_target, formulas.smoothed_loss_floor, formulas.smoothed_loss)


# --------------------------------------------------------------------------------------------------
# The data: reverse 3 to 8 letters, generated a batch at a time without a loop per sequence
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """src (B, S); tgt_in = <s> + reversed (B, S + 1); tgt_out = reversed + </s> (B, S + 1); 0-padded."""

    src: np.ndarray
    tgt_in: np.ndarray
    tgt_out: np.ndarray
    lengths: np.ndarray  # (B,) letters per sequence

    def __len__(self) -> int:
        return len(self.lengths)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.src, self.tgt_in, self.tgt_out


def letter_ids(config: ModelConfig) -> np.ndarray:
    """The ids that are neither padding, <s> nor </s>: a..j = 3..12 in the toy vocabulary."""
    specials = [config.pad_id, config.bos_id, config.eos_id]
    return np.setdiff1d(np.arange(min(config.src_vocab, config.tgt_vocab)), specials)


def reversal_batch(
    rng: np.random.Generator, n: int, config: ModelConfig, *, min_len: int = 3, max_len: int = 8
) -> Batch:
    """n random sequences of min_len..max_len letters and their reversal, padded to the longest."""
    letters = letter_ids(config)
    lengths = rng.integers(min_len, max_len + 1, n)
    S = int(lengths.max())
    positions = np.arange(S)
    real = positions[None, :] < lengths[:, None]  # (n, S)
    src = np.where(real, letters[rng.integers(0, len(letters), (n, S))], config.pad_id).astype(np.int64)
    mirrored = lengths[:, None] - 1 - positions[None, :]  # (n, S): source position read by output j
    reversed_ = np.where(real, np.take_along_axis(src, np.clip(mirrored, 0, S - 1), axis=1), config.pad_id)
    tgt_in = np.concatenate([np.full((n, 1), config.bos_id), reversed_], axis=1).astype(np.int64)
    tgt_out = np.concatenate([reversed_, np.full((n, 1), config.pad_id)], axis=1).astype(np.int64)
    tgt_out[np.arange(n), lengths] = config.eos_id
    return Batch(src, tgt_in, tgt_out, lengths)


def loss_after_update(candidate, seed: int = 0) -> str:
    """Words saying that ``train_step`` reports the batch's loss after its update (§5.4's protocol: before it), or ''.
    At dropout 0 a training step's forward is evaluation's, so the value it reports is the model's own smoothed loss
    with the weights it starts from; a step that reports the one with the weights it wrote is told apart by a warmup of
    4 (a first update of d_model^-0.5 / 8, large enough to move the loss far beyond float32's rounding)."""
    from conformance.config import Recipe
    from conformance.weights import model_shapes, random_weights

    config = candidate.fit(toy_config(dropout=0.0, recipe=Recipe(warmup=4, dropout=0.0)))
    rng = np.random.default_rng(seed)
    weights, batch = random_weights(model_shapes(config), rng), reversal_batch(rng, 16, config)
    model = candidate.build_model(config, seed=seed)
    model.load_weights(weights)

    def loss() -> float:
        logits = model.forward(batch.src, batch.tgt_in)
        return smoothed_loss(logits, batch.tgt_out, config.recipe.label_smoothing, config.pad_id)

    before = loss()
    reported = float(model.train_step(*batch.arrays())["loss"])
    after = loss()

    def near(a: float, b: float) -> bool:  # the reported-loss check's tolerance: train- vs eval-mode kernels
        return abs(a - b) <= 1e-5 + 1e-4 * abs(b)

    if near(reported, after) and not near(reported, before) and not near(before, after):
        return (f"train_step reports the batch's loss after its update: {reported:.6g} is the model's own smoothed"
                f" loss with the weights the step wrote ({after:.6g}), not with those it started from ({before:.6g});"
                " §5.4's protocol asks for the loss before the update")
    return ""


def encode_letters(text: str, config: ModelConfig) -> np.ndarray:
    """"cabed" -> [[5, 3, 4, 7, 6]] in the toy vocabulary (a = the first letter id)."""
    letters = letter_ids(config)
    return np.array([[letters[ord(c) - ord("a")] for c in text]], dtype=np.int64)


def token_names(config: ModelConfig) -> list[str]:
    names = [f"<{i}>" for i in range(config.tgt_vocab)]
    for i, token in enumerate(letter_ids(config)):
        names[token] = chr(ord("a") + i) if i < 26 else f"<{token}>"
    names[config.pad_id], names[config.bos_id], names[config.eos_id] = "<pad>", "<s>", "</s>"
    return names


def exact_match(predicted: np.ndarray, batch: Batch, eos_id: int, pad_id: int) -> np.ndarray:
    """Per sequence: the greedy output equals reversed + </s> up to and including the first </s>
    (what follows </s> does not count). predicted (B, L) -> (B,) bool."""
    B, T = batch.tgt_out.shape
    padded = np.full((B, T), pad_id, dtype=np.int64)
    width = min(T, predicted.shape[1])
    padded[:, :width] = predicted[:, :width]
    needed = np.arange(T)[None, :] <= batch.lengths[:, None]  # the letters and </s>
    return ((padded == batch.tgt_out) | ~needed).all(axis=1)


# --------------------------------------------------------------------------------------------------
# The plan and the verdict
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The convergence check's parameters; docs/training-check.md justifies each threshold.

    Pass: the held-out exact match reaches ``pass_exact_match`` at an evaluation no later than
    ``deadline`` (the lesson's log: 88.8% at step 500, 98.2% at step 1,000). Fail: the deadline
    passes, a loss is not finite, the mean loss of the last ``divergence_window`` steps after
    ``first_eval`` is above ``diverged_loss`` (no better than guessing uniformly: ln 13 = 2.565), or
    a rate the candidate reports using is not lrate(step) within ``rate_rtol``.
    """

    batch_size: int = 64
    test_size: int = 500
    min_len: int = 3
    max_len: int = 8
    first_eval: int = 300
    eval_every: int = 100
    deadline: int = 1500
    pass_exact_match: float | None = 0.95  # None: never stop early (measurement runs)
    divergence_window: int = 100
    diverged_loss: float = math.log(13)
    rate_rtol: float = 1e-5
    loss_near_floor: float = 0.1  # the lowest reported loss is within this of 0.537 when the run passes
    top_probability_range: tuple[float, float] = (0.85, 0.97)  # greedy path of "c a b e d", trained model
    test_seed_offset: int = 1234  # the held-out set comes from its own seed stream

    def eval_steps(self) -> list[int]:
        return list(range(self.first_eval, self.deadline + 1, self.eval_every))


DEFAULT_PLAN = Plan()


@dataclass
class TrainingRun:
    """One candidate trained once; the learned-behaviour checks read ``model``."""

    candidate: str
    seed: int
    plan: Plan
    config: ModelConfig
    model: CandidateModel | None = None
    losses: list[float] = field(default_factory=list)  # losses[s - 1]: step s's batch, before its update
    rates: list[float] = field(default_factory=list)  # rates[s - 1]: the rate step s's update used
    evals: list[tuple[int, float]] = field(default_factory=list)  # (step, exact match fraction)
    status: str = "running"  # "passed", "failed" or "error"
    reason: str = ""
    likely_cause: str | None = None
    stopped_at: int = 0
    wall_s: float = 0.0
    train_s: float = 0.0  # time inside train_step and data generation only
    eval_s: float = 0.0
    error: ConformanceOutcome | None = None  # the adapter's error, re-raised by every check that needs the run
    rate_mismatch: dict | None = None
    initialisation: str = ""  # REFERENCE_INIT, or why the candidate's own was kept

    @property
    def best_exact_match(self) -> float:
        return max((em for _, em in self.evals), default=0.0)

    def curves(self) -> dict[str, Any]:
        """The report's ``data.training``: every step's loss and rate, the evaluations, the published log."""
        ours_at = {}
        evals = dict(self.evals)
        for point in PUBLISHED_LOG:
            s = point["step"]
            ours_at[str(s)] = {
                "train_loss": _round(self.losses[s - 1]) if s <= len(self.losses) else None,
                "lr_next": _round(self.rates[s]) if s < len(self.rates) else None,
                "exact_match": evals.get(s),
            }
        return {
            "seed": self.seed,
            "initialisation": self.initialisation,
            "status": self.status,
            "stopped_at": self.stopped_at,
            "wall_s": round(self.wall_s, 3),
            "plan": {
                "batch_size": self.plan.batch_size, "test_size": self.plan.test_size,
                "lengths": [self.plan.min_len, self.plan.max_len], "eval_steps": self.plan.eval_steps(),
                "pass_exact_match": self.plan.pass_exact_match, "deadline": self.plan.deadline,
            },
            "recipe": {
                "warmup": self.config.recipe.warmup, "adam_betas": list(self.config.recipe.adam_betas),
                "adam_eps": self.config.recipe.adam_eps, "label_smoothing": self.config.recipe.label_smoothing,
                "dropout": self.config.dropout,
            },
            "step": list(range(1, len(self.losses) + 1)),
            "loss": [_round(v) for v in self.losses],
            "lr": [_round(v) for v in self.rates],
            "lr_expected": [_round(lrate(s, self.config.d_model, self.config.recipe.warmup))
                            for s in range(1, len(self.rates) + 1)],
            "exact_match": [{"step": s, "value": em} for s, em in self.evals],
            "published": {
                "note": "train_reversal.py's log; its lr is the rate of the NEXT step (printed after sched.step())",
                "points": list(PUBLISHED_LOG),
                "smoothed_loss_floor": round(smoothed_loss_floor(self.config.tgt_vocab,
                                                                 self.config.recipe.label_smoothing), 4),
            },
            "ours_at_published_steps": ours_at,
        }


def _round(value: float) -> float:
    return float(f"{value:.6g}")


# --------------------------------------------------------------------------------------------------
# Progress on the terminal
# --------------------------------------------------------------------------------------------------

PROGRESS_ENV = "CONFORMANCE_PROGRESS"


class Progress:
    """One line, rewritten with \\r, on the real stderr (pytest's capture does not hide it).

    Shown when stderr is a terminal, or when CONFORMANCE_PROGRESS=1; CONFORMANCE_PROGRESS=0 hides it.
    Updated at most every ``interval_s`` so that it costs nothing per step. While ``Progress.sink`` is
    set (the CLI's display, conformance/run/progress.py), every update goes there instead, and it draws.
    """

    sink: ClassVar[Callable[[dict], None] | None] = None

    def __init__(self, label: str, deadline: int, *, stream=None, enabled: bool | None = None, interval_s=0.25):
        self.stream = stream or sys.__stderr__
        if enabled is None:
            wanted = os.environ.get(PROGRESS_ENV, "").strip().lower()
            if wanted in ("0", "false", "no", "off"):
                enabled = False
            else:
                enabled = wanted in ("1", "true", "yes", "on") or bool(
                    self.stream is not None and hasattr(self.stream, "isatty") and self.stream.isatty()
                )
        self.enabled, self.label, self.deadline, self.interval_s = enabled, label, deadline, interval_s
        self.started = time.perf_counter()
        self.last_shown = -math.inf
        self.width = 0

    def update(self, step: int, loss: float, exact: tuple[int, float] | None, *, force: bool = False) -> None:
        if Progress.sink is not None:
            Progress.sink({"label": self.label, "step": step, "deadline": self.deadline, "loss": loss, "exact": exact})
            return
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.last_shown < self.interval_s:
            return
        self.last_shown = now
        elapsed = now - self.started
        left = elapsed / max(step, 1) * (self.deadline - step)
        em = f"  exact match {exact[1]:6.1%} (step {exact[0]})" if exact else "  exact match  --"
        line = (f"[{self.label}] step {step:>5}/{self.deadline}  loss {loss:6.3f}{em}"
                f"  {elapsed:5.1f} s, at most {left:4.0f} s left")
        self._write("\r" + line.ljust(self.width))
        self.width = len(line)

    def finish(self, text: str) -> None:
        if Progress.sink is not None:
            Progress.sink({"label": self.label, "done": text})
        elif self.enabled:
            self._write("\r" + f"[{self.label}] {text}".ljust(self.width) + "\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or detached stream: progress is optional
            self.enabled = False


# --------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------


def data_streams(seed: int, plan: Plan) -> tuple[np.random.Generator, np.random.Generator]:
    """(training batches, held-out set): two independent streams of one seed."""
    return np.random.default_rng([seed, 0]), np.random.default_rng([seed, plan.test_seed_offset])


def held_out_set(config: ModelConfig, seed: int, plan: Plan = DEFAULT_PLAN) -> Batch:
    _, test_rng = data_streams(seed, plan)
    return reversal_batch(test_rng, plan.test_size, config, min_len=plan.min_len, max_len=plan.max_len)


def evaluate(model: CandidateModel, test: Batch, config: ModelConfig) -> float:
    """Exact match of greedy decoding, the whole held-out set as one batch."""
    predicted = model.greedy_decode(test.src, test.src.shape[1] + 1)
    return float(exact_match(predicted, test, config.eos_id, config.pad_id).mean())


def train(
    candidate,
    seed: int,
    plan: Plan = DEFAULT_PLAN,
    *,
    config: ModelConfig | None = None,
    progress: Progress | None = None,
) -> TrainingRun:
    """Train a fresh model of ``candidate`` on the reversal task until the verdict is certain."""
    config = config or candidate.fit(toy_config())  # in the configurations the candidate declares
    run = TrainingRun(candidate=candidate.name, seed=seed, plan=plan, config=config)
    progress = progress or Progress(f"training {candidate.name} seed {seed}", plan.deadline)
    started = time.perf_counter()
    train_rng, _ = data_streams(seed, plan)
    test = held_out_set(config, seed, plan)
    eval_steps = set(plan.eval_steps())
    d_model, warmup = config.d_model, config.recipe.warmup
    try:
        run.model = model = candidate.build_model(config, seed=seed)
        run.initialisation = start_from_reference_init(model, config, seed)
        own_init = "" if run.initialisation == REFERENCE_INIT else f"; {run.initialisation}"
        for step in range(1, plan.deadline + 1):
            t0 = time.perf_counter()
            batch = reversal_batch(train_rng, plan.batch_size, config, min_len=plan.min_len, max_len=plan.max_len)
            try:
                result = model.train_step(*batch.arrays())
            except BadOutput as exc:
                if not str(exc.fields.get("part", "")).startswith("model.train_step['loss']"):
                    raise
                run.losses.append(math.nan)
                run.stopped_at = step
                return _finish(run, "failed", f"training diverged: the loss of step {step} is not finite"
                               f" ({exc.message}); {SEE_CHEAP_CHECKS}", None, started, progress)
            run.train_s += time.perf_counter() - t0
            run.losses.append(result["loss"])
            run.rates.append(result["lr"])
            run.stopped_at = step
            want = lrate(step, d_model, warmup)
            if run.rate_mismatch is None and not abs(result["lr"] - want) <= plan.rate_rtol * want:
                # the verdict is failed from here; the run goes on to say whether its own schedule learns
                run.rate_mismatch = {"step": step, "got": result["lr"], "expected": want}
            if step in eval_steps:
                window = run.losses[-plan.divergence_window:]
                mean = float(np.mean(window))
                if mean > plan.diverged_loss:
                    return _finish(
                        run, "failed",
                        f"diverged: the mean loss of steps {step - len(window) + 1}-{step} is {mean:.3f}, no better"
                        f" than guessing uniformly (ln {config.tgt_vocab} = {math.log(config.tgt_vocab):.3f})"
                        f"{own_init}; {SEE_CHEAP_CHECKS}", None, started, progress,
                    )
                t1 = time.perf_counter()
                em = evaluate(model, test, config)
                run.eval_s += time.perf_counter() - t1
                run.evals.append((step, em))
                if plan.pass_exact_match is not None and em >= plan.pass_exact_match:
                    return _finish(run, "passed", f"exact match {em:.1%} at step {step} (>="
                                   f" {plan.pass_exact_match:.0%} by step {plan.deadline})", None, started, progress)
            progress.update(step, result["loss"], run.evals[-1] if run.evals else None)
    except ConformanceOutcome as exc:
        run.error = exc
        return _finish(run, "error", exc.message, None, started, progress)
    best = run.best_exact_match
    if plan.pass_exact_match is None:
        return _finish(run, "measured", f"ran {plan.deadline} steps; best exact match {best:.1%}", None, started,
                       progress)
    return _finish(
        run, "failed",
        f"exact match reached only {best:.1%} by step {plan.deadline} (needs {plan.pass_exact_match:.0%};"
        f" the lesson's run: 88.8% at step 500, 98.2% at step 1,000){own_init}; {SEE_CHEAP_CHECKS}", None,
        started, progress,
    )


def _off_schedule(run: TrainingRun, status: str, reason: str) -> str:
    """A run whose rate is not lrate(step) fails; what its own schedule did is said beside (``reason``: the run's
    verdict as if the rate were right)."""
    m, config = run.rate_mismatch, run.config
    m["learns"] = status == "passed"
    own = f"it learns ({reason})" if status == "passed" else f"it does not learn the task ({reason})"
    return (f"step {m['step']} used the rate {m['got']:.6g}, but lrate({m['step']}, d_model={config.d_model},"
            f" warmup={config.recipe.warmup}) = {m['expected']:.6g}: the run does not follow §5.3's schedule"
            f" (rate_used_at_each_step_is_lrate diagnoses the schedule); with its own schedule, {own}")


REFERENCE_INIT = ("the reference's (embeddings N(0, d_model^-0.5), other matrices Xavier-uniform, biases and beta 0,"
                  " gamma 1), loaded through model.load_weights")
OWN_INIT = ("trained from the implementation's own initialisation, which the paper does not specify (a faithful"
            " model whose embeddings start N(0, 1) learns this task far slower)")


def start_from_reference_init(model: CandidateModel, config: ModelConfig, seed: int) -> str:
    """Load the reference's initial weights for ``seed`` when the candidate can, and say which start was used.

    The paper specifies no initialisation, so the run certifies the recipe and the model, not an init: the same
    start for every candidate (the reference's own, bit for bit), the candidate's own only when it cannot load one.
    """
    from conformance.problems import oracle

    try:
        model.load_weights(oracle.initial_weights(config, seed))
    except PartNotImplemented:
        return f"{OWN_INIT}: model.load_weights is not provided"
    except (ConformanceOutcome, oracle.OracleUnavailable) as exc:
        return f"{OWN_INIT}: loading the reference's failed ({exc})"
    return REFERENCE_INIT


SEE_CHEAP_CHECKS = ("the cheap training checks (rate_used_at_each_step_is_lrate, reported_loss_is_label_smoothed_"
                    "cross_entropy, adam_steps_match_reference, evaluation_mode_has_no_dropout) compare single"
                    " updates with the reference's and name a known cause where one fits")


def _finish(run: TrainingRun, status: str, reason: str, cause: str | None, started: float, progress: Progress):
    if run.rate_mismatch is not None and status in ("passed", "failed"):
        status, reason = "failed", _off_schedule(run, status, reason)
    run.status, run.reason, run.likely_cause = status, reason, cause
    run.wall_s = time.perf_counter() - started
    progress.finish(f"{status}: {reason} ({run.wall_s:.1f} s)")
    return run


# --------------------------------------------------------------------------------------------------
# What a trained model does on the lesson's example
# --------------------------------------------------------------------------------------------------


@dataclass
class ExampleReading:
    """The trained model on one source: its greedy output, the probabilities along that path and the
    last decoder layer's cross-attention (mean of the heads), as the lesson shows them for "c a b e d"."""

    src: np.ndarray  # (1, S)
    expected: np.ndarray  # (S + 1,): reversed + </s>
    output: np.ndarray  # (L,): greedy ids after <s>, cut after the first </s>
    probabilities: np.ndarray  # (L, V): softmax of forward(src, <s> + output[:-1])
    cross_attention: np.ndarray | None = None  # (L, S), mean of the heads of decoder.{N-1}.cross_attn
    layer: str = ""

    @property
    def correct(self) -> bool:
        return self.output.shape == self.expected.shape and bool((self.output == self.expected).all())

    def top(self) -> np.ndarray:
        return self.probabilities.max(-1)

    def table(self, names: list[str]) -> list[dict]:
        """The lesson's table: decoder input so far, chosen token, top 3 with probabilities."""
        rows, prefix = [], ["<s>"]
        for t, p in enumerate(self.probabilities):
            best = np.argsort(-p, kind="stable")[:3]
            rows.append({
                "input": " ".join(prefix), "chosen": names[int(self.output[t])],
                "top3": [[names[int(k)], round(float(p[k]), 4)] for k in best],
            })
            prefix.append(names[int(self.output[t])])
        return rows


def read_example(model: CandidateModel, config: ModelConfig, text: str = PUBLISHED_EXAMPLE, *,
                 attention: bool = True) -> ExampleReading:
    src = encode_letters(text, config)
    expected = np.concatenate([src[0, ::-1], [config.eos_id]])
    raw = model.greedy_decode(src, src.shape[1] + 1)[0]
    ends = np.flatnonzero(raw == config.eos_id)
    output = raw[: ends[0] + 1] if ends.size else raw
    if output.size == 0:
        return ExampleReading(src, expected, output, np.zeros((0, config.tgt_vocab)))
    tgt_in = np.concatenate([[config.bos_id], output[:-1]])[None, :]
    logits = model.forward(src, tgt_in)[0].astype(np.float64)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    reading = ExampleReading(src, expected, output, e / e.sum(-1, keepdims=True))
    if attention:
        reading.layer = f"decoder.{config.N - 1}.cross_attn"
        weights = model.attention_weights(src, tgt_in)
        if reading.layer in weights:
            reading.cross_attention = np.asarray(weights[reading.layer], np.float64)[0].mean(0)
    return reading


def mirrored_rows(reading: ExampleReading) -> tuple[np.ndarray, np.ndarray]:
    """(argmax of each letter-writing row, the mirrored source position it should be). The row that
    writes </s> (the last) has no letter to copy and is left out."""
    S = reading.src.shape[1]
    rows = min(S, reading.cross_attention.shape[0])
    return reading.cross_attention[:rows].argmax(-1), S - 1 - np.arange(rows)


# --------------------------------------------------------------------------------------------------
# One run per candidate and seed per process
# --------------------------------------------------------------------------------------------------

_RUNS: dict[tuple, tuple[Any, TrainingRun]] = {}


def cached_run(candidate, seed: int, plan: Plan = DEFAULT_PLAN) -> TrainingRun:
    """The training run of ``candidate`` for ``seed``, trained at the first call.

    Keyed by the candidate's name and adapter object (a file loaded twice is a new adapter), the seed
    and the plan; the adapter is kept alive with the run so that its id is never reused.
    """
    key = (candidate.name, id(candidate.adapter), seed, plan)
    if key not in _RUNS:
        _RUNS[key] = (candidate.adapter, train(candidate, seed, plan))
    return _RUNS[key][1]


def forget_runs() -> None:
    _RUNS.clear()
