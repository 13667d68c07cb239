"""Whose code answered: a part the suite's helpers supplied, and an answer a helper converted.

The helpers of ``conformance.adapters`` write code an adapter may use in place of the implementation's own
(``TorchModel``'s greedy loop, ``PaperRecipe``'s optimiser, schedule and loss, ``torch_layer_norm``...) and
converters of its answers (``mean_from_sum``, ``cross_entropy_from_kl``, ``rate_from_lambda_lr``). A report must
never credit the implementation with what the suite supplied, nor pass a convention a converter hid, so both
leave a record here:

* **supplied**: a helper marks what it supplies (``mark``), on the function (a part) or, for a model's parts, on
  the object as ``__conformance_supplied__ = {part: record}``. A record says who supplied it (``by``), what it
  supplies (``supplies``: aspects of the part, ``"*"`` for the whole part), with which ``settings``, in words
  (``note``). The candidate reads the record of every part it calls (``record_of``).
* **converted**: a converter notes each conversion while a part runs (``note_conversion``), with the deviation
  from the lessons it stands for, if any (a sum over tokens is one; reading LambdaLR from 0 is not). The
  candidate gathers them around each call (``conversions``).

A check judges *aspects*: a part (``"model.greedy_decode"``) or one aspect of it
(``"model.train_step:loss"``); ``rests_on_supplied`` says whether every aspect a check judges was supplied.
This module is plain data and holds no framework: adapters, the candidate and the isolated worker all use it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

ATTRIBUTE = "__conformance_supplied__"
WHOLE = "*"
# The aspects of train_step: the optimiser, the schedule it follows, the loss it minimises, the loss value it
# reports (what a converter converts), and the gradients of the implementation's own forward and backward, which
# no helper supplies: a check that judges them is always the implementation's.
TRAIN_STEP_ASPECTS = ("optimizer", "schedule", "loss", "reported_loss", "gradients")


def record(by: str, note: str, *, supplies: Iterable[str] = (WHOLE,), settings: dict | None = None) -> dict:
    """A provenance record: who supplied the part, what of it, with which settings, in words."""
    return {"by": by, "supplies": list(supplies), "settings": dict(settings or {}), "note": note}


def mark(fn: Callable, by: str, note: str, **options) -> Callable:
    """``fn`` marked as supplied by ``by`` (a function part such as ``torch_layer_norm``); returns ``fn``."""
    setattr(fn, ATTRIBUTE, record(by, note, **options))
    return fn


def marked(by: str, note: str, **options) -> Callable:
    """``mark`` as a decorator."""
    return lambda fn: mark(fn, by, note, **options)


def copy_mark(source: Callable, target: Callable) -> Callable:
    """``target`` (a wrapper of ``source``) with ``source``'s record, if it has one."""
    found = getattr(source, ATTRIBUTE, None)
    if isinstance(found, dict) and "by" in found:
        setattr(target, ATTRIBUTE, found)
    return target


def record_of(method, owner, part: str) -> dict | None:
    """The record of ``part``, called as ``method`` on ``owner`` (an adapter or a model): the function's own
    mark, else the owner's ``__conformance_supplied__[part]``; None when the part is the implementation's."""
    found = getattr(method, ATTRIBUTE, None)
    if isinstance(found, dict) and "by" in found:
        return found
    table = getattr(owner, ATTRIBUTE, None)
    found = table.get(part) if isinstance(table, dict) else None
    return found if isinstance(found, dict) and "by" in found else None


def static_records(adapter, parts: Iterable[str]) -> dict[str, dict]:
    """{part: record} known without a call: the adapter's marked functions and its table (which a helper such
    as ``TorchAdapter`` fills for the model's parts too: ``"model.greedy_decode"``)."""
    table = getattr(adapter, ATTRIBUTE, None)
    found = {part: dict(rec) for part, rec in (table.items() if isinstance(table, dict) else ())
             if isinstance(rec, dict) and "by" in rec}
    for part in parts:
        if not part.startswith("model."):
            rec = getattr(getattr(adapter, part, None), ATTRIBUTE, None)
            if isinstance(rec, dict) and "by" in rec:
                found[part] = dict(rec)
    return found


# --------------------------------------------------------------------------------------------------
# Conversions, noted while a part runs
# --------------------------------------------------------------------------------------------------

_open: list[list[dict]] = []  # one list per call being watched (calls do not nest, but a helper may call a part)


def note_conversion(converter: str, aspect: str, what: str, *, deviation: str | None = None, **values) -> None:
    """A converter's account of one conversion: ``aspect`` ("loss", "schedule"), ``what`` it converted from, in
    words, and the catalogue entry (``implementations/mutants/``) the implementation's own convention is, when it
    differs from the lessons'. Outside a watched call it is dropped."""
    if _open:
        entry = {"converter": converter, "aspect": aspect, "what": what, "deviation": deviation}
        _open[-1].append({**entry, **{k: v for k, v in values.items() if isinstance(v, int | float | str)}})


@contextlib.contextmanager
def conversions():
    """Gather the conversions noted while the block runs: ``with conversions() as found: part(...)``."""
    found: list[dict] = []
    _open.append(found)
    try:
        yield found
    finally:
        _open.remove(found)


def distinct(entries: Iterable[dict]) -> list[dict]:
    """One entry per (converter, aspect, deviation), in order, without the per-call values."""
    seen: dict[tuple, dict] = {}
    for entry in entries:
        key = (entry.get("converter"), entry.get("part"), entry.get("aspect"), entry.get("deviation"))
        seen.setdefault(key, {k: entry.get(k) for k in ("converter", "part", "aspect", "what", "deviation")})
    return list(seen.values())


# --------------------------------------------------------------------------------------------------
# What a check judges, and whether the suite supplied it
# --------------------------------------------------------------------------------------------------

INFRASTRUCTURE = ("build_model", "model.load_weights", "model.dump_weights", "model.unmapped_parameters")
"""Parts a check needs to reach the one it judges: building a model and moving weights in and out."""


def judged_aspects(requires: Iterable[str], judges: Iterable[str] | None = None) -> list[str]:
    """What a check's verdict is about: its ``judges`` marker, else the parts it requires beyond the
    infrastructure."""
    if judges:
        return list(judges)
    return [part for part in requires if part not in INFRASTRUCTURE]


def split(aspect: str) -> tuple[str, str]:
    """``"model.train_step:loss"`` -> ("model.train_step", "loss"); a whole part -> (part, "*")."""
    part, _, sub = aspect.partition(":")
    return part, sub or WHOLE


def supplied(aspect: str, records: dict[str, dict]) -> bool:
    """Whether the suite supplied ``aspect``, given the records of the parts called."""
    part, sub = split(aspect)
    rec = records.get(part)
    return rec is not None and (WHOLE in rec["supplies"] or sub in rec["supplies"])


def rests_on_supplied(judged: list[str], records: dict[str, dict]) -> bool:
    """Whether every aspect a check judges was supplied: its verdict is then the suite's, not the candidate's.
    Only parts the check called have records, so an aspect of a part it never called is not supplied."""
    return bool(judged) and all(supplied(aspect, records) for aspect in judged)


def judged_conversions(judged: list[str], entries: list[dict]) -> list[dict]:
    """The conversions with a deviation that touched an aspect the check judges."""
    wanted = {split(a) for a in judged}
    return [e for e in entries if e.get("deviation") and
            ((e.get("part"), e.get("aspect")) in wanted or (e.get("part"), WHOLE) in wanted)]
