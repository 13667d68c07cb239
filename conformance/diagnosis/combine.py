"""Several known bugs at once: the catalogue's mutants composed into one candidate.

Real code deviates in several places at once; ``matching.combined_matches`` asks such compositions the
failing question when no single mutant answers like the candidate. Two mutants compose when each one's
bug lives in a part of the implementation the other leaves alone:

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

Every composed candidate is cached, keyed by its sorted names.
"""

from __future__ import annotations

import dataclasses
import functools

from conformance.diagnosis.catalogue import KnownBug, _loaded, named

SEPARATOR = "+"  # a combination's name: its mutants' names, sorted, joined ("a+b")


def combination_name(names) -> str:
    return SEPARATOR.join(sorted(names))


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
    return type(SEPARATOR.join(cls.__name__ for cls in distinct), tuple(distinct), {})


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

STANDARD_STATE = {"formulas", "name", "dtype", "torch_dtype"}  # what ReferenceAdapter.__init__ sets


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
    """One adapter with every bug of ``adapters``, or None when they do not compose."""
    if len(adapters) < 2:
        return None
    # One family, or NumPy positional-table bugs carried into the torch reference (the module's docstring).
    return _compose_numpy(adapters) or _compose_torch(adapters, name) or _compose_across(adapters, name)


@dataclasses.dataclass(frozen=True)
class Combination:
    names: tuple[str, ...]  # sorted
    bug: str  # the bugs' first lines, joined
    candidate: object  # a conformance.boundary.candidate.Candidate

    @property
    def name(self) -> str:
        return combination_name(self.names)


def combined_bug(bugs: list[str]) -> str:
    """"<bug a>; and <bug b>": each bug's own first line, without its full stop (they contain "+" themselves)."""
    return "; and ".join(bug.rstrip(".") for bug in bugs)


@functools.cache
def combination(names: tuple[str, ...]) -> Combination | None:
    """The catalogue's mutants ``names`` (sorted) composed into one candidate, or None when they do not
    compose (or one of them is not in the catalogue)."""
    from conformance.boundary.candidate import Candidate

    by_name = {known.name: known for known in _loaded()}
    if len(set(names)) != len(names) or not all(name in by_name for name in names):
        return None
    known: list[KnownBug] = [by_name[name] for name in names]
    label = combination_name(names)
    if not all(hasattr(bug.candidate, "adapter") for bug in known):
        return None  # a stand-in catalogue (tests): nothing to compose
    adapter = compose([bug.candidate.adapter for bug in known], f"mutant:{label}")
    if adapter is None:
        return None
    return Combination(tuple(names), combined_bug([bug.bug for bug in known]),
                       named(Candidate(adapter, name=f"mutant:{label}", timeout_s=None), f"mutant:{label}"))


def combine(*names: str) -> Combination | None:
    """``combination`` for names in any order."""
    return combination(tuple(sorted(names)))
