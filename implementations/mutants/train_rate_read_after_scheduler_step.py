"""train_step reports the rate read after scheduler.step(): the next step's rate, not the one it used.

Violates §5.3 as the suite's contract asks it (docs/adapter-protocol.md: ``train_step`` returns the rate
this update used, lrate(step), steps from 1). The lesson's own log shows the trap: "A log printed after
sched.step() shows 1.58e-03, the rate of the next step." The updates are right; the reported rates are
lrate(step + 1).
"""

from __future__ import annotations

from conformance.implementations.mutants._build import ModelSwap
from conformance.implementations.reference.adapter import ReferenceModel


class LateRateModel(ReferenceModel):
    def train_step(self, src, tgt_in, tgt_out):
        result = super().train_step(src, tgt_in, tgt_out)
        return {**result, "lr": float(self._trainer.optimizer.param_groups[0]["lr"])}  # the bug: after step()


class LateRate(ModelSwap):
    model_class = LateRateModel


adapter = LateRate(name="mutant:train_rate_read_after_scheduler_step")
