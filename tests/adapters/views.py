"""Restricted views of the built-in correct implementations, as adapters of real code look.

``ModelOnly(inner)`` exposes only ``build_model`` and the model it returns (most adapters of real code);
``PaperOnly(inner)`` declares, and enforces by raising ``NotImplementedError``, that it builds only the
paper's configuration (biases on, eps 1e-5, d_ff = 4 d_model, one shared and tied table); ``Undeclared``
has the same limits but declares none: it only raises, as research code does. A faithful implementation
must pass every check it can run through each view, and no check may end *not implemented* because one
drawn configuration was out of reach.
"""

import dataclasses

import numpy as np

from conformance.loading import import_target

PAPER = {"attention_bias": (True,), "eps": (1e-5,), "d_ff_ratio": (4,), "share_embeddings": (True,),
         "tie_output": (True,)}
REASONS = {"attention_bias": "projections always carry biases", "eps": "eps is fixed at 1e-5 inside the layers",
           "d_ff_ratio": "d_ff is 4 x d_model", "share_embeddings": "one vocabulary", "tie_output": "always tied"}


def builtin(name: str):
    return import_target(name)


class ModelOnly:
    def __init__(self, inner):
        self.inner, self.conventions = inner, inner.conventions
        if hasattr(inner, "model_class"):
            self.model_class = inner.model_class

    def build_model(self, config, seed):
        return self.inner.build_model(config, seed)


class Declaring(ModelOnly):
    """``ModelOnly(inner)`` declaring ``supports``: a faithful implementation that builds part of the
    configurations only, so the checks fit their problems into it (``Candidate.fit``) and change sizes."""

    def __init__(self, inner, supports: dict, reasons: dict):
        super().__init__(inner)
        self.conventions = dataclasses.replace(inner.conventions, supports=supports, reasons=reasons)


def refusal(config=None, *, weights=None, eps=None) -> str | None:
    """Why the paper-only implementation cannot do this, or None."""
    if config is not None:
        if not config["attention_bias"]:
            return REASONS["attention_bias"]
        if config["eps"] != 1e-5:
            return REASONS["eps"]
        if config["d_ff"] != 4 * config["d_model"]:
            return REASONS["d_ff_ratio"]
        if not (config["share_embeddings"] and config["tie_output"]):
            return REASONS["share_embeddings"]
    if weights is not None:
        names = set(weights)
        if any(n.endswith("W_Q") for n in names) and not any(n.endswith("b_Q") for n in names):
            return REASONS["attention_bias"]
        W1 = next((w for n, w in weights.items() if n.endswith("W1")), None)
        if W1 is not None and np.shape(W1)[1] != 4 * np.shape(W1)[0]:
            return REASONS["d_ff_ratio"]
    if eps is not None and eps != 1e-5:
        return REASONS["eps"]
    return None


class Limited:
    """Delegates every part to ``inner`` after checking the configuration it is asked for."""

    def __init__(self, inner, *, declare: bool):
        self.inner = inner
        self.conventions = (dataclasses.replace(inner.conventions, supports=PAPER, reasons=REASONS)
                            if declare else inner.conventions)
        if hasattr(inner, "model_class"):
            self.model_class = inner.model_class

    def __dir__(self):
        return sorted(set(super().__dir__()) | {name for name in dir(self.inner) if not name.startswith("_")})

    def __getattr__(self, part):
        method = getattr(self.inner, part)

        def limited(*args, **kwargs):
            why = refusal(**self._asked(part, args))
            if why:
                raise NotImplementedError(why)
            return method(*args, **kwargs)

        return limited

    @staticmethod
    def _asked(part, args) -> dict:
        if part in ("build_model", "parameter_count"):
            return {"config": args[0]}
        if part == "layer_norm":
            return {"eps": args[3]}
        if part in ("multi_head_attention", "feed_forward"):
            return {"weights": args[3] if part == "multi_head_attention" else args[1]}
        if part == "encoder_layer":
            return {"weights": args[1], "eps": args[3]}
        if part == "decoder_layer":
            return {"weights": args[2], "eps": args[4]}
        return {}


class BiasFree(Limited):
    """Refuses attention biases, and only them, without declaring it (raises NotImplementedError), as an
    implementation of the paper's formulas (which have none) does."""

    def __init__(self, inner):
        super().__init__(inner, declare=False)

    def __getattr__(self, part):
        method = getattr(self.inner, part)

        def bias_free(*args, **kwargs):
            asked = self._asked(part, args)
            config, weights = asked.get("config"), asked.get("weights") or {}
            if (config and config["attention_bias"]) or any(name.endswith("b_Q") for name in weights):
                raise NotImplementedError("the projections have no biases, as in the paper's formulas")
            return method(*args, **kwargs)

        return bias_free


model_only_reference = ModelOnly(builtin("reference"))
model_only_numpy = ModelOnly(builtin("numpy"))
model_only_fused_qkv = ModelOnly(builtin("torch-fused-qkv"))
model_only_torch_nn_fixed = ModelOnly(builtin("torch-nn-transformer-fixed"))
model_only_gelu_instead_of_relu = ModelOnly(builtin("mutant:gelu_instead_of_relu"))  # a failing one
paper_only_reference = Limited(builtin("reference"), declare=True)
paper_only_numpy = Limited(builtin("numpy"), declare=True)
paper_only_fused_qkv = Limited(builtin("torch-fused-qkv"), declare=True)
paper_only_torch_nn_fixed = Limited(builtin("torch-nn-transformer-fixed"), declare=True)
undeclared_reference = Limited(builtin("reference"), declare=False)
# d_ff = 2 d_model only: every drawn config's d_ff changes (the toy's 256 becomes 128)
half_ffn_reference = Declaring(builtin("reference"), {"d_ff_ratio": (2,)}, {"d_ff_ratio": "d_ff is 2 x d_model"})
bias_free_extra_final_norm = BiasFree(builtin("mutant:extra_final_layer_norm"))
