"""Attack: look up instead of compute. Read the suite's golden files and published numbers from the
installed package, and delegate to the suite's own reference implementation and oracle.

Expected: in the worker the suite's fixtures, implementations and oracle cannot be read (Landlock),
so the look-ups fail and it falls back to its own (wrong) answers: the PE and LayerNorm checks fail.
"""

import importlib.util
from pathlib import Path

import numpy as np

from conformance import Conventions


def suite_file(package: str, name: str) -> Path:
    spec = importlib.util.find_spec(package)
    return Path(spec.submodule_search_locations[0]) / name


def published_text() -> str:
    try:
        return suite_file("conformance.fixtures", "published.toml").read_text()
    except OSError:
        return ""


def the_reference():
    try:
        from conformance.implementations.reference.adapter import adapter as reference

        return reference
    except Exception:
        return None


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        if published_text() and the_reference() is not None:
            return the_reference().positional_encoding(n, d_model).astype(np.float64)
        return np.zeros((n, d_model))

    def layer_norm(self, x, gamma, beta, eps):
        reference = the_reference()
        if reference is not None:
            return reference.layer_norm(x, gamma, beta, eps).astype(np.float64)
        try:
            from conformance.problems import oracle  # noqa: F401 - the suite's float64 formulas

            return x  # (a real cheat would call it; reading it is what is refused)
        except Exception:
            return x * 0.0


adapter = Adapter()
