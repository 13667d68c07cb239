"""Several mutants composed into one adapter: how the catalogue's building blocks combine (``compose``).

The diagnosis (``conformance/diagnosis/combine.py``) asks such compositions the failing question when no single
mutant answers like a candidate; how the mutants are built, and so how they compose, is this package's own
knowledge. Two mutants compose when each one's bug lives in a part of the implementation the other leaves alone:

* NumPy component mutants (``NumpyAdapter`` subclasses, one formula a method): by multiple inheritance,
  when the names each defines below ``NumpyAdapter`` are disjoint and neither carries instance state;
* torch mutants (the reference with changed ``Formulas``, some a ``ReferenceAdapter`` subclass): their
  changed formula fields must be disjoint, and so must the names their subclasses define below the
  classes they share (two ``LayerSwap`` subclasses compose when one swaps the encoder layer and the
  other the decoder layer; a ``ModelSwap`` and a ``LayerSwap`` both define ``build_model``: they do not).

A NumPy and a torch mutant are two implementations, not two methods of one, and no class could take its
formulas from both; two kinds of NumPy mutant cross over, each becoming one formula of the torch reference:

* a bug only in the positional table (the methods ``NumpyAdapter.sinusoids`` composes, the table its part
  returns and its model adds) becomes its ``positional_encoding``, so a PE bug composes with a torch one
  (Marian's sines-then-cosines with its finite fill of hidden scores);
* a bug only in the LayerNorm's variance or denominator (the pieces ``NumpyAdapter.layer_norm`` composes)
  becomes its ``layer_norm``, so a LayerNorm formula composes with a torch bug in where the norms sit (the
  annotated transformer's unbiased std with eps added to it, in pre-norm layers). That formula is computed in
  NumPy: a combination with it answers no question that needs a gradient through it (a training step).

Nothing here imports torch until a torch mutant is composed: NumPy mutants compose without it. The leading
underscore keeps this module out of ``mutants.names()``; ``mutants.compose`` is its public name.
"""

from __future__ import annotations

import dataclasses
import functools


def _own_names(cls: type, base: type, shared: set[type]) -> set[str]:
    """The attributes ``cls`` defines below ``base``, leaving out the classes in ``shared`` (common bases)."""
    defined = set()
    for klass in cls.__mro__:
        if issubclass(klass, base) and klass is not base and klass not in shared:
            defined |= {name for name in vars(klass) if name not in ("__module__", "__doc__", "__qualname__",
                                                                     "__firstlineno__", "__static_attributes__")}
    return defined


def _disjoint_classes(classes: list[type], base: type) -> bool:
    """Each class defines names of its own (below ``base`` and their shared bases) no other one defines,
    and none defines ``__init__`` (its instance could not be built like the original)."""
    mros = [set(cls.__mro__) for cls in classes]
    shared = set.intersection(*mros)
    seen: set[str] = set()
    for cls in classes:
        own = _own_names(cls, base, shared)
        if own & seen or "__init__" in own:
            return False
        seen |= own
    return True


def _combined_class(classes: list[type], base: type) -> type:
    """The one class that carries every bug: the most derived one, or a multiple-inheritance child."""
    distinct = [cls for cls in dict.fromkeys(classes) if cls is not base]
    if not distinct:
        return base
    if len(distinct) == 1:
        return distinct[0]
    return type("+".join(cls.__name__ for cls in distinct), tuple(distinct), {})


# -- NumPy component mutants -------------------------------------------------------------------------


def _compose_numpy(adapters: list):
    from conformance.implementations.numpy_impl.adapter import NumpyAdapter

    if not all(isinstance(a, NumpyAdapter) for a in adapters):
        return None
    if any(vars(a) for a in adapters):  # built with arguments or with state set after: not rebuilt here
        return None
    classes = [type(a) for a in adapters]
    if not _disjoint_classes(classes, NumpyAdapter):
        return None
    return _combined_class(classes, NumpyAdapter)()


# -- torch mutants on the reference ------------------------------------------------------------------

STANDARD_STATE = {"formulas", "name", "dtype", "torch_dtype", "autocast"}  # what ReferenceAdapter.__init__ sets


def _changed_formulas(formulas, reference) -> dict:
    return {field.name: getattr(formulas, field.name) for field in dataclasses.fields(reference)
            if getattr(formulas, field.name) is not getattr(reference, field.name)}


def _compose_torch(adapters: list, name: str, carried: dict | None = None):
    """The torch mutants ``adapters`` as one, with the formulas ``carried`` over from NumPy mutants, or None."""
    try:
        from conformance.implementations.reference.adapter import ReferenceAdapter
        from conformance.implementations.reference.model import REFERENCE
    except ImportError:  # no torch: no torch mutants either
        return None
    if not adapters or not all(isinstance(a, ReferenceAdapter) for a in adapters):
        return None
    if any(set(vars(a)) - STANDARD_STATE for a in adapters) or len({a.dtype for a in adapters}) != 1:
        return None
    merged: dict = dict(carried or {})
    for adapter in adapters:
        changes = _changed_formulas(adapter.formulas, REFERENCE)
        if changes.keys() & merged.keys():
            return None  # two bugs in one formula: which one wins is not a composition
        merged |= changes
    classes = [type(a) for a in adapters]
    if not _disjoint_classes(classes, ReferenceAdapter):
        return None
    cls = _combined_class(classes, ReferenceAdapter)
    return cls(formulas=dataclasses.replace(REFERENCE, **merged), name=name, dtype=adapters[0].dtype)


# -- NumPy positional-table and LayerNorm-formula mutants carried into the torch reference -------------

TABLE_METHODS = {"pe_positions", "pe_frequencies", "pe_interleave"}  # what NumpyAdapter.sinusoids composes
LAYER_NORM_METHODS = {"layer_norm_variance", "layer_norm_denominator"}  # what NumpyAdapter.layer_norm composes


def _compose_across(adapters: list, name: str):
    """NumPy mutants whose bugs all lie in the positional table or the LayerNorm formula, composed with torch
    mutants: each becomes the reference's formula of that name. None unless every NumPy mutant is of that kind."""
    from conformance.implementations.numpy_impl.adapter import NumpyAdapter

    formulas = [a for a in adapters if isinstance(a, NumpyAdapter)]
    others = [a for a in adapters if not isinstance(a, NumpyAdapter)]
    if not formulas or not others:
        return None
    numpy = _compose_numpy(formulas)  # one, or several by multiple inheritance; None if stateful or overlapping
    own = set() if numpy is None else _own_names(type(numpy), NumpyAdapter, set())
    if not own or not own <= TABLE_METHODS | LAYER_NORM_METHODS:  # stateful, or a bug elsewhere (a part's, the model's)
        return None
    carried = {}
    if own & TABLE_METHODS:
        carried["positional_encoding"] = functools.partial(_table_in_torch, numpy)
    if own & LAYER_NORM_METHODS:
        carried["layer_norm"] = functools.partial(_layer_norm_in_torch, numpy)
    return _compose_torch(others, name, carried=carried)


def _table_in_torch(adapter, n: int, d_model: int):
    """The NumPy mutant's positional table as the reference's formula gives it: a float64 tensor (n, d_model)."""
    import numpy as np
    import torch

    return torch.from_numpy(np.array(adapter.sinusoids(int(n), int(d_model)), dtype=np.float64))


def _layer_norm_in_torch(adapter, x, gamma, beta, eps: float):
    """The NumPy mutant's LayerNorm as the reference's formula gives it: computed in float64, returned in ``x``'s
    dtype. It carries no gradient, so it refuses a tensor that needs one (the combination then answers nothing)."""
    import numpy as np
    import torch

    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, gamma, beta)):
        raise NotImplementedError("a LayerNorm carried from a NumPy mutant has no gradient")
    arrays = (t.detach().cpu().numpy().astype(np.float64) for t in (x, gamma, beta))
    return torch.from_numpy(np.asarray(adapter.layer_norm(*arrays, float(eps)), np.float64)).to(x.dtype)


# -- the catalogue's combinations ----------------------------------------------------------------------


def compose(adapters: list, name: str):
    """One adapter with every bug of ``adapters`` (the catalogue's mutants' ``adapter``), named ``name``, or None
    when they do not compose (the module's docstring)."""
    if len(adapters) < 2:
        return None
    # One family, or NumPy positional-table bugs carried into the torch reference (the module's docstring).
    return _compose_numpy(adapters) or _compose_torch(adapters, name) or _compose_across(adapters, name)
