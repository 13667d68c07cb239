"""Published numbers, read from ``fixtures/published.toml`` by id: checks never type a golden number.

``value(id)`` is the number as the lesson prints it; ``tolerance(id)`` is half a unit of its last
printed digit. A check reads a fact through ``check.published(id)``, which records it: the report's
"published numbers reproduced" line counts the facts the checks read and found reproduced, out of the facts a
candidate is asked for (``asked_ids``: the reproducible ones but those marked ``not_asked``, with the reason why).
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import numpy as np

from conformance.tolerances import FLOAT_RTOL, Tolerance, printed, printed_significant


def default_path() -> Path:
    import conformance.fixtures

    return Path(conformance.fixtures.__file__).parent / "published.toml"


def load(path: str | Path | None = None) -> dict:
    """``published.toml`` (or ``path``) whole, refusing an unknown schema."""
    with open(path or default_path(), "rb") as handle:
        data = tomllib.load(handle)
    if data.get("schema_version") != 1:
        raise ValueError(f"unsupported schema_version {data.get('schema_version')!r}")
    return data


def load_facts(path: str | Path | None = None) -> list[dict]:
    """The facts of ``published.toml`` (or of ``path``)."""
    return load(path)["fact"]


@functools.cache
def not_asked_reasons() -> dict[str, str]:
    """Why no candidate can be asked for a reproducible fact marked ``not_asked``: its key -> the reason."""
    return load()["not_asked_reasons"]


@functools.cache
def asked_ids() -> frozenset[str]:
    """The facts a candidate is asked for: the reproducible ones, but those no candidate can reproduce."""
    return frozenset(fact_id for fact_id, entry in facts().items()
                     if entry["reproducible"] and "not_asked" not in entry)


@functools.cache
def facts() -> dict[str, dict]:
    return {entry["id"]: entry for entry in load_facts()}


def fact(fact_id: str) -> dict:
    try:
        return facts()[fact_id]
    except KeyError:
        raise KeyError(f"no published fact {fact_id!r} in fixtures/published.toml") from None


def value(fact_id: str):
    """The number as printed. A check asks ``check.published(fact_id)`` instead, which also records the use."""
    return fact(fact_id)["value"]


def bound(fact_id: str):
    """The value with its symbolic sizes bound: ``[1, 4, "n", 16]`` with ``args.n = 5`` is ``[1, 4, 5, 16]``."""
    entry = fact(fact_id)
    args, value = entry.get("args", {}), entry["value"]
    if isinstance(value, list):
        return [args.get(item, item) if isinstance(item, str) else item for item in value]
    return value


def of_kind(verify: str, *, reproducible: bool = True) -> list[dict]:
    """Every fact the verifier checks with ``verify`` (e.g. "lrate"), in file order."""
    return [entry for entry in facts().values() if entry["verify"] == verify and entry["reproducible"] == reproducible]


def tolerance(fact_id: str, *, computed_in: str = "float32") -> Tolerance:
    """Half a unit in the last printed place: decimals, or significant digits of the printed value."""
    entry = fact(fact_id)
    if "decimals" in entry:
        return printed(entry["decimals"], computed_in=computed_in)
    if "significant" in entry:
        return printed_significant(entry["significant"], rounded_magnitude(entry["value"]), computed_in=computed_in)
    if isinstance(entry["value"], float):  # printed exactly, but a float: its float32 representation (or the dtype's)
        rtol = max(1e-6, FLOAT_RTOL.get(computed_in, 0.0))
        return Tolerance(rtol, 0.0, f"exact value, compared at {'float32' if rtol == 1e-6 else computed_in} precision")
    return Tolerance(0.0, 0.0, "exact")


def rounded_magnitude(value) -> float:
    """The largest of the numbers a value's significant digits round: a whole number printed in full beside them (the
    step of "step 100   lrate 1.747e-05") is exact, and would make half a unit of the 4th digit 0.05."""
    numbers = [abs(v) for v in np.ravel(value)]
    rounded = [v for v in numbers if v != int(v)]
    return max(rounded or numbers)


def cite(fact_id: str) -> str:
    """Where a number was printed, for messages: document, section."""
    entry = fact(fact_id)
    return f"{entry['document']}, {entry['section']}"


def listing_lines(listing: str) -> list[str]:
    """The ids of a listing's printed lines, in order."""
    entries = [e for e in of_kind("listing_line") if e["args"]["listing"] == listing]
    return [e["id"] for e in sorted(entries, key=lambda e: e["args"]["line"])]


# Shapes the shape checks observe as the parts return them; the rest are measured by the checks of their sections
# (Q/K/V per head in §3.2.2, the FFN's hidden layer in §3.3, the embedded inputs in §3.4), and the token-id inputs,
# which the suite hands the candidate, are not asked (not_asked).
OBSERVED_TENSORS = {
    "memory", "logits", "embedding_table", "output_projection", "enc_self_weights", "dec_self_weights",
    "cross_weights", "cross_per_head", "dec_self_per_head", "hidden_cells",
}
