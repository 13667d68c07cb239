"""Restricted views of the built-in correct implementations, as adapters of real code look.

``ModelOnly(inner)`` exposes only ``build_model`` and the model it returns (most adapters of real code);
``PaperOnly(inner)`` declares, and enforces by raising ``NotImplementedError``, that it builds only the
paper's configuration (biases on, eps 1e-5, d_ff = 4 d_model, one shared and tied table); ``Undeclared``
has the same limits but declares none: it only raises, as research code does. A faithful implementation
must pass every check it can run through each view, and no check may end *not implemented* because one
drawn configuration was out of reach.
"""

import dataclasses
import os

import numpy as np

from conformance.boundary.loading import import_target

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


# --------------------------------------------------------------------------------------------------
# Declared, and held to it: every call outside the declaration is an error
# --------------------------------------------------------------------------------------------------


OUTSIDE_LOG = "CONFORMANCE_TEST_OUTSIDE_LOG"  # a file every call outside a declaration is also written to


class OutsideTheDeclaration(RuntimeError):
    """A call the adapter declared it cannot take: real code built for the declared configurations only would
    crash there, or compute something else. Raised as an error (never ``NotImplementedError``), so a check that
    calls outside the declaration ends *error*, and no example is quietly skipped; and written to the file
    ``$CONFORMANCE_TEST_OUTSIDE_LOG`` names, where a diagnosis (which never lets an error through) leaves it."""

    def __init__(self, message: str):
        super().__init__(message)
        if os.environ.get(OUTSIDE_LOG):
            with open(os.environ[OUTSIDE_LOG], "a") as log:
                log.write(message + "\n")


class Held:
    """What a declaration allows, judged here on its own terms (not through ``conformance.problems.supports``)."""

    def __init__(self, supports: dict):
        self.supports = supports

    def one_of(self, feature: str, value) -> None:
        values = self.supports.get(feature)
        if values is not None and not any(abs(float(value) - float(v)) <= 1e-12 * max(1.0, abs(float(v)))
                                          for v in values):
            raise OutsideTheDeclaration(f"{feature}={value!r} asked; declared {tuple(values)} only")

    def length(self, what: str, n: int) -> None:
        limit = self.supports.get("max_len")
        if limit is not None and n > limit:
            raise OutsideTheDeclaration(f"{what} of {n} positions asked; declared max_len {limit}")

    def config(self, config: dict) -> None:
        self.one_of("attention_bias", config["attention_bias"])
        self.one_of("eps", config["eps"])
        self.one_of("d_ff_ratio", config["d_ff"] / config["d_model"])
        self.one_of("share_embeddings", config["share_embeddings"])
        self.one_of("tie_output", config["tie_output"])
        self.one_of("label_smoothing", config["recipe"]["label_smoothing"])

    def weights(self, weights: dict) -> None:
        if any(name.endswith("W_Q") for name in weights):
            self.one_of("attention_bias", any(name.endswith("b_Q") for name in weights))
        W1 = next((w for name, w in weights.items() if name.endswith("W1")), None)
        if W1 is not None:
            self.one_of("d_ff_ratio", np.shape(W1)[1] / np.shape(W1)[0])


# Each part's arguments held: (index of the weights, index of the layers' eps); the rest by name below.
HELD_ARGUMENTS = {"multi_head_attention": (3, None), "feed_forward": (1, None), "encoder_layer": (1, 3),
                  "decoder_layer": (2, 4)}


class Declared:
    """A built-in implementation declaring ``supports`` and holding every call to it (``Held``): a correct
    implementation that can build the declared configurations only. ``model_only``: ``build_model`` and its model
    only, as most adapters of real code. The layer_norm function takes any eps: the eps declaration is the layers'
    and the model's."""

    def __init__(self, inner, supports: dict, reasons: dict, *, model_only: bool = False):
        from conformance.adapter import ADAPTER_PARTS

        self.inner, self.held = inner, Held(supports)
        self.conventions = dataclasses.replace(inner.conventions, supports=supports, reasons=reasons)
        self.parts = {"build_model"} if model_only else {p for p in ADAPTER_PARTS if callable(getattr(inner, p, None))}
        if hasattr(inner, "model_class"):
            self.model_class = inner.model_class

    def __dir__(self):
        return sorted(set(super().__dir__()) | self.parts)

    def __getattr__(self, part):
        if part.startswith("_") or part not in self.parts:
            raise AttributeError(part)
        method = getattr(self.inner, part)

        def held(*args):
            self.hold(part, args)
            result = method(*args)
            return DeclaredModel(result, self.held) if part == "build_model" else result

        return held

    def hold(self, part: str, args: tuple) -> None:
        if part in ("build_model", "parameter_count"):
            self.held.config(args[0])
        elif part == "positional_encoding":
            self.held.length("positional_encoding", args[0])
        elif part == "label_smoothed_loss":
            self.held.one_of("label_smoothing", args[2])
        elif part in HELD_ARGUMENTS:
            weights, eps = HELD_ARGUMENTS[part]
            self.held.weights(args[weights])
            if eps is not None:
                self.held.one_of("eps", args[eps])


class DeclaredModel:
    """The model of a ``Declared`` adapter: the weights it loads of the declared kind, every sequence it is given no
    longer than the declared max_len."""

    def __init__(self, inner, held: Held):
        self.inner, self.held = inner, held

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)
        call = getattr(self.inner, method)

        def held(*args):
            if method == "load_weights":
                self.held.weights(args[0])
            ids = [a for a in args if isinstance(a, np.ndarray) and a.dtype.kind in "iu"]
            for a in ids:
                self.held.length(f"model.{method}: a sequence", a.shape[1])  # batch-first, as the reference
            if method == "greedy_decode":
                self.held.length("model.greedy_decode: max_len", args[1])
            return call(*args)

        return held


BIAS_FREE = ({"attention_bias": (False,)}, {"attention_bias": "the projections have no biases (the paper's formulas)"})
EPS_1E6 = ({"eps": (1e-6,)}, {"eps": "eps is fixed at 1e-6 inside the layers"})
FFN_4X = ({"d_ff_ratio": (4,)}, {"d_ff_ratio": "d_ff is 4 x d_model"})
MAX_LEN_100 = ({"max_len": 100}, {"max_len": "learned positions for 100 positions"})
LOSS_EPS_01 = ({"label_smoothing": (0.1,)}, {"label_smoothing": "label smoothing is fixed at 0.1 inside the loss"})
DECLARATIONS = {"bias_free": BIAS_FREE, "eps_1e6": EPS_1E6, "ffn_4x": FFN_4X, "max_len_100": MAX_LEN_100,
                "loss_eps_01": LOSS_EPS_01}
DECLARATIONS["all"] = ({k: v for supports, _ in DECLARATIONS.values() for k, v in supports.items()},
                       {k: v for _, reasons in DECLARATIONS.values() for k, v in reasons.items()})


def declared(name: str, *, model_only: bool = False) -> Declared:
    return Declared(builtin("reference"), *DECLARATIONS[name], model_only=model_only)


# The reference under each declaration, with every part and model-only (tests/test_declared_views.py).
declared_bias_free, declared_bias_free_model_only = declared("bias_free"), declared("bias_free", model_only=True)
declared_eps_1e6, declared_eps_1e6_model_only = declared("eps_1e6"), declared("eps_1e6", model_only=True)
declared_ffn_4x, declared_ffn_4x_model_only = declared("ffn_4x"), declared("ffn_4x", model_only=True)
declared_max_len_100 = declared("max_len_100")
declared_max_len_100_model_only = declared("max_len_100", model_only=True)
declared_loss_eps_01 = declared("loss_eps_01")
declared_loss_eps_01_model_only = declared("loss_eps_01", model_only=True)
declared_all, declared_all_model_only = declared("all"), declared("all", model_only=True)
# Three positions at most: shorter than most problems the checks draw (tests/test_declared_views.py)
declared_max_len_3 = Declared(builtin("reference"), {"max_len": 3}, {"max_len": "three positions"})
# A parameter count with a separate output matrix although tied, building d_ff = 4 d_model only: its count's
# second size must be one it builds, or the untied table stays unnamed.
separate_output_count_ffn_4x = Declared(builtin("mutant:parameter_count_separate_output_matrix"), *FFN_4X)


class ReadsTrailingPadding(ModelOnly):
    """The reference's model, whose forward raises the last token's logit at every position of a row by 100 per
    padding token in that row's decoder input: a padding bug (appending_target_padding_leaves_real_logits_unchanged
    is its claim), with the reference's greedy loop (right: the argmax at every step, padding after </s>)."""

    def build_model(self, config, seed):
        return ReadsTrailingPaddingModel(self.inner.build_model(config, seed), config["pad_id"])


class ReadsTrailingPaddingModel:
    def __init__(self, inner, pad_id: int):
        self.inner, self.pad_id = inner, pad_id

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)
        return getattr(self.inner, method)

    def forward(self, src, tgt_in):
        logits = self.inner.forward(src, tgt_in)
        logits[..., -1] += 100.0 * (np.asarray(tgt_in) == self.pad_id).sum(1)[:, None]  # (B, T): batch-first
        return logits


reads_trailing_padding_reference = ReadsTrailingPadding(builtin("reference"))
# Failing implementations under every declaration at once: their diagnoses (a second problem, the catalogue,
# localisation, ablation, the count decomposition) must ask within the declaration too.
def declared_mutant(name: str, *, model_only: bool = False) -> Declared:
    return Declared(builtin(f"mutant:{name}"), *DECLARATIONS["all"], model_only=model_only)


declared_pre_norm = declared_mutant("pre_norm")
declared_pre_norm_model_only = declared_mutant("pre_norm", model_only=True)
declared_greedy_does_not_feed_back = declared_mutant("greedy_does_not_feed_back", model_only=True)
declared_label_smoothing_over_wrong_tokens = declared_mutant("label_smoothing_over_wrong_tokens")
declared_separate_output_count = declared_mutant("parameter_count_separate_output_matrix")
