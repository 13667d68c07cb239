"""Framework arrays at the boundary: what an adapter that declares ``Conventions(arrays="jax")`` receives and returns.

The suite speaks NumPy. An adapter that declares JAX arrays gets every array argument as a ``jax.Array`` (on JAX's
default device, uncommitted, so a jitted function places it where it computes) and may return ``jax.Array``s, which
come back to NumPy here. Floating arrays arrive in the declared dtype: ``float64`` needs JAX's 64-bit mode, which
the declaration switches on (``jax_enable_x64``) before the first conversion; token ids arrive as ``int32`` unless
that mode is on (JAX's own default integer). What cannot come back is refused with its reason (``BoundaryValueError``):
a traced value (a tracer that leaked out of ``jax.jit``, ``grad`` or ``vmap``), an array whose buffer was deleted
(donated to a jitted call), an array spread over devices this process cannot read.

Compilation is not the call's time: ``CompileClock`` follows JAX's own monitoring events (the start and the duration
of tracing, lowering and XLA's compile, ``jax.monitoring``), so a time limit waits while JAX compiles and gives back
what the call spent compiling (``Allowance``), up to ``MAX_CREDIT_S`` a call. The same rule holds in process
(``candidate.time_limit``) and in an isolated worker, which tells the grader as each compilation starts and ends.

Half precision (a run's ``--dtype float16|bfloat16``): an adapter that declares the dtype (``Conventions.dtypes``) is
switched to it where it lives (``switch_dtype``: ``adapter.with_dtype(dtype)``, in process or in its worker).
float16 crosses as ``numpy.float16``; bfloat16, which NumPy lacks, crosses as float32 arrays holding bfloat16 values
(``cast`` rounds to nearest even), which a bfloat16 computation casts exactly; what comes back in ml_dtypes' bfloat16
(``numpy.asarray`` of a JAX bfloat16 array) is widened to float32, exactly. JAX adapters get ``jax.Array``s in the
dtype itself.

This module is loaded in the isolated worker too (``app.frameworks``): the standard library and NumPy only; JAX is
looked up in ``sys.modules`` (an adapter that declares JAX arrays has imported it).
"""

from __future__ import annotations

import sys
import time

import numpy as np

# JAX's monitoring events around a compilation (jax/_src/dispatch.py): each records a scalar (its start time) on
# entering and a duration on leaving. Tracing runs the adapter's own Python under JAX; it is compilation all the
# same (a jitted function's first call), so a limit waits for it too, up to MAX_CREDIT_S a call: an endless loop
# there still ends.
COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")
MAX_CREDIT_S = 600.0  # the most compile time one call is given back


class BoundaryValueError(Exception):
    """A framework value that cannot cross back: ``str(exc)`` says what it is, ``likely_cause`` why."""

    def __init__(self, what: str, likely_cause: str):
        super().__init__(what)
        self.what, self.likely_cause = what, likely_cause


def declared_arrays(conventions) -> str:
    """``"jax"`` or ``"numpy"``: what the adapter's conventions (a ``Conventions`` or its dict) declare."""
    value = conventions.get("arrays") if isinstance(conventions, dict) else getattr(conventions, "arrays", "numpy")
    return value if value in ("jax", "numpy") else "numpy"


def declared_dtype(conventions) -> str:
    value = conventions.get("dtype") if isinstance(conventions, dict) else getattr(conventions, "dtype", "float32")
    return value if value in DTYPES else "float32"


# -- precision: the dtype a run asks for ------------------------------------------------------------------------
HALF = ("float16", "bfloat16")
DTYPES = ("float32", "float64", *HALF)
HOW = ("native", "autocast")  # how an adapter serves a half dtype (Conventions.dtypes): weights in it, or float32


def declared_dtypes(conventions) -> dict:
    """{dtype: "native" | "autocast"}: the dtypes besides its own that an adapter declares it can compute in."""
    value = conventions.get("dtypes") if isinstance(conventions, dict) else getattr(conventions, "dtypes", None)
    return dict(value) if isinstance(value, dict) else {}


def switch_dtype(adapter, dtype: str | None):
    """The adapter in ``dtype``: itself when it already computes in it (or no dtype is asked), ``with_dtype(dtype)``
    when it declares the dtype; otherwise itself, and the grader refuses every part (``candidate.dtype_refusal``)."""
    conventions = getattr(adapter, "conventions", None)
    if dtype is None or declared_dtype(conventions) == dtype or dtype not in declared_dtypes(conventions) \
            or not callable(getattr(adapter, "with_dtype", None)):
        return adapter
    return adapter.with_dtype(dtype)


def round_to_bfloat16(x) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), still float32: the top 16 bits of each."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    out = np.where(np.isnan(x), bits, rounded & np.uint32(0xFFFF0000)).astype(np.uint32)
    return out.view(np.float32)


def cast(x, dtype: str) -> np.ndarray:
    """``x`` as the boundary hands it to an adapter computing in ``dtype``: bfloat16 values in float32 for bfloat16."""
    if dtype == "bfloat16":
        return round_to_bfloat16(np.asarray(x, dtype=np.float32))
    return np.asarray(x, dtype=dtype)


def widen(value, depth: int = 0):
    """A result with every ml_dtypes bfloat16 array (NumPy has no bfloat16 of its own) as float32, exactly."""
    if isinstance(value, np.ndarray) and value.dtype.name == "bfloat16":
        return value.astype(np.float32)
    if isinstance(value, dict) and depth < 32:
        return {key: widen(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple) and depth < 32:
        return type(value)(widen(item, depth + 1) for item in value)
    return value


# -- in: NumPy -> the adapter's arrays ---------------------------------------------------------------------------
def to_framework(value, conventions):
    """``value`` (a call's arguments: arrays, scalars, dicts, lists, tuples) with every ndarray as the adapter's
    declared array type; unchanged for a NumPy adapter."""
    if declared_arrays(conventions) != "jax":
        return value
    jax = _jax()
    floating = declared_dtype(conventions)
    if floating == "float64" and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)  # declared float64: JAX computes in it only in 64-bit mode
    return _convert_in(value, jax, floating)


def _convert_in(value, jax, floating: str):
    if isinstance(value, np.ndarray):
        return jax.numpy.asarray(_jax_dtype(value, floating, jax.config.jax_enable_x64))
    if isinstance(value, dict):
        return {key: _convert_in(item, jax, floating) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_convert_in(item, jax, floating) for item in value)
    return value


def _jax_dtype(array: np.ndarray, floating: str, x64: bool) -> np.ndarray:
    """The array in the dtype JAX will hold without a warning: floats in the declared dtype, integers in int32
    unless 64-bit mode is on (JAX would truncate int64 to int32 and warn)."""
    if array.dtype.kind == "f":
        if floating == "bfloat16":  # float32 holding bfloat16 values: exact in JAX's own bfloat16
            return _jax().numpy.asarray(array, dtype=_jax().numpy.bfloat16)
        return array.astype(floating, copy=False)
    if array.dtype.kind in "iu" and not x64:
        return array.astype(np.int32, copy=False)
    return array


def _jax():
    jax = sys.modules.get("jax")
    if jax is None:
        import jax  # noqa: PLC0415 - only an adapter that declares JAX arrays gets here
    return jax


# -- out: the adapter's arrays -> NumPy ---------------------------------------------------------------------------
def from_framework(value, conventions):
    """A call's result with every ``jax.Array`` as a NumPy array (a copy on the host); ``BoundaryValueError`` for
    a value that cannot come back. Unchanged for a NumPy adapter (a tensor it returns is the boundary's to refuse)."""
    if declared_arrays(conventions) == "jax" and (jax := sys.modules.get("jax")) is not None:
        value = _convert_out(value, jax, 0)
    return widen(value) if declared_dtype(conventions) == "bfloat16" else value


def _convert_out(value, jax, depth: int):
    if depth > 32:
        return value
    if isinstance(value, jax.core.Tracer):
        raise BoundaryValueError(
            f"a traced value ({type(value).__name__} {getattr(value, 'aval', '')})",
            "a value leaked out of a JAX transformation (jax.jit, grad, vmap, nnx.jit): return the transformed"
            " function's result, not a value kept from inside it while it was traced")
    if isinstance(value, jax.Array):
        return _host_copy(value)
    if isinstance(value, dict):
        return {key: _convert_out(item, jax, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_convert_out(item, jax, depth + 1) for item in value)
    return value


def _host_copy(array) -> np.ndarray:
    if array.is_deleted():
        raise BoundaryValueError(
            f"a jax.Array whose buffer was deleted (shape {array.shape})",
            "its buffer was donated to a jitted call (donate_argnums) or deleted before it was returned")
    if not array.is_fully_addressable:
        raise BoundaryValueError(
            f"a jax.Array on devices this process cannot read ({array.sharding})",
            "it is sharded over several processes: gather it (jax.experimental.multihost_utils.process_allgather)"
            " before returning it")
    return np.array(array)  # a copy: the suite's array never aliases a buffer the adapter may donate later


# -- compile time -------------------------------------------------------------------------------------------------
class CompileClock:
    """How long JAX has spent compiling, from its monitoring events: ``total`` seconds ended so far, and whether a
    compilation is running now (``compiling``; they nest: a jitted function traced inside another). ``on_start()``
    and ``on_end(seconds)``, if given, hear each outermost one start and end: an isolated worker tells the grader,
    whose proxy keeps a clock of its own from that news (``started``, ``ended``)."""

    def __init__(self, on_start=None, on_end=None):
        self.total, self.on_start, self.on_end = 0.0, on_start, on_end
        self.depth = 0
        self.since: float | None = None  # time.monotonic() when the running outermost compilation began
        self.listening = False

    def listen(self) -> bool:
        """Register with JAX's monitoring once JAX is imported; True when listening."""
        jax = sys.modules.get("jax")
        if self.listening or jax is None or not hasattr(jax, "monitoring"):
            return self.listening
        jax.monitoring.register_scalar_listener(self._started)
        jax.monitoring.register_event_duration_secs_listener(self._ended)
        self.listening = True
        return True

    def _started(self, event: str, value: float, **kwargs) -> None:
        if event in COMPILE_EVENTS:
            self.started()

    def _ended(self, event: str, duration: float, **kwargs) -> None:
        if event in COMPILE_EVENTS:
            self.ended(float(duration))

    def started(self) -> None:
        self.depth += 1
        if self.depth == 1:
            self.since = time.monotonic()
            if self.on_start is not None:
                self.on_start()

    def ended(self, seconds: float) -> None:
        self.depth = max(self.depth - 1, 0)
        if self.depth == 0:  # a nested one's time is inside the outer one's
            self.since = None
            self.total += seconds
            if self.on_end is not None:
                self.on_end(seconds)

    @property
    def compiling(self) -> bool:
        return self.depth > 0


CLOCK = CompileClock()


def compile_clock_of(candidate) -> CompileClock | None:
    """The clock of the JAX compilations a candidate's calls make: its isolated worker's (as the worker tells them),
    else this process's once JAX is imported; None for a candidate that compiles nothing the suite can see."""
    clock = getattr(getattr(candidate, "adapter", None), "compile_clock", None)
    if isinstance(clock, CompileClock):
        return clock
    return CLOCK if CLOCK.listen() else None


class Allowance:
    """The compile time one call is given back (up to MAX_CREDIT_S): when its limit runs out, ``extension`` says by
    how much to push it: ``poll`` while a compilation runs (waited time is credit spent ahead), else what the
    compilations since the call began took and was not yet given; 0 when nothing is owed."""

    def __init__(self, clock: CompileClock = CLOCK):
        clock.listen()  # the process's own JAX; a proxy's clock hears its worker's instead
        self.clock, self.start, self.used = clock, clock.total, 0.0

    def extension(self, poll: float) -> float:
        if self.clock.compiling:
            owed = poll
        else:
            owed = (self.clock.total - self.start) - self.used
        owed = min(owed, MAX_CREDIT_S - self.used)
        if owed <= 0:
            return 0.0
        self.used += owed
        return owed
