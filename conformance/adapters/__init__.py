"""Helpers for writing an adapter around real code. ``conformance.adapters.convert``: what to do when the
implementation's loss or schedule is written differently from the protocol's (docs/adapter-protocol.md,
"A contract for real code")."""

from conformance.adapters.convert import (
    cross_entropy_from_kl,
    mean_from_sum,
    rate_from_lambda_lr,
    smoothed_target_entropy,
)

__all__ = ["cross_entropy_from_kl", "mean_from_sum", "rate_from_lambda_lr", "smoothed_target_entropy"]
