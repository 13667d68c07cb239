"""Mutation operators: the mechanical neighbours of one expression of the oracle's source.

Each operator looks at one AST node of a formula (a method of the NumPy implementation) and proposes the nodes
a slip of the hand would put in its place, by family:

* ``constant``: a number changed (0 <-> 1, +-1, x2, /2, its sign): an exponent, an epsilon, a diagonal offset,
  an axis;
* ``variable``: a name swapped for another name the formula holds (an input, a weight, a mask, the memory for
  the layer's own input), a special token for another (the padding's id for the start's), a weight's key for
  another key the formula reads ("W_Q" for "W_K", "norm1" for "norm2"), an einsum's letters transposed;
* ``order``: an operation moved across its neighbour (f(g(x)) -> g(f(x))), a residual taken out of or into a
  normalisation, an operation applied to what a linear map reads rather than to its result (f(a @ W + b) ->
  f(a) @ W + b), two arguments swapped;
* ``term``: a term dropped (a + b -> a), duplicated (a + b -> a + 2 b), an operation left out (f(x) -> x), an
  operator for its mirror (+ for -, * for / or //, == for !=, & for |), a name the formula holds added once more to
  what it returns (a residual added twice), a mask left out (None);
* ``axis``: keepdims flipped, a reduction over another axis; a split's two factors in the other order (a head's
  columns strided, i, i + h, ..., where the paper's are a block), a merge that reads them so;
* ``confusion``: a function for its usual confusion: mean / sum, the variance with n - 1, sqrt left out or
  squared, sin / cos, triu / tril, max / min, log / log10 / log2, ReLU / GELU, probabilities for their logarithm,
  the sigmoid for softmax, a mean divided by another axis's size.

No operator knows what a bug is: a neighbour is kept when it computes something other than the paper's
formula (``generate.screen``), never because someone named it.
"""

from __future__ import annotations

import ast
import copy
import math
from collections.abc import Iterator

# Calls whose left-out or swapped forms are no neighbour of a formula: conversions, the dtype's bookkeeping.
INERT_CALLS = {"_wide", "asarray", "astype", "errstate", "float", "int", "len", "range", "array", "full", "zeros",
               "ones", "arange", "dict", "list", "tuple", "isinstance", "sorted", "ModelConfig", "from_dict", "copy",
               "get", "items", "broadcast_to", "concatenate", "replace", "update", "_part", "_layer_weights",
               "model_class", "rsplit", "startswith", "nan_to_num", "stack"}
INERT_KEYWORDS = {"dtype", "copy", "record", "attention", "nan", "invalid"}

CONFUSED_METHODS = {  # x.f(...) -> x.g(...)
    "mean": ("sum",), "sum": ("mean",), "max": ("min",), "min": ("max",), "var": ("std",), "std": ("var",),
}
CONFUSED_FUNCTIONS = {  # np.f / math.f / f -> g
    "sqrt": ("square",), "sin": ("cos",), "cos": ("sin",), "triu": ("tril",), "tril": ("triu",),
    "log": ("log10", "log2"), "exp": ("exp2",), "max": ("min",), "min": ("max",), "maximum": ("minimum",),
    "minimum": ("maximum",), "isneginf": ("isinf",),
}
SOFTMAXES = ("_softmax", "softmax")
COMPARE_MIRRORS = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
                   ast.GtE: ast.Gt}
BINOP_MIRRORS = {ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Div,), ast.Div: (ast.Mult, ast.FloorDiv),
                 ast.BitOr: (ast.BitAnd,), ast.BitAnd: (ast.BitOr,)}


def callee(node: ast.Call) -> str | None:
    """The called name: ``np.sqrt`` -> "sqrt", ``self.layer_norm`` -> "layer_norm", ``x.mean`` -> "mean"."""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _owner(node: ast.Call) -> str | None:
    func = node.func
    return func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def constant(node: ast.AST, context: dict) -> Iterator[tuple[ast.AST, str]]:
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
        and isinstance(node.operand, ast.Constant) and _number(node.operand.value)  # -1 is one number: an axis
    if id(node) in context.get("negated", ()):
        return  # a negated number is changed whole (-1 -> 0), never its digits alone (-1 -> -0)
    if not (negative or isinstance(node, ast.Constant) and _number(node.value)):
        return
    c = -node.operand.value if negative else node.value
    proposals = [0, 1, -c, c + 1, c - 1, 2 * c, c / 2 if isinstance(c, float) or c % 2 else c // 2]
    seen = {c}
    for value in proposals:
        if isinstance(c, float):
            value = float(value)
        if value not in seen:
            seen.add(value)
            yield (ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)), "constant"


SIZES = ("d_model", "d_k", "d_ff", "h", "N")  # the configuration's sizes: a slip reads one for another
TOKENS = ("pad_id", "bos_id", "eos_id")  # the special tokens: one read for another (padding from <s>)


def variable(node: ast.AST, context: dict) -> Iterator[tuple[ast.AST, str]]:
    size = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    if context.get("owner") == "model" and size in SIZES and isinstance(node.ctx, ast.Load):
        for other in SIZES:
            if other != size:
                yield ast.parse(f"self.config.{other}", mode="eval").body, "variable"
    if isinstance(node, ast.Attribute) and node.attr in TOKENS and isinstance(node.ctx, ast.Load):
        for other in TOKENS:
            if other != node.attr:
                yield ast.Attribute(copy.deepcopy(node.value), other, ast.Load()), "variable"
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in context["names"]:
        for other in context["names"]:
            if other != node.id:
                yield ast.Name(other, ast.Load()), "variable"
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in context["keys"]:
        for other in context["keys"]:
            if other != node.value and _key_like(other, node.value):
                yield ast.Constant(other), "variable"
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "->" in node.value:
        yield from ((ast.Constant(spec), "variable") for spec in _transposed_specs(node.value))


def _key_like(a: str, b: str) -> bool:
    """Two weight keys a slip swaps: the same length, or the same ending ("self_attn." and "cross_attn.")."""
    return len(a) == len(b) or a[-1:] == b[-1:] == "."


def _transposed_specs(spec: str) -> Iterator[str]:
    """An einsum's operands and output, each with two neighbouring letters swapped."""
    inputs, output = spec.split("->")
    terms = [*inputs.split(","), output]
    for t, term in enumerate(terms):
        for i in range(len(term) - 1):
            swapped = term[:i] + term[i + 1] + term[i] + term[i + 2:]
            if swapped != term:
                changed = [*terms[:t], swapped, *terms[t + 1:]]
                yield ",".join(changed[:-1]) + "->" + changed[-1]


def order(node: ast.AST, context: dict) -> Iterator[tuple[ast.AST, str]]:
    if isinstance(node, ast.BinOp):
        yield from _moved_factor(node)
        return
    if isinstance(node, ast.Call) and callee(node) == "range":  # a loop over the layers, the other way round
        yield ast.Call(ast.Name("reversed", ast.Load()), [copy.deepcopy(node)], []), "order"
        return
    if not isinstance(node, ast.Call) or callee(node) in INERT_CALLS:
        return
    args = node.args
    inner = args[0] if args and isinstance(args[0], ast.Call) and callee(args[0]) not in INERT_CALLS else None
    if inner is not None and inner.args:  # f(g(x, a), b) -> g(f(x, b), a)
        outer = copy.deepcopy(node)
        outer.args = [copy.deepcopy(inner.args[0]), *copy.deepcopy(args[1:])]
        swapped = copy.deepcopy(inner)
        swapped.args = [outer, *copy.deepcopy(inner.args[1:])]
        yield swapped, "order"
    if args and isinstance(args[0], ast.BinOp) and isinstance(args[0].op, ast.Add):  # f(a + b) -> a + f(b)
        for kept, moved in ((args[0].left, args[0].right), (args[0].right, args[0].left)):
            call = copy.deepcopy(node)
            call.args = [copy.deepcopy(moved), *copy.deepcopy(args[1:])]
            yield ast.BinOp(copy.deepcopy(kept), ast.Add(), call), "order"
    for i in range(len(args) - 1):  # two neighbouring arguments swapped
        if ast.dump(args[i]) != ast.dump(args[i + 1]) and not any(isinstance(a, ast.Starred) for a in args[i:i + 2]):
            call = copy.deepcopy(node)
            call.args[i], call.args[i + 1] = call.args[i + 1], call.args[i]
            yield call, "order"


def _moved_factor(node: ast.BinOp) -> Iterator[tuple[ast.AST, str]]:
    """A factor moved across its neighbour: (a * s) + b -> (a + b) * s, (a + b) * s -> a * s + b and a + b * s,
    a * min(x, y) -> min(a * x, y) and min(x, a * y)."""
    left, right = node.left, node.right
    if isinstance(node.op, ast.Add) and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mult):
        total = ast.BinOp(copy.deepcopy(left.left), ast.Add(), copy.deepcopy(right))
        yield ast.BinOp(total, ast.Mult(), copy.deepcopy(left.right)), "order"
    # the leftmost factor s of s * a / d + b taken out: s * (a / d + b) (a gain applied to the shift too)
    if isinstance(node.op, ast.Add) and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mult | ast.Div) \
            and isinstance(left.left, ast.BinOp) and isinstance(left.left.op, ast.Mult):
        inner = ast.BinOp(copy.deepcopy(left.left.right), copy.deepcopy(left.op), copy.deepcopy(left.right))
        total = ast.BinOp(inner, ast.Add(), copy.deepcopy(right))
        yield ast.BinOp(copy.deepcopy(left.left.left), ast.Mult(), total), "order"
    if isinstance(node.op, ast.Mult) and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add):
        for scaled, kept in ((left.left, left.right), (left.right, left.left)):
            product = ast.BinOp(copy.deepcopy(scaled), ast.Mult(), copy.deepcopy(right))
            yield ast.BinOp(product, ast.Add(), copy.deepcopy(kept)), "order"
    if isinstance(node.op, ast.Mult) and isinstance(right, ast.Call) and callee(right) in ("min", "max") \
            and len(right.args) == 2:
        for i in range(2):
            call = copy.deepcopy(right)
            call.args[i] = ast.BinOp(copy.deepcopy(left), ast.Mult(), call.args[i])
            yield call, "order"


def term(node: ast.AST, context: dict) -> Iterator[tuple[ast.AST, str]]:
    if isinstance(node, ast.BinOp):
        yield copy.deepcopy(node.left), "term"
        if not isinstance(node.op, ast.Pow | ast.Sub | ast.Div | ast.Mod | ast.FloorDiv):
            yield copy.deepcopy(node.right), "term"
        for mirror in BINOP_MIRRORS.get(type(node.op), ()):
            yield ast.BinOp(copy.deepcopy(node.left), mirror(), copy.deepcopy(node.right)), "term"
        if isinstance(node.op, ast.Add | ast.Sub):
            doubled = ast.BinOp(ast.Constant(2), ast.Mult(), copy.deepcopy(node.right))
            yield ast.BinOp(copy.deepcopy(node.left), copy.deepcopy(node.op), doubled), "term"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not):
        yield copy.deepcopy(node.operand), "term"
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE_MIRRORS:
        yield ast.Compare(copy.deepcopy(node.left), [COMPARE_MIRRORS[type(node.ops[0])]()],
                          copy.deepcopy(node.comparators)), "term"
    elif isinstance(node, ast.Call) and node.args and callee(node) not in INERT_CALLS \
            and not isinstance(node.args[0], ast.Starred) and _owner(node) in ("self", "np", "math", None):
        yield copy.deepcopy(node.args[0]), "term"  # the operation left out: f(x, ...) -> x
        inner = _leftmost_operand(node.args[0])
        if inner is not None:  # f(a @ W + b) -> f(a) @ W + b: applied to what the linear map reads
            moved = copy.deepcopy(node.args[0])
            _replace_leftmost(moved, ast.Call(copy.deepcopy(node.func), [copy.deepcopy(inner),
                                                                         *copy.deepcopy(node.args[1:])],
                                              copy.deepcopy(node.keywords)))
            yield moved, "order"
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and "mask" in node.id:
        yield ast.Constant(None), "term"  # a mask left out: no position hidden


def added(node: ast.AST, context: dict) -> Iterator[tuple[ast.AST, str]]:
    """A name the formula holds added once more to what it returns: LayerNorm(x + out) -> LayerNorm(x + out) + x
    (a residual added twice), FFN(x) -> FFN(x) + x (a sublayer that adds its own residual). A name of another
    shape fails to broadcast or computes nothing like the candidate: the screen and the search leave it."""
    if id(node) not in context.get("returned", ()) or not isinstance(node, ast.BinOp | ast.Call):
        return
    for name in context["names"]:
        yield ast.BinOp(copy.deepcopy(node), ast.Add(), ast.Name(name, ast.Load())), "term"


def _leftmost_operand(node: ast.AST) -> ast.AST | None:
    """In a @ W + b (a chain of binary operations that starts with a matrix product), a; else None."""
    chain = node
    while isinstance(chain, ast.BinOp) and not isinstance(chain.op, ast.MatMult):
        chain = chain.left
    return chain.left if isinstance(chain, ast.BinOp) and isinstance(chain.op, ast.MatMult) else None


def _replace_leftmost(node: ast.BinOp, new: ast.AST) -> None:
    while not isinstance(node.op, ast.MatMult):
        node = node.left
    node.left = new


def again(node: ast.AST, context: dict) -> Iterator[tuple[ast.AST, str]]:
    """An operation of the formula applied once more, to what it returns: f(a) @ W + b -> f(f(a) @ W + b)."""
    if id(node) not in context.get("returned", ()):
        return
    seen = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and _owner(call) == "self" and len(call.args) == 1 and not call.keywords \
                and call is not node and callee(call) not in seen:
            seen.add(callee(call))
            yield ast.Call(copy.deepcopy(call.func), [copy.deepcopy(node)], []), "term"


def axis(node: ast.AST, context: dict) -> Iterator[tuple[ast.AST, str]]:
    if not isinstance(node, ast.Call):
        return
    for k, keyword in enumerate(node.keywords):
        if keyword.arg == "keepdims" and isinstance(keyword.value, ast.Constant):
            call = copy.deepcopy(node)
            call.keywords[k].value = ast.Constant(not keyword.value.value)
            yield call, "axis"
    if callee(node) == "reshape" and isinstance(node.func, ast.Attribute) and _owner(node) not in ("np", "self"):
        yield from _reshape_order(node)


def _swapped_last_two(node: ast.AST) -> ast.Call:
    return ast.Call(ast.Attribute(node, "swapaxes", ast.Load()), [ast.Constant(-1), ast.Constant(-2)], [])


def _reshape_order(node: ast.Call) -> Iterator[tuple[ast.AST, str]]:
    """x.reshape(..., a, b) -> x.reshape(..., b, a).swapaxes(-1, -2): the same shape, its elements taken in the
    other order (a split into heads whose head i holds the columns i, i + h, ...); x.reshape(shape) ->
    x.swapaxes(-1, -2).reshape(shape): a merge of the last two axes that reads them so."""
    args = node.args
    if len(args) >= 2 and not any(isinstance(a, ast.Starred) for a in args[-2:]):
        split = copy.deepcopy(node)
        split.args[-2], split.args[-1] = split.args[-1], split.args[-2]
        yield _swapped_last_two(split), "axis"
    elif len(args) == 1 and not node.keywords:
        merge = copy.deepcopy(node)
        merge.func.value = _swapped_last_two(merge.func.value)
        yield merge, "axis"


def confusion(node: ast.AST, context: dict) -> Iterator[tuple[ast.AST, str]]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id.startswith("log_"):
        # a log-probability read as what it is the logarithm of: log_p -> exp(log_p)
        yield ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "exp", ast.Load()), [copy.deepcopy(node)], []), \
            "confusion"
    if not isinstance(node, ast.Call):
        return
    name, owner = callee(node), _owner(node)
    if name in SOFTMAXES and node.args and not isinstance(node.args[0], ast.Starred):
        # the sigmoid for softmax: each weight squashed on its own, not normalised over the keys
        yield ast.parse(f"1.0 / (1.0 + np.exp(-({ast.unparse(node.args[0])})))", mode="eval").body, "confusion"
    if owner in ("np", "math", None) and name in CONFUSED_FUNCTIONS:
        for other in CONFUSED_FUNCTIONS[name]:
            if (owner == "math" and not hasattr(math, other)) or (owner is None and other not in ("max", "min")):
                continue  # math has no square or tril; a bare call is a builtin: only max and min have a twin
            call = copy.deepcopy(node)
            if owner is None:
                call.func.id = other
            else:
                call.func.attr = other
            yield call, "confusion"
    elif owner not in ("np", "math", "self") and isinstance(node.func, ast.Attribute) and name in CONFUSED_METHODS:
        for other in CONFUSED_METHODS[name]:
            call = copy.deepcopy(node)
            call.func.attr = other
            yield call, "confusion"
        if name == "mean" and node.args:  # the variance's n - 1: x.mean(a) -> x.sum(a) / (x.shape[a] - 1)
            total = copy.deepcopy(node)
            total.func.attr = "sum"
            size = ast.Subscript(ast.Attribute(copy.deepcopy(node.func.value), "shape", ast.Load()),
                                 copy.deepcopy(node.args[0]), ast.Load())
            yield ast.BinOp(total, ast.Div(), ast.BinOp(size, ast.Sub(), ast.Constant(1))), "confusion"
            # the size of another axis: x.mean(-1) -> x.sum(-1) / x.shape[0] (the batch's length for the features')
            other = ast.Subscript(ast.Attribute(copy.deepcopy(node.func.value), "shape", ast.Load()),
                                  ast.Constant(0), ast.Load())
            yield ast.BinOp(copy.deepcopy(total), ast.Div(), other), "confusion"
    if owner == "np" and name == "maximum" and len(node.args) == 2 and isinstance(node.args[0], ast.Constant) \
            and node.args[0].value == 0:  # ReLU -> GELU (tanh form)
        z = node.args[1]
        yield ast.parse(f"0.5 * ({ast.unparse(z)}) * (1.0 + np.tanh(0.7978845608028654 * (({ast.unparse(z)})"
                        f" + 0.044715 * ({ast.unparse(z)}) ** 3)))", mode="eval").body, "confusion"


OPERATORS = (constant, variable, order, term, added, again, axis, confusion)
FAMILIES = ("constant", "variable", "order", "term", "axis", "confusion")
