"""The names of the implementations that ship with the suite: built-ins and ``mutant:<module>``.

``resolve`` turns one into the ``module:attribute`` it stands for; any other spec (``package.module:attr``,
``path/to/adapter.py``) is returned as it is. ``loading`` imports what a spec names, in this process;
``isolation`` hands the resolved spec to a worker process.
"""

from __future__ import annotations

_IMPLS = "conformance.implementations"
BUILTINS = {
    "reference": f"{_IMPLS}.reference.adapter:adapter",
    "numpy": f"{_IMPLS}.numpy_impl.adapter:adapter",
    "reference-float64": f"{_IMPLS}.reference.adapter:adapter_float64",
    "torch-fused-qkv": f"{_IMPLS}.variants.fused_qkv:adapter",
    "torch-nn-transformer": f"{_IMPLS}.torch_nn.adapter:torch_nn_default",
    "torch-nn-transformer-fixed": f"{_IMPLS}.torch_nn.adapter:torch_nn_fixed",
    # Flax NNX and optax, installed by the jax extra; loading names the extra if absent.
    "jax": f"{_IMPLS}.jax_impl.adapter:adapter",
    # Third-party code from PyPI, installed by an extra (docs/third-party.md); loading names the extra if absent.
    "hf-marian": f"{_IMPLS}.thirdparty.hf_marian:adapter",
    "hf-fsmt": f"{_IMPLS}.thirdparty.hf_fsmt:adapter",
    "opennmt-py": f"{_IMPLS}.thirdparty.onmt_py:adapter",
    # Sockeye cannot be an extra (it declares torch<1.14, numpy<2): requirements-sockeye.txt, installed --no-deps.
    "sockeye": f"{_IMPLS}.thirdparty.sockeye:adapter",
    # Keras holds one backend per process: certify one of these per process, or with --isolate.
    "keras-hub-jax": f"{_IMPLS}.thirdparty.keras_hub_jax:adapter",
    "keras-hub-torch": f"{_IMPLS}.thirdparty.keras_hub_torch:adapter",
}
MUTANT_PREFIX = "mutant:"


def builtin_names() -> list[str]:
    return sorted(BUILTINS)


def resolve(spec: str) -> str:
    """A built-in name or ``mutant:<name>`` -> ``module:attribute``; anything else is returned as is."""
    if spec in BUILTINS:
        return BUILTINS[spec]
    if spec.startswith(MUTANT_PREFIX):
        return f"{_IMPLS}.mutants.{spec[len(MUTANT_PREFIX) :]}:adapter"
    return spec
