"""The suite's side of the boundary: a ``Candidate`` wraps an adapter so that checks never see its quirks.

Checks always speak one convention (boolean "keep" masks, batch-first, numpy). The candidate
converts to what the adapter declared, calls it under a time limit, and validates what comes back:
a numpy array of the promised shape, a floating dtype, finite values. Anything else becomes a
``BadOutput`` or ``AdapterError`` naming the part, the expected and the actual value, and the likely
cause. This class is also the seam where running the adapter in another process will plug in.
"""

from __future__ import annotations

import contextlib
import contextvars
import signal
import sys
import threading
from typing import Any

import numpy as np

from conformance import provenance
from conformance.adapter import ADAPTER_PARTS, MODEL_PARTS, Conventions
from conformance.boundary.isolation import frameworks
from conformance.compare import shape_cause
from conformance.errors import AdapterError, BadOutput, PartNotImplemented
from conformance.problems import supports

DEFAULT_TIMEOUT_S = 60.0
COMPILE_POLL_S = 0.25  # how often a limit that falls inside JAX's compiler looks again


class PartTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float | None, part: str, clock: frameworks.CompileClock | None = None):
    """Interrupt a part that runs longer than ``seconds`` (main thread only; elsewhere unlimited). JAX's compilations
    are not the part's time: the limit waits while JAX compiles and is extended by each compilation's duration
    (``frameworks.Allowance``), so a jitted part's first call is timed as its later ones. ``clock``: the compilations
    of an isolated adapter's worker (its proxy's); by default this process's JAX, once imported."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return
    if clock is None and "jax" in sys.modules:
        clock = frameworks.CLOCK
    allowance = frameworks.Allowance(clock) if clock is not None else None

    def on_alarm(signum, frame):
        extension = allowance.extension(COMPILE_POLL_S) if allowance is not None else 0.0
        if extension > 0:
            signal.setitimer(signal.ITIMER_REAL, extension)
            return
        raise PartTimeout(f"{part} did not return within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_NON_FINITE_ALLOWED = contextvars.ContextVar("non_finite_allowed", default=False)


@contextlib.contextmanager
def non_finite_allowed():
    """Within it, arrays may come back with NaN and inf: a question about where they appear (half precision's
    overflows). Outside, they are a ``BadOutput``."""
    token = _NON_FINITE_ALLOWED.set(True)
    try:
        yield
    finally:
        _NON_FINITE_ALLOWED.reset(token)


def describe(value: Any) -> str:
    """A short description of what came back, for messages: type, shape, dtype."""
    if isinstance(value, np.ndarray):
        return f"numpy.ndarray shape={value.shape} dtype={value.dtype}"
    kind = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    shape = getattr(value, "shape", None)
    return f"{kind}" + (f" shape={tuple(shape)}" if shape is not None else "")


def expect_array(value: Any, shape: tuple[int, ...], *, part: str, name: str = "output") -> np.ndarray:
    """Validate one array crossing back from the adapter."""
    if not isinstance(value, np.ndarray):
        if type(value).__module__.partition(".")[0] in ("jax", "jaxlib"):
            hint = 'declare Conventions(arrays="jax") and the boundary converts, or return numpy.asarray(x)'
        elif hasattr(value, "detach") or hasattr(value, "__array__"):
            hint = "convert with tensor.detach().cpu().numpy()"
        else:
            hint = "return a numpy.ndarray"
        raise BadOutput(
            f"{part} returned {describe(value)} as its {name}; expected numpy.ndarray of shape {shape}."
            f" Likely cause: the adapter must convert at the boundary ({hint}).",
            part=part,
            expected=f"numpy.ndarray {shape}",
            actual=describe(value),
        )
    if value.shape != tuple(shape):
        cause = shape_cause(value.shape, shape)
        raise BadOutput(
            f"{part} returned {name}.shape={value.shape}, but should be {tuple(shape)}"
            + (f". Likely cause: {cause}" if cause else ""),
            part=part,
            expected=str(tuple(shape)),
            actual=str(value.shape),
            **({"likely_cause": cause} if cause else {}),
        )
    if value.dtype.kind == "f" and not _NON_FINITE_ALLOWED.get() and not np.isfinite(value).all():
        bad = np.argwhere(~np.isfinite(value))[0]
        raise BadOutput(
            f"{part} returned non-finite values in its {name} ({int((~np.isfinite(value)).sum())} of"
            f" {value.size}, first at index {tuple(int(i) for i in bad)}: {value[tuple(bad)]})."
            " Likely cause: a fully masked row (softmax of all -inf) or an overflow.",
            part=part,
            expected="finite values",
            actual="NaN/inf",
        )
    return value


def expect_float_array(value: Any, shape: tuple[int, ...], *, part: str, name: str = "output") -> np.ndarray:
    value = expect_array(value, shape, part=part, name=name)
    if value.dtype.kind != "f":
        raise BadOutput(
            f"{part} returned {name} of dtype {value.dtype}; expected a floating dtype",
            part=part,
            expected="float32 or float64",
            actual=str(value.dtype),
        )
    return value


def expect_scalar(value: Any, kind: type, *, part: str) -> float | int:
    """A Python or numpy scalar of the right kind (a 0-d array is accepted)."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()
    ok = isinstance(value, int) and not isinstance(value, bool) if kind is int else isinstance(value, int | float)
    if not ok or (kind is float and not np.isfinite(value)):
        raise BadOutput(
            f"{part} returned {describe(value)} ({value!r}); expected a finite Python {kind.__name__}",
            part=part,
            expected=kind.__name__,
            actual=describe(value),
        )
    return kind(value)



# Every attention of a model, by stack: what ``attention_weights`` names (for each layer l of the stack).
ATTENTIONS = (("encoder", ("self_attn",)), ("decoder", ("self_attn", "cross_attn")))


def arrays_by_name(value, part: str, expect) -> dict[str, np.ndarray]:
    """A part's dict of named arrays, each validated by ``expect`` (its own shape: a dict's arrays are named, not
    sized); anything but a dict is a bad output."""
    if not isinstance(value, dict):
        raise BadOutput(f"{part} returned {describe(value)}; expected dict[str, numpy.ndarray]", part=part,
                        expected="dict", actual=describe(value))
    return {name: expect(array, np.shape(array) if isinstance(array, np.ndarray) else (), part=part, name=name)
            for name, array in value.items()}

class Candidate:
    """An implementation under test, in the suite's conventions."""

    def __init__(self, adapter: Any, *, name: str, timeout_s: float | None = DEFAULT_TIMEOUT_S,
                 dtype: str | None = None):
        self.adapter = adapter
        self.name = name
        self.dtype_asked = dtype  # the run's --dtype; None: whatever the adapter declares
        # a grade: a declared half dtype (looser tolerances) is honoured only where the instructor asked for it
        self.half_refused = False
        self.timeout_s = timeout_s
        self.hung_parts: set[str] = set()  # a part that hung once fails fast afterwards (no re-waiting)
        self.ledger = Ledger()  # whose code answered the calls of the check running now (the plugin resets it)
        self.history = Ledger()  # and every call of the run so far, for checks that judge what another check ran

    def __repr__(self) -> str:  # shown in pytest ids and hypothesis reproductions
        return f"Candidate({self.name!r})"

    @property
    def loaded(self) -> bool:
        """False when the adapter stands in for an implementation that could not be loaded
        (``session.UnloadableAdapter``, whose class says so: every check is then an error, a grade 0)."""
        return getattr(type(self.adapter), "not_loaded", False) is not True

    @property
    def conventions(self) -> Conventions:
        """What the adapter declares; read when needed (an isolated adapter's worker may still be importing)."""
        return self.adapter.conventions

    @property
    def dtype_refusal(self) -> str | None:
        """Why this candidate cannot run in the dtype the run asks for (it does not declare it); None when it can."""
        asked = self.dtype_asked
        if asked is None and self.half_refused and self.conventions.dtype in ("float16", "bfloat16"):
            return (f"declares {self.conventions.dtype}, whose tolerances are looser: a graded submission is held to"
                    f" float32 or float64 unless the grade asks for half precision (grade --dtype"
                    f" {self.conventions.dtype})")
        if asked is None or self.conventions.dtype == asked:
            return None
        if asked in self.conventions.dtypes:
            return (f"declares {asked} (Conventions.dtypes) but has no with_dtype(dtype) to compute in it. Fix: define"
                    " with_dtype, returning the adapter computing in dtype")
        declared = ", ".join([self.conventions.dtype, *self.conventions.dtypes]) or "none"
        return (f"computes in {declared} only; --dtype {asked} needs Conventions(dtypes={{{asked!r}: 'native' or"
                " 'autocast'}) and with_dtype(dtype)")

    # -- discovery ----------------------------------------------------------------------------
    def provides(self, part: str) -> bool:
        """Whether the adapter declares ``part``; model parts are read off the class of its model."""
        if part.startswith("model."):
            # An adapter may declare the class its build_model returns; without it, a missing model
            # method is found when it is called (and reported as not implemented then).
            model_class = getattr(self.adapter, "model_class", None)
            declared = model_class is None or callable(getattr(model_class, part[6:], None))
            return self.provides("build_model") and declared
        return callable(getattr(self.adapter, part, None))

    def provided_parts(self) -> list[str]:
        parts = [p for p in ADAPTER_PARTS if self.provides(p)]
        return parts + [f"model.{p}" for p in MODEL_PARTS if self.provides(f"model.{p}")]

    def supplied_parts(self) -> dict[str, dict]:
        """{part: provenance record} of the parts the suite's helpers supply, known before any call."""
        return provenance.static_records(self.adapter, self.provided_parts())

    # -- calling ------------------------------------------------------------------------------
    def call(self, part: str, target: Any, *args, **kwargs) -> Any:
        """Call ``target.<method>`` for ``part``; translate what can go wrong into outcomes."""
        method = getattr(target, part.removeprefix("model."), None)
        if not callable(method):
            raise PartNotImplemented(f"{self.name} does not provide {part}", part=part)
        refusal = self.dtype_refusal if self.dtype_asked is not None or self.half_refused else None
        if refusal:
            raise PartNotImplemented(f"{self.name} {refusal}", part=part, reason=refusal)
        if part in self.hung_parts:
            message = f"{part} hung earlier in this run; not called again"
            self.ledger.no_answer(message)
            raise AdapterError(message, part=part, expected=f"a result within {self.timeout_s:g} s", actual="no result")
        in_worker = getattr(self.adapter, "converts_in_worker", False)
        conventions = None if in_worker else getattr(self.adapter, "conventions", None)
        try:
            clock = getattr(self.adapter, "compile_clock", None)
            with time_limit(self.timeout_s, part, clock), provenance.conversions() as converted:
                value = method(*frameworks.to_framework(args, conventions),
                               **frameworks.to_framework(kwargs, conventions))
            value = frameworks.from_framework(value, conventions)
            self.ledger.note(part, method, target, converted)
            self.history.note(part, method, target, converted)
            return value
        except NotImplementedError as exc:
            reason = f": {exc}" if str(exc) else ""  # the adapter's own words reach the report
            raise PartNotImplemented(f"{self.name}.{part} raised NotImplementedError{reason}", part=part,
                                     reason=str(exc) or None) from exc
        except PartTimeout as exc:
            self.hung_parts.add(part)
            message = f"{part} hung: {exc}. Likely cause: an endless loop (greedy decoding that never stops?)"
            self.ledger.no_answer(message)
            raise AdapterError(message, part=part, expected=f"a result within {self.timeout_s:g} s",
                               actual="no result") from None
        except AdapterError as exc:  # from the adapter itself: not loaded, or its isolated worker died or hung
            self.ledger.no_answer(exc.message)
            raise
        except PartNotImplemented:
            raise
        except frameworks.BoundaryValueError as exc:  # what came back cannot cross (in process or from a worker)
            raise BadOutput(f"{part} returned {exc}; expected arrays that can come back to the host. Likely cause:"
                            f" {exc.likely_cause}", part=part, expected="a concrete array on the host",
                            actual=str(exc), likely_cause=exc.likely_cause) from None
        except Exception as exc:
            raise AdapterError(
                f"{part} raised {type(exc).__name__}: {exc}",
                part=part,
                expected="a result",
                actual=f"{type(exc).__name__}: {exc}",
            ) from exc

    # -- configurations -----------------------------------------------------------------------
    def require(self, part: str, **features) -> None:
        """Refuse, as *not implemented*, a call outside the configurations the adapter declares it supports."""
        conv = self.conventions
        why = supports.violation(conv.supports, conv.reasons, **features)
        if why:
            raise PartNotImplemented(f"{self.name} {why}", part=part, reason=why)

    def fit(self, value):
        """A drawn problem (``LayerSizes``, ``ModelSizes``, ``ModelConfig``) moved into the declared configurations."""
        return supports.fit(value, self.conventions.supports)

    def longest(self, n: int) -> int:
        """A drawn number of positions, cut to the declared max_len."""
        return min(n, self.conventions.supports.get("max_len", n))

    def _require_layer(self, part: str, weights: dict, eps: float | None, prefix: str = "self_attn.",
                       h: int | None = None) -> None:
        W1 = weights.get("ffn.W1", weights.get("W1"))
        self.require(part, attention_bias=f"{prefix}b_Q" in weights if f"{prefix}W_Q" in weights else None,
                     eps=eps, h=h, **({"d_ff": np.shape(W1)[1], "d_model": np.shape(W1)[0]} if W1 is not None else {}))

    # -- conventions --------------------------------------------------------------------------
    def to_mask(self, keep: np.ndarray | None) -> np.ndarray | None:
        """A boolean keep-mask in the adapter's declared polarity."""
        if keep is None:
            return None
        keep = np.asarray(keep, dtype=bool)
        if self.conventions.mask == "blocked":
            return ~keep
        if self.conventions.mask == "additive":
            return self.cast(np.where(keep, 0.0, -np.inf))
        return keep

    def to_layout(self, x: np.ndarray) -> np.ndarray:
        """Batch-first (B, L, ...) into the adapter's layout."""
        return x if self.conventions.batch_first else np.ascontiguousarray(np.swapaxes(x, 0, 1))

    def from_layout(self, x: Any) -> Any:
        if self.conventions.batch_first or not isinstance(x, np.ndarray) or x.ndim < 2:
            return x
        return np.swapaxes(x, 0, 1)

    def cast(self, x: np.ndarray) -> np.ndarray:
        """Floats in the dtype the adapter computes in (bfloat16 values in float32: NumPy has no bfloat16)."""
        return frameworks.cast(x, self.conventions.dtype)

    def cast_weights(self, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {name: self.cast(value) for name, value in weights.items()}

    # -- parts --------------------------------------------------------------------------------
    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        self.require("positional_encoding", max_len=n)
        out = self.call("positional_encoding", self.adapter, n, d_model)
        return expect_float_array(out, (n, d_model), part=f"positional_encoding(n={n}, d_model={d_model})")

    def layer_norm(self, x, gamma, beta, eps: float = 1e-5) -> np.ndarray:
        # no eps requirement: the function takes eps as an argument; a declared eps is the layers' (supports.BINDS)
        out = self.call("layer_norm", self.adapter, self.cast(x), self.cast(gamma), self.cast(beta), eps)
        return expect_float_array(out, np.shape(x), part=f"layer_norm(x{np.shape(x)})")

    def scaled_dot_product_attention(self, q, k, v, mask=None) -> tuple[np.ndarray, np.ndarray]:
        part = f"scaled_dot_product_attention(q{q.shape}, k{k.shape}, v{v.shape})"
        result = self.call(
            "scaled_dot_product_attention",
            self.adapter,
            self.cast(q),
            self.cast(k),
            self.cast(v),
            self.to_mask(mask),
        )
        out, weights = self.expect_pair(result, part)
        (B, Lq, _), Lk, d_v = q.shape, k.shape[1], v.shape[-1]
        return (
            expect_float_array(out, (B, Lq, d_v), part=part, name="output"),
            expect_float_array(weights, (B, Lq, Lk), part=part, name="weights"),
        )

    def multi_head_attention(self, query, key, value, weights, h: int, mask=None):
        part = f"multi_head_attention(query{query.shape}, key{key.shape}, h={h})"
        self._require_layer("multi_head_attention", weights, None, prefix="", h=h)
        result = self.call(
            "multi_head_attention",
            self.adapter,
            self.to_layout(self.cast(query)),
            self.to_layout(self.cast(key)),
            self.to_layout(self.cast(value)),
            self.cast_weights(weights),
            h,
            self.to_mask(mask),
        )
        out, attn = self.expect_pair(result, part)
        (B, Lq, d), Lk = query.shape, key.shape[1]
        out = expect_float_array(self.from_layout(out), (B, Lq, d), part=part, name="output")
        return out, expect_float_array(attn, (B, h, Lq, Lk), part=part, name="weights")

    def feed_forward(self, x, weights) -> np.ndarray:
        self._require_layer("feed_forward", weights, None)
        out = self.call("feed_forward", self.adapter, self.to_layout(self.cast(x)), self.cast_weights(weights))
        return expect_float_array(self.from_layout(out), x.shape, part=f"feed_forward(x{x.shape})")

    def encoder_layer(self, x, weights, h: int, eps: float, src_keep) -> np.ndarray:
        self._require_layer("encoder_layer", weights, eps, h=h)
        out = self.call(
            "encoder_layer",
            self.adapter,
            self.to_layout(self.cast(x)),
            self.cast_weights(weights),
            h,
            eps,
            self.to_mask(src_keep),
        )
        return expect_float_array(self.from_layout(out), x.shape, part=f"encoder_layer(x{x.shape}, h={h})")

    def decoder_layer(self, y, memory, weights, h: int, eps: float, tgt_keep, src_keep) -> np.ndarray:
        self._require_layer("decoder_layer", weights, eps, h=h)
        out = self.call(
            "decoder_layer",
            self.adapter,
            self.to_layout(self.cast(y)),
            self.to_layout(self.cast(memory)),
            self.cast_weights(weights),
            h,
            eps,
            self.to_mask(tgt_keep),
            self.to_mask(src_keep),
        )
        part = f"decoder_layer(y{y.shape}, memory{memory.shape}, h={h})"
        return expect_float_array(self.from_layout(out), y.shape, part=part)

    def attention_sublayer(self, x, memory, weights, h: int, eps: float, keep=None) -> np.ndarray:
        """LayerNorm(x + MultiHead(x, kv, kv)), kv = memory (cross-attention) or x; keep (B, Lq, Lk)."""
        self._require_layer("attention_sublayer", weights, eps, prefix="", h=h)
        memory = None if memory is None else self.to_layout(self.cast(memory))
        out = self.call("attention_sublayer", self.adapter, self.to_layout(self.cast(x)), memory,
                        self.cast_weights(weights), h, eps, self.to_mask(keep))
        kind = "self" if memory is None else "cross"
        part = f"attention_sublayer({kind}, x{np.shape(x)}, h={h})"
        return expect_float_array(self.from_layout(out), np.shape(x), part=part)

    def ffn_sublayer(self, x, weights, eps: float) -> np.ndarray:
        """LayerNorm(x + FFN(x))."""
        self._require_layer("ffn_sublayer", weights, eps)
        out = self.call("ffn_sublayer", self.adapter, self.to_layout(self.cast(x)), self.cast_weights(weights), eps)
        return expect_float_array(self.from_layout(out), np.shape(x), part=f"ffn_sublayer(x{np.shape(x)})")

    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        value = self.call("learning_rate", self.adapter, step, d_model, warmup)
        return expect_scalar(value, float, part=f"learning_rate(step={step}, d_model={d_model}, warmup={warmup})")

    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        self.require("label_smoothed_loss", label_smoothing=epsilon)
        value = self.call(
            "label_smoothed_loss", self.adapter, self.cast(logits), np.asarray(targets, np.int64), epsilon, pad_id
        )
        return expect_scalar(value, float, part=f"label_smoothed_loss(logits{np.shape(logits)})")

    def parameter_count(self, config) -> int:
        # eps and the loss's eps change no count: asked in the ones the candidate declares, the count is the same
        config = supports.fit_uncounted(config, self.conventions.supports)
        self.require("parameter_count", **supports.config_features(config))
        value = self.call("parameter_count", self.adapter, config.as_dict())
        return expect_scalar(value, int, part="parameter_count")

    def build_model(self, config, *, seed: int = 0) -> CandidateModel:
        self.require("build_model", **supports.config_features(config))
        model = self.call("build_model", self.adapter, config.as_dict(), seed)
        return CandidateModel(self, model, config)

    @staticmethod
    def expect_pair(result: Any, part: str) -> tuple[Any, Any]:
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise BadOutput(
                f"{part} returned {describe(result)}; expected a pair (output, attention weights)",
                part=part,
                expected="(output, weights)",
                actual=describe(result),
            )
        return result[0], result[1]


class Ledger:
    """Whose code answered one check's calls: the provenance record of each part the suite supplied, and the
    conversions the adapter's helpers made (``conformance.provenance``); and whether a call got no answer."""

    def __init__(self):
        self.records: dict[str, dict] = {}
        self.converted: dict[tuple, dict] = {}  # one entry per kind of conversion, however many calls made it
        self.unanswered: str | None = None  # the first call that got no answer at all (``no_answer``)

    def no_answer(self, message: str) -> None:
        """A call ended without an answer: the implementation could not be loaded, its worker died, or the call
        hung. The check is then an error whatever it made of it (``plugin._classify``), never advisory."""
        if self.unanswered is None:
            self.unanswered = message

    def note(self, part: str, method, target, converted: list[dict]) -> None:
        account = getattr(method, "conformance_account", None)  # an isolated call: what the worker saw
        if isinstance(account, dict):
            record, converted = account.get("supplied"), account.get("converted") or []
        else:
            record = provenance.record_of(method, target, part)
        if record is not None:
            self.records.setdefault(part, record)
        for entry in provenance.distinct({**entry, "part": part} for entry in converted):
            key = (entry["converter"], entry["part"], entry["aspect"], entry["deviation"])
            self.converted.setdefault(key, entry)

    def as_dict(self) -> dict | None:
        if not self.records and not self.converted:
            return None
        return {"supplied": dict(self.records), "converted": list(self.converted.values())}


class CandidateModel:
    """A model built by the candidate's adapter, called in the suite's conventions."""

    def __init__(self, candidate: Candidate, model: Any, config):
        self.candidate, self.model, self.config = candidate, model, config

    def _call(self, part: str, *args):
        return self.candidate.call(f"model.{part}", self.model, *args)

    def _require_lengths(self, part: str, *sequences) -> None:
        """Refuse, as *not implemented*, a sequence (batch-first ids, or a greedy max_len) longer than the
        declared max_len."""
        longest = max(n if isinstance(n, int) else (np.shape(n)[-1] if np.ndim(n) else 0) for n in sequences)
        self.candidate.require(f"model.{part}", max_len=longest)

    def _ids(self, ids) -> np.ndarray:
        return self.candidate.to_layout(np.asarray(ids, dtype=np.int64))

    def load_weights(self, weights: dict[str, np.ndarray]) -> None:
        self._call("load_weights", self.candidate.cast_weights(weights))

    def dump_weights(self) -> dict[str, np.ndarray]:
        return arrays_by_name(self._call("dump_weights"), "model.dump_weights", expect_array)

    def forward(self, src, tgt_in) -> np.ndarray:
        self._require_lengths("forward", src, tgt_in)
        out = self._call("forward", self._ids(src), self._ids(tgt_in))
        shape = (*np.shape(tgt_in), self.config.tgt_vocab)
        return expect_float_array(
            self.candidate.from_layout(out), shape, part=f"model.forward(src{np.shape(src)}, tgt_in{np.shape(tgt_in)})"
        )

    def encode(self, src) -> np.ndarray:
        self._require_lengths("encode", src)
        out = self._call("encode", self._ids(src))
        shape = (*np.shape(src), self.config.d_model)
        return expect_float_array(self.candidate.from_layout(out), shape, part=f"model.encode(src{np.shape(src)})")

    def decode(self, tgt_in, memory, src) -> np.ndarray:
        self._require_lengths("decode", tgt_in, src)
        out = self._call(
            "decode", self._ids(tgt_in), self.candidate.to_layout(self.candidate.cast(memory)), self._ids(src)
        )
        shape = (*np.shape(tgt_in), self.config.tgt_vocab)
        return expect_float_array(
            self.candidate.from_layout(out), shape, part=f"model.decode(tgt_in{np.shape(tgt_in)})"
        )

    def greedy_decode(self, src, max_len: int) -> np.ndarray:
        self._require_lengths("greedy_decode", src, int(max_len))
        out = self.candidate.from_layout(self._call("greedy_decode", self._ids(src), max_len))
        part = f"model.greedy_decode(src{np.shape(src)}, max_len={max_len})"
        if not isinstance(out, np.ndarray) or out.ndim != 2 or out.shape[0] != np.shape(src)[0]:
            raise BadOutput(
                f"{part} returned {describe(out)}; expected an integer array (B={np.shape(src)[0]}, L<={max_len})",
                part=part,
                expected=f"(B, L<={max_len}) int",
                actual=describe(out),
            )
        if out.dtype.kind not in "iu" or out.shape[1] > max_len:
            raise BadOutput(
                f"{part} returned {describe(out)}; expected integer ids and at most {max_len} of them",
                part=part,
                expected=f"int ids, L<={max_len}",
                actual=describe(out),
            )
        return out

    def attention_weights(self, src, tgt_in) -> dict[str, np.ndarray]:
        self._require_lengths("attention_weights", src, tgt_in)
        weights = arrays_by_name(self._call("attention_weights", self._ids(src), self._ids(tgt_in)),
                                 "model.attention_weights", expect_float_array)
        wanted = [f"{stack}.{layer}.{sublayer}" for stack, sublayers in ATTENTIONS for layer in range(self.config.N)
                  for sublayer in sublayers]
        missing = [name for name in wanted if name not in weights]
        if missing:
            raise BadOutput(
                f"model.attention_weights gave no {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}"
                f" (it named {', '.join(sorted(weights)[:6]) or 'nothing'}); expected one (B, h, Lq, Lk) array for"
                " each attention, named encoder.{l}.self_attn, decoder.{l}.self_attn, decoder.{l}.cross_attn, l from"
                " 0. Likely cause: the adapter's hooks found no attention module there (TorchAdapter: map them with"
                " model={\"attention\": {...}})", part="model.attention_weights", expected=wanted,
                actual=sorted(weights))
        return weights

    def unmapped_parameters(self) -> dict[str, int]:
        found = self._call("unmapped_parameters")
        ok = isinstance(found, dict) and all(
            isinstance(k, str) and isinstance(v, int | np.integer) and not isinstance(v, bool)
            for k, v in found.items())
        if not ok:
            raise BadOutput(
                f"model.unmapped_parameters returned {describe(found)}; expected dict[str, int]: the model's own"
                " name of each parameter without a canonical name -> its number of values",
                part="model.unmapped_parameters",
                expected="dict[str, int]",
                actual=describe(found),
            )
        return {name: int(count) for name, count in found.items()}

    def train_step(self, src, tgt_in, tgt_out) -> dict:
        self._require_lengths("train_step", src, tgt_in, tgt_out)
        result = self._call("train_step", self._ids(src), self._ids(tgt_in), self._ids(tgt_out))
        if not isinstance(result, dict) or not {"loss", "lr"} <= set(result):
            raise BadOutput(
                f"model.train_step returned {describe(result)}; expected {{'loss': float, 'lr': float}}",
                part="model.train_step",
                expected="{'loss', 'lr'}",
                actual=describe(result),
            )
        return {key: expect_scalar(result[key], float, part=f"model.train_step[{key!r}]") for key in ("loss", "lr")}
