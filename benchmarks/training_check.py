"""How long the training check takes, against the lesson's plain 3,000-step PyTorch loop.

    python benchmarks/training_check.py                  # the benchmark; its last line is the ratio
    python benchmarks/training_check.py --seeds 0-9      # the reference over seeds, no early stop
    python benchmarks/training_check.py --seeds 20-39 --verdicts --jobs 2   # the check's verdicts

Benchmark, in one process with torch.set_num_threads(2) (``--threads``): (1) the training check exactly as the suite
runs it on the reference (``conformance.judging.training.train``: data, train_step through the candidate
boundary, the rate check, greedy evaluation of 500 held-out sequences every 100 steps from step 300,
the early verdict); (2) the lesson's train_reversal.py as a plain loop, 3,000 steps, on the same model
class and the same batches, evaluating exact match at steps 1, 500, 1,000, 2,000 and 3,000 as its log
does. Then the per-step cost of the harness: the same updates through the candidate boundary and in
the plain loop, interleaved in rounds so that a busy machine slows both alike.

``--seeds``: the measurement behind the thresholds (docs/training-check.md): each seed trained for
``--deadline`` steps without stopping, exact match every 100 steps, and the learned-behaviour
readings at each evaluation. ``--jobs`` runs seeds in parallel processes, one thread each (a run's
trajectory depends on the thread count through float summation order: another sample of the same
distribution, which is what the thresholds are set on).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import torch

from conformance.boundary.loading import load
from conformance.config import toy_config
from conformance.judging import training


def seeds_arg(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


# --------------------------------------------------------------------------------------------------
# The plain loop: the lesson's train_reversal.py on the reference model class
# --------------------------------------------------------------------------------------------------


def plain_loop(seed: int, steps: int, plan: training.Plan, *, log_steps=(1, 500, 1000, 2000, 3000)) -> dict:
    from torch import nn

    from conformance.implementations.reference.model import Transformer, greedy_decode

    config = toy_config()
    recipe = config.recipe
    torch.manual_seed(seed)
    model = Transformer(config, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=recipe.adam_betas, eps=recipe.adam_eps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: training.lrate(s + 1, config.d_model, recipe.warmup))
    loss_fn = nn.CrossEntropyLoss(ignore_index=config.pad_id, label_smoothing=recipe.label_smoothing)
    train_rng, _ = training.data_streams(seed, plan)
    test = training.held_out_set(config, seed, plan)
    test_src = torch.as_tensor(test.src)
    log, train_s, started = [], 0.0, time.perf_counter()
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        batch = training.reversal_batch(train_rng, plan.batch_size, config)
        src, tgt_in, tgt_out = (torch.as_tensor(a) for a in batch.arrays())
        model.train()
        loss = loss_fn(model(src, tgt_in).reshape(-1, config.tgt_vocab), tgt_out.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        train_s += time.perf_counter() - t0
        if step in log_steps:
            model.eval()
            with torch.no_grad():
                predicted = greedy_decode(model, test_src, test.src.shape[1] + 1).numpy()
            em = float(training.exact_match(predicted, test, config.eos_id, config.pad_id).mean())
            log.append({"step": step, "lr": opt.param_groups[0]["lr"], "loss": loss.item(), "exact_match": em})
            print(f"  step {step:>5}  lr {log[-1]['lr']:.2e}  train loss {log[-1]['loss']:.3f}"
                  f"  exact match {em:.1%}", flush=True)
    return {"wall_s": time.perf_counter() - started, "train_s": train_s, "steps": steps, "log": log}


def harness_overhead(seed: int, rounds: int = 5, steps: int = 60) -> dict:
    """Per-step time of the same updates through the candidate boundary vs a plain loop, interleaved."""
    from torch import nn

    from conformance.implementations.reference.model import Transformer

    config = toy_config()
    recipe = config.recipe
    candidate = load("reference")
    via_suite = candidate.build_model(config, seed=seed)
    module = Transformer(config, seed=seed)
    opt = torch.optim.Adam(module.parameters(), lr=1.0, betas=recipe.adam_betas, eps=recipe.adam_eps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: training.lrate(s + 1, config.d_model, recipe.warmup))
    loss_fn = nn.CrossEntropyLoss(ignore_index=config.pad_id, label_smoothing=recipe.label_smoothing)
    from conformance.implementations.reference.training import Trainer

    trainer = Trainer(Transformer(config, seed=seed), seed=seed)  # the same code, torch tensors, no boundary
    rng = np.random.default_rng(seed)
    batches = [training.reversal_batch(rng, 64, config) for _ in range(steps)]
    suite_times, direct_times, plain_times = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for b in batches:
            via_suite.train_step(*b.arrays())
        suite_times.append((time.perf_counter() - t0) / steps)
        t0 = time.perf_counter()
        for b in batches:
            trainer.train_step(*(torch.as_tensor(a) for a in b.arrays()))
        direct_times.append((time.perf_counter() - t0) / steps)
        t0 = time.perf_counter()
        for b in batches:
            src, tgt_in, tgt_out = (torch.as_tensor(a) for a in b.arrays())
            module.train()
            loss = loss_fn(module(src, tgt_in).reshape(-1, config.tgt_vocab), tgt_out.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss.item()
        plain_times.append((time.perf_counter() - t0) / steps)
    suite, direct, plain = (statistics.median(t) for t in (suite_times, direct_times, plain_times))
    return {"suite_step_s": suite, "direct_step_s": direct, "plain_step_s": plain,
            "boundary_overhead": suite / direct - 1, "overhead": suite / plain - 1}


def warm_up() -> None:
    """Pay the one-time costs (torch.optim's first step imports torch._dynamo) outside the timings."""
    candidate = load("reference")
    model = candidate.build_model(toy_config(), seed=0)
    model.train_step(*training.reversal_batch(np.random.default_rng(0), 8, toy_config()).arrays())
    model.greedy_decode(training.reversal_batch(np.random.default_rng(0), 8, toy_config()).src, 9)


def benchmark(seed: int, threads: int = 2) -> None:
    torch.set_num_threads(threads)
    warm_up()
    plan = training.DEFAULT_PLAN
    print(f"training check on the reference, seed {seed} (torch {torch.__version__}, {torch.get_num_threads()}"
          " threads)", flush=True)
    run = training.train(load("reference"), seed, plan, progress=training.Progress("check", plan.deadline))
    per_step = run.train_s / max(run.stopped_at, 1)
    print(f"  {run.status}: {run.reason}; {run.stopped_at} steps, {run.wall_s:.1f} s"
          f" ({per_step * 1e3:.1f} ms per step, evaluations {run.eval_s:.1f} s)")
    print(f"plain loop, the lesson's {training.PUBLISHED_STEPS:,} steps:", flush=True)
    plain = plain_loop(seed, training.PUBLISHED_STEPS, plan)
    plain_step = plain["train_s"] / plain["steps"]
    print(f"  {plain['wall_s']:.1f} s ({plain_step * 1e3:.1f} ms per step)")
    overhead = harness_overhead(seed)
    print(f"per step, interleaved rounds: through the suite {overhead['suite_step_s'] * 1e3:.2f} ms; the reference"
          f" Trainer called directly {overhead['direct_step_s'] * 1e3:.2f} ms (boundary"
          f" {overhead['boundary_overhead']:+.1%}); the plain loop {overhead['plain_step_s'] * 1e3:.2f} ms"
          f" (harness and reference together {overhead['overhead']:+.1%})")
    # The two runs above follow each other, so a machine whose load changes meanwhile skews their ratio;
    # the same ratio from the interleaved per-step times (plus each run's own evaluation time) does not.
    steady = (run.stopped_at * overhead["suite_step_s"] + run.eval_s) / (
        training.PUBLISHED_STEPS * overhead["plain_step_s"] + plain["wall_s"] - plain["train_s"])
    print(f"check {run.wall_s:.1f} s ({run.stopped_at} steps, {run.status}); plain {training.PUBLISHED_STEPS}-step loop"
          f" {plain['wall_s']:.1f} s; ratio {run.wall_s / plain['wall_s']:.3f} (at equal per-step speed {steady:.3f})")


# --------------------------------------------------------------------------------------------------
# The measurement over seeds
# --------------------------------------------------------------------------------------------------


def measure_seed(impl: str, seed: int, deadline: int, threads: int) -> dict:
    torch.set_num_threads(threads)
    candidate, config = load(impl), toy_config()
    plan = training.Plan(pass_exact_match=None, deadline=deadline)
    train_rng, _ = training.data_streams(seed, plan)
    test = training.held_out_set(config, seed, plan)
    model = candidate.build_model(config, seed=seed)
    losses, evals, started = [], [], time.perf_counter()
    for step in range(1, deadline + 1):
        result = model.train_step(*training.reversal_batch(train_rng, plan.batch_size, config).arrays())
        losses.append(result["loss"])
        if step % 100 == 0:
            reading = training.read_example(model, config)
            point = {"step": step, "exact_match": training.evaluate(model, test, config), "cabed": reading.correct,
                     "min_loss": min(losses), "top_min": None, "top_max": None, "mirrored": None}
            if reading.output.size:
                point["top_min"], point["top_max"] = float(reading.top().min()), float(reading.top().max())
            if reading.correct and reading.cross_attention is not None:
                got, want = training.mirrored_rows(reading)
                point["mirrored"] = bool((got == want).all())
            evals.append(point)
    return {"impl": impl, "seed": seed, "evals": evals, "wall_s": time.perf_counter() - started}


def verdict_seed(impl: str, seed: int, threads: int) -> dict:
    """The convergence check as the suite runs it, then the learned-behaviour criteria on its model."""
    torch.set_num_threads(threads)
    plan, config = training.DEFAULT_PLAN, toy_config()
    run = training.train(load(impl), seed, plan, progress=training.Progress("", plan.deadline, enabled=False))
    result = {"seed": seed, "status": run.status, "step": run.stopped_at, "exact_match": run.best_exact_match,
              "min_loss": min(run.losses) if run.losses else None}
    if run.status == "passed":
        reading = training.read_example(run.model, config)
        got, want = training.mirrored_rows(reading) if reading.correct else (None, None)
        top = reading.top()
        low, high = plan.top_probability_range
        floor = training.smoothed_loss_floor(config.tgt_vocab, config.recipe.label_smoothing)
        result |= {"cabed": reading.correct, "mirrored": None if got is None else bool((got == want).all()),
                   "top_min": float(top.min()), "top_max": float(top.max()),
                   "learned_ok": bool(reading.correct and (got == want).all() and low <= top.min()
                                      and top.max() <= high and floor - 1e-4 <= result["min_loss"]
                                      <= floor + plan.loss_near_floor)}
    return result


def verdicts(impl: str, seeds: list[int], jobs: int) -> None:
    threads = 2 if jobs == 1 else 1
    with ProcessPoolExecutor(jobs) as pool:
        results = list(pool.map(verdict_seed, [impl] * len(seeds), seeds, [threads] * len(seeds)))
    for r in results:
        if r["status"] != "passed":
            print(f"seed {r['seed']:>3}: {r['status']} at step {r['step']} (best {r['exact_match']:.1%})")
            continue
        print(f"seed {r['seed']:>3}: passed at step {r['step']} ({r['exact_match']:.1%}); cabed {r['cabed']},"
              f" anti-diagonal {r['mirrored']}, top {r['top_min']:.3f}-{r['top_max']:.3f},"
              f" lowest loss {r['min_loss']:.4f}; learned behaviour {'ok' if r['learned_ok'] else 'FAILS'}")
    passed = [r for r in results if r["status"] == "passed"]
    print(f"{len(passed)}/{len(results)} seeds pass; learned behaviour ok on"
          f" {sum(r['learned_ok'] for r in passed)}/{len(passed)}")


def measure(impl: str, seeds: list[int], deadline: int, jobs: int, out: str | None) -> None:
    threads = 2 if jobs == 1 else 1
    with ProcessPoolExecutor(jobs) as pool:
        runs = list(pool.map(measure_seed, [impl] * len(seeds), seeds, [deadline] * len(seeds),
                             [threads] * len(seeds)))
    plan = training.DEFAULT_PLAN
    steps = [p["step"] for p in runs[0]["evals"]]
    print(f"{impl}: exact match on {plan.test_size} held-out sequences, by step")
    print("seed " + "".join(f"{s:>7}" for s in steps))
    for run in runs:
        print(f"{run['seed']:>4} " + "".join(f"{p['exact_match']:>7.1%}" for p in run["evals"]))
    print(f"\nwith the plan (pass at >= {plan.pass_exact_match:.0%} at an evaluation {plan.eval_steps()[0]}.."
          f"{plan.deadline}):")
    for run in runs:
        crossed = next((p for p in run["evals"] if p["step"] in plan.eval_steps()
                        and p["exact_match"] >= plan.pass_exact_match), None)
        if crossed is None:
            print(f"  seed {run['seed']}: does not pass by step {plan.deadline}")
            continue
        print(f"  seed {run['seed']}: passes at step {crossed['step']} ({crossed['exact_match']:.1%});"
              f" cabed {'right' if crossed['cabed'] else 'WRONG'}, anti-diagonal {crossed['mirrored']},"
              f" top probabilities {crossed['top_min']:.3f}-{crossed['top_max']:.3f},"
              f" lowest loss {crossed['min_loss']:.4f}")
    if out:
        with open(out, "w") as f:
            json.dump(runs, f, indent=1)
        print(f"\nwritten to {out}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=seeds_arg, help="measure these seeds instead (0-9 or 0,3,5)")
    parser.add_argument("--impl", default="reference")
    parser.add_argument("--deadline", type=int, default=1500)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="torch threads for the benchmark (default 2)")
    parser.add_argument("--json", help="with --seeds: write every reading to this file")
    parser.add_argument("--verdicts", action="store_true",
                        help="with --seeds: run the check as the suite does (early verdict) and the learned criteria")
    args = parser.parse_args(argv)
    if args.seeds and args.verdicts:
        verdicts(args.impl, args.seeds, args.jobs)
    elif args.seeds:
        measure(args.impl, args.seeds, args.deadline, args.jobs, args.json)
    else:
        benchmark(args.seed, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
