"""A few parts in JAX, declared with ``Conventions(arrays="jax")``: jax.Arrays in, jax.Arrays out
(tests/test_jax_boundary.py). ``variant`` picks a misbehaviour: ``leak`` returns a tracer kept from inside a
jitted function, ``deleted`` an array whose buffer was donated, ``slow`` a layer norm that runs 1.5 s after
compiling, ``slow_compile`` one whose tracing takes 1.5 s; ``float64`` declares float64."""

import math
import os
import time

import jax
import jax.numpy as jnp

from conformance import Conventions

VARIANT = os.environ.get("JAX_PARTS_VARIANT", "")
seen: dict = {}


@jax.jit
def _pe(positions, frequencies):
    angles = positions[:, None] * frequencies[None, :]
    return jnp.stack([jnp.sin(angles), jnp.cos(angles)], axis=-1).reshape(positions.shape[0], -1)


def _normalise(x, gamma, beta, eps):
    centred = x - x.mean(-1, keepdims=True)
    return gamma * centred / jnp.sqrt((centred**2).mean(-1, keepdims=True) + eps) + beta


def _traced_slowly(x, gamma, beta, eps):
    time.sleep(1.5)  # Python while JAX traces: compile time, not the call's
    return _normalise(x, gamma, beta, eps)


class JaxParts:
    conventions = Conventions(mask="keep", dtype="float64" if VARIANT == "float64" else "float32", framework="jax",
                              arrays="jax")

    def positional_encoding(self, n, d_model):
        seen["dtype"] = None
        frequencies = jnp.exp(jnp.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        return _pe(jnp.arange(n, dtype=frequencies.dtype), frequencies)

    def layer_norm(self, x, gamma, beta, eps):
        seen["types"] = (type(x), x.dtype)
        if VARIANT == "leak":
            kept = []

            @jax.jit
            def keep(x):
                kept.append(x)
                return x

            keep(x)
            return kept[0]
        if VARIANT == "deleted":
            out = jax.jit(_normalise, static_argnums=3)(x, gamma, beta, eps)
            out.delete()
            return out
        if VARIANT == "slow":
            time.sleep(1.5)
        if VARIANT == "slow_compile":
            return jax.jit(_traced_slowly, static_argnums=3)(x, gamma, beta, eps)
        return jax.jit(_normalise, static_argnums=3)(x, gamma, beta, eps)


adapter = JaxParts()
