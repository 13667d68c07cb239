"""What an adapter declares, checked before any check runs: its conventions and the names of its parts.

In process, ``loading`` reads them off the adapter; an isolated adapter's come in the worker's hello
(``isolation.proxy``). Both call ``check_declarations``, so both refuse the same declarations with the same fix.
"""

from __future__ import annotations

import difflib

from conformance.adapter import ADAPTER_PARTS, Conventions
from conformance.boundary.isolation.frameworks import DTYPES, HALF, HOW
from conformance.errors import LoadError
from conformance.problems import supports


def check_declarations(conventions: Conventions | None, public: list[str], spec: str) -> list[str]:
    """``validate`` on what an adapter declares: its conventions (None: none, or not ``Conventions``) and its
    public callables' names. An isolated adapter's are read from the worker's hello."""
    if conventions is None:
        raise LoadError(
            f"{spec}: the adapter declares no conventions. Fix: add"
            ' `conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework=...)`'
            " (from conformance import Conventions); see docs/adapter-protocol.md"
        )
    if conventions.arrays not in ("numpy", "jax"):
        raise LoadError(f"{spec}: Conventions(arrays={conventions.arrays!r}) is not an array type the boundary"
                        ' converts. Fix: arrays="numpy" (the default: convert in the adapter) or arrays="jax"')
    if conventions.dtype not in DTYPES or not isinstance(conventions.dtypes, dict) or any(
            dtype not in HALF or how not in HOW for dtype, how in conventions.dtypes.items()):
        raise LoadError(f"{spec}: Conventions(dtype={conventions.dtype!r}, dtypes={conventions.dtypes!r}) is not"
                        f" usable. Fix: dtype one of {', '.join(DTYPES)}; dtypes maps {' or '.join(HALF)} to"
                        f" {' or '.join(map(repr, HOW))}, and the adapter defines with_dtype(dtype)")
    # Conventions copied from an adapter that has with_dtype (the reference's) onto one without: usable in float32;
    # a --dtype run finds it not implemented (candidate.dtype_refusal), naming the same fix
    warnings = [f"{spec}: Conventions(dtypes={conventions.dtypes!r}) declares half precision, but the adapter has no"
                " with_dtype(dtype): a --dtype run finds every part not implemented. Fix: define it (return the"
                " adapter computing in dtype), or drop dtypes; docs/adapter-protocol.md"] \
        if conventions.dtypes and "with_dtype" not in public else []
    problems = supports.validate(conventions.supports)
    if problems:
        raise LoadError(f"{spec}: Conventions(supports=...) is not usable: {'; '.join(problems)}. Fix the"
                        " declaration; docs/adapter-protocol.md lists the features")
    for name in public:
        if name not in ADAPTER_PARTS:
            close = difflib.get_close_matches(name, ADAPTER_PARTS, n=1, cutoff=0.8)
            if close:
                warnings.append(f"{spec}: method {name!r} is not a part; did you mean {close[0]!r}?")
    if not any(name in ADAPTER_PARTS for name in public):
        raise LoadError(
            f"{spec}: the adapter provides none of the parts ({', '.join(ADAPTER_PARTS)}). Fix: define at"
            " least one method; see implementations/template.py"
        )
    return warnings
