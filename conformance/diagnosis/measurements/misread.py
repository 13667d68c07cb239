"""The paper's formulas on what the candidate reads otherwise: its weights swapped, transposed or reshaped, a table's
row zeroed, its input sequences reversed.

A formula neighbour changes how the paper computes; this changes what it computes on. The transformations are
generated from the canonical weights the failing question hands over, never from a list of bugs: every two groups
of one layer with the same names and shapes (norm2 and norm3, the self- and the cross-attention), every two weights
of one group with the same shape (W_Q and W_K, gamma and beta), every square matrix transposed, every table read
through a reshape where the paper transposes it, a table's special rows (padding, start, end) zeroed, the source or
the target read in reverse. A layer's transformation applies to every layer of its stack alike (a slip in code is
written once and runs in every layer). The paper, handed the transformed weights, must answer as the candidate on
the failing problem, on the second and on a third drawn after the search, as a formula neighbour must.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel

MAX_SEARCH_SECONDS = 8.0
LAYER = re.compile(r"^((?:encoder|decoder)\.\d+\.)(.*)$")
WEIGHTED = ("multi_head_attention", "feed_forward", "encoder_layer", "decoder_layer", "attention_sublayer",
            "ffn_sublayer")
TABLES = ("E", "E_src", "E_tgt", "W_out")


@dataclass(frozen=True)
class Misreading:
    """One transformation of what the paper is handed: ``weights`` maps the canonical weights to the transformed,
    ``inputs`` maps (src, tgt_in) of a model's call; ``text`` says it as the candidate's reading."""

    key: str
    text: str
    weights: Callable[[dict], dict] | None = None
    inputs: Callable[[np.ndarray | None, np.ndarray | None], tuple] | None = None


class MisreadModel(NumpyModel):
    def load_weights(self, weights):
        misreading = self.adapter.misreading
        super().load_weights(misreading.weights(dict(weights)) if misreading.weights else weights)

    def encode(self, src, *, attention=None):
        return super().encode(self._inputs(src, None)[0], attention=attention)

    def decode(self, tgt_in, memory, src, *, attention=None):
        src_read, tgt_read = self._inputs(src, tgt_in)
        return super().decode(tgt_read, memory, src_read, attention=attention)

    def _inputs(self, src, tgt_in):
        if self.adapter.misreading.inputs is None or getattr(self.adapter, "_inside", False):
            return src, tgt_in
        return self.adapter.misreading.inputs(np.asarray(src), None if tgt_in is None else np.asarray(tgt_in))

    def greedy_decode(self, src, max_len):  # the decoder's own outputs are fed back as they are
        self.adapter._inside = True
        try:
            return super().greedy_decode(self._greedy_source(src), max_len)
        finally:
            self.adapter._inside = False

    def _greedy_source(self, src):
        if self.adapter.misreading.inputs is None:
            return src
        return self.adapter.misreading.inputs(np.asarray(src), None)[0]


class Misread(NumpyAdapter):
    """The NumPy implementation handed ``misreading``'s weights (and inputs): the weights transformed where they
    enter, the outermost call only (a layer passes its sublayers parts of what it was handed)."""

    model_class = MisreadModel

    def __init__(self, misreading: Misreading):
        self.misreading = misreading
        self._depth = 0
        self._inside = False

    def __repr__(self) -> str:
        return f"Misread({self.misreading.key})"


def _entering(name: str):
    """``name`` with its weights argument transformed on entry (the outermost call alone)."""
    method = getattr(NumpyAdapter, name)
    import inspect

    position = list(inspect.signature(method).parameters).index("weights") - 1  # less self

    def entered(self, *args, **kwargs):
        transform = self.misreading.weights
        if self._depth == 0 and transform is not None and len(args) > position:
            args = (*args[:position], transform(dict(args[position])), *args[position + 1:])
        self._depth += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self._depth -= 1

    entered.__name__ = name
    return entered


for _name in WEIGHTED:
    setattr(Misread, _name, _entering(_name))


# -- the transformations, generated from the weights' names and shapes -----------------------------------------


def _split(key: str) -> tuple[str, str]:
    """"decoder.1.norm2.gamma" -> ("decoder.", "norm2.gamma"); "norm2.gamma" -> ("", "norm2.gamma")."""
    found = LAYER.match(key)
    if not found:
        return "", key
    return found.group(1).split(".")[0] + ".", found.group(2)


def _in_every_layer(stack: str, pairs: list[tuple[str, str]]) -> Callable[[dict], dict]:
    """Swap each pair of rests in every layer of ``stack`` ("" for a layer's own weights, or the tables)."""
    def transform(weights: dict) -> dict:
        out = dict(weights)
        for key in weights:
            scope, rest = _split(key)
            if scope != stack:
                continue
            prefix = key[: len(key) - len(rest)]
            for a, b in pairs:
                if rest == a and prefix + b in weights:
                    out[key] = weights[prefix + b]
                elif rest == b and prefix + a in weights:
                    out[key] = weights[prefix + a]
        return out

    return transform


def _each_layer(stack: str, rest: str, f: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict], dict]:
    def transform(weights: dict) -> dict:
        return {key: f(np.asarray(value)) if _split(key) == (stack, rest) else value for key, value in weights.items()}

    return transform


def _where(stack: str) -> str:
    return {"encoder.": " in every encoder layer", "decoder.": " in every decoder layer"}.get(stack, "")


def misreadings(weights: dict, *, special_ids: tuple[int, ...] = (), model: bool = False) -> list[Misreading]:
    """Every transformation of these canonical weights (a model's, or one part's) and, for a model, its inputs."""
    shapes = {key: np.shape(value) for key, value in weights.items()}
    found: list[Misreading] = []
    by_stack: dict[str, dict[str, tuple]] = {}
    for key, shape in shapes.items():
        scope, rest = _split(key)
        by_stack.setdefault(scope, {}).setdefault(rest, shape)
    for stack, rests in sorted(by_stack.items()):
        found += _group_swaps(stack, rests) + _weight_swaps(stack, rests) + _transposes(stack, rests)
    found += _table_readings(shapes, special_ids)
    if model:
        found += [Misreading("inputs:source_reversed", "reads the source sequence in reverse order (its last token"
                             " first, padding included)", inputs=lambda src, tgt: (src[:, ::-1], tgt)),
                  Misreading("inputs:target_reversed", "reads the decoder's input in reverse order",
                             inputs=lambda src, tgt: (src, None if tgt is None else tgt[:, ::-1]))]
    return found


def _group_swaps(stack: str, rests: dict[str, tuple]) -> list[Misreading]:
    groups: dict[str, dict[str, tuple]] = {}
    for rest, shape in rests.items():
        if "." in rest:
            head, tail = rest.split(".", 1)
            groups.setdefault(head, {})[tail] = shape
    names = sorted(groups)
    found = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if groups[a] == groups[b]:
                pairs = [(f"{a}.{tail}", f"{b}.{tail}") for tail in sorted(groups[a])]
                found.append(Misreading(f"swap:{stack}{a}|{b}", f"reads {b}'s weights where the paper reads {a}'s,"
                                        f" and {a}'s where it reads {b}'s{_where(stack)}",
                                        weights=_in_every_layer(stack, pairs)))
    return found


def _weight_swaps(stack: str, rests: dict[str, tuple]) -> list[Misreading]:
    found = []
    names = sorted(rests)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            head_a, _, last_a = a.rpartition(".")
            head_b, _, last_b = b.rpartition(".")
            if head_a == head_b and rests[a] == rests[b]:
                where = f" of {head_a}" if head_a else ""
                found.append(Misreading(f"swap:{stack}{a}|{b}", f"reads {last_b} where the paper reads {last_a}, and"
                                        f" {last_a} where it reads {last_b}{where}{_where(stack)}",
                                        weights=_in_every_layer(stack, [(a, b)])))
    return found


def _transposes(stack: str, rests: dict[str, tuple]) -> list[Misreading]:
    return [Misreading(f"transpose:{stack}{rest}", f"reads {rest} transposed ({rest}ᵀ where the paper reads"
                       f" {rest}){_where(stack)}", weights=_each_layer(stack, rest, lambda w: w.T))
            for rest, shape in sorted(rests.items()) if len(shape) == 2 and shape[0] == shape[1] and shape[0] > 1]


def _table_readings(shapes: dict[str, tuple], special_ids: tuple[int, ...]) -> list[Misreading]:
    found = []
    for name in TABLES:
        shape = shapes.get(name)
        if shape is None or len(shape) != 2 or shape[0] == shape[1]:
            continue
        rows, cols = shape
        # the candidate computes with W.reshape(cols, rows) where the paper uses W.T: the paper is handed
        # W.reshape(cols, rows).T, which its own transpose turns back into what the candidate read
        found.append(Misreading(f"reshape:{name}", f"reads {name} through a reshape to ({cols}, {rows}) where the"
                                f" paper transposes it ({name}ᵀ)",
                                weights=_each_layer("", name, lambda w, c=cols, r=rows: w.reshape(c, r).T)))
        if name != "W_out":
            for row in sorted(set(special_ids)):
                if 0 <= row < rows:
                    found.append(Misreading(f"zero_row:{name}[{row}]", f"reads row {row} of {name} as zeros (the"
                                            f" embedding of token {row} zeroed) where the paper reads the row it was"
                                            f" given", weights=_each_layer("", name, lambda w, i=row: _zeroed(w, i))))
    if "E_src" in shapes and shapes.get("E_src") == shapes.get("E_tgt"):
        found.append(Misreading("swap:E_src|E_tgt", "reads the target's table where the paper reads the source's,"
                                " and back", weights=_in_every_layer("", [("E_src", "E_tgt")])))
    return found


def _zeroed(table: np.ndarray, row: int) -> np.ndarray:
    out = np.array(table, copy=True)
    out[row] = 0.0
    return out


# -- the search ---------------------------------------------------------------------------------------------------


class _Recorder(NumpyAdapter):
    """The paper, noting the canonical weights the question hands it (the outermost call's, or the model's)."""

    def __init__(self):
        self.seen: dict | None = None
        self.config = None
        self._depth = 0

    def build_model(self, config, seed):
        model = super().build_model(config, seed)
        self.config = model.config
        recorder = self

        class Noting(type(model)):
            def load_weights(self, weights):
                recorder.seen = dict(weights)
                super().load_weights(weights)

        model.__class__ = Noting
        return model


def _recording(name: str):
    method = getattr(NumpyAdapter, name)
    import inspect

    position = list(inspect.signature(method).parameters).index("weights") - 1

    def noted(self, *args, **kwargs):
        if self._depth == 0 and self.seen is None and len(args) > position:
            self.seen = dict(args[position])
        self._depth += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self._depth -= 1

    return noted


for _name in WEIGHTED:
    setattr(_Recorder, _name, _recording(_name))


def misread_weights(asked, *, deadline_s: float = MAX_SEARCH_SECONDS) -> list[dict]:
    """The misreadings of this failing question's weights (or inputs) under which the paper answers as the
    candidate on the failing problem, the second, and a third drawn after the search; as descriptions."""
    from conformance.boundary.candidate import Candidate
    from conformance.diagnosis.matching import _answer, _distance, known_answer
    from conformance.diagnosis.measurements.base import as_description
    from conformance.diagnosis.neighbourhood.search import _costlier, _reproduces, third_problem

    if asked.candidate.conventions.dtype not in ("float32", "float64", None):
        return []
    recorder = _Recorder()
    if _answer(asked.question, Candidate(recorder, name="misread:recorder", timeout_s=None), asked.second) is None \
            or not recorder.seen:
        return []
    config = recorder.config
    special = (config.pad_id, config.bos_id, config.eos_id) if config is not None else ()
    start, finalists = time.monotonic(), []
    second_first = _costlier(asked.problem, asked.second)
    for misreading in misreadings(recorder.seen, special_ids=special, model=config is not None):
        if time.monotonic() - start > deadline_s:
            break
        candidate = Candidate(Misread(misreading), name=f"misread:{misreading.key}", timeout_s=None)
        confirmed = _reproduces(asked, candidate, second_first)
        if confirmed is not None:
            finalists.append((misreading, candidate, confirmed))
    drawn = third_problem(asked.second) if finalists else None
    if drawn is None:
        return []
    third = asked.candidate.fit(drawn)
    mine = _answer(asked.question, asked.candidate, third)
    paper = known_answer(asked.question, _paper(asked), third, disk_cache=asked.disk_cache)
    if mine is None or paper is None or asked.same(mine, paper):
        return []
    kept = []
    for misreading, candidate, (here, there) in finalists:
        theirs = _answer(asked.question, candidate, third)
        if theirs is not None and asked.same(mine, theirs):
            kept.append((misreading, here, there, _distance(mine, theirs)))
    if not kept:
        return []
    texts = [m.text for m, *_ in kept]
    text = texts[0] if len(texts) == 1 else "equally, on every problem asked: " + "; or ".join(texts[:4])
    _, here, there, last = kept[0]
    return [as_description("misread", "formula", text, "misread:" + "|".join(m.key for m, *_ in kept),
                           max_abs=here, probe_max_abs=there, facts={"misreadings": [m.key for m, *_ in kept],
                                                                     "third_max_abs": last})]


def _paper(asked):
    from conformance.diagnosis.measurements.confirm import paper_for_description

    return paper_for_description(asked.candidate)
