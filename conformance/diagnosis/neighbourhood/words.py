"""A neighbour in words: the two formulas in the paper's notation, the changed piece marked, and what changed.

Machine-written from the mutation itself (``change``: which operator did what to which piece), never from a list
of bugs: "the square root left out", "reads y where the paper reads y1", "8 in place of 4 (÷2)".
"""

from __future__ import annotations

import ast
import math
import re

import numpy as np

# How a reader names what a formula calls.
FUNCTION_WORDS = {
    "sqrt": "the square root", "square": "the square", "exp": "exp", "exp2": "2^x", "log": "the natural log",
    "log10": "log10", "log2": "log2", "mean": "the mean", "sum": "the sum", "max": "max", "min": "min",
    "maximum": "max", "minimum": "min", "triu": "triu (the part above the diagonal)",
    "tril": "tril (the part below the diagonal)", "sin": "sin", "cos": "cos", "var": "the variance",
    "std": "the standard deviation", "activation": "ReLU", "layer_norm": "LayerNorm", "_softmax": "softmax",
    "softmax": "softmax", "scale_scores": "the scaling of the scores", "mask_scores": "the mask",
    "project": "the projection", "feed_forward": "the feed-forward network", "_sublayer": "the residual and LayerNorm",
    "multi_head_attention": "the attention", "_attend": "the attention", "layer_norm_denominator": "the denominator",
    "layer_norm_variance": "the variance", "isneginf": "isneginf", "isinf": "isinf", "where": "where",
    "reversed": "the reversed order", "range": "range", "einsum": "einsum", "transpose": "the transpose",
    "reshape": "the reshape", "pe_interleave": "the interleaving", "pe_frequencies": "the frequencies",
    "smoothed_target": "the smoothed target", "token_losses": "the per-token losses", "reduce_loss": "the reduction",
    "attention_weights": "the masked softmax", "swapaxes": "the transpose of the last two axes",
}
OPERATOR_WORDS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "×", ast.Div: "/", ast.BitOr: "or", ast.BitAnd: "and",
                  ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
                  ast.Pow: "^", ast.MatMult: "@", ast.FloorDiv: "// (integer division)"}

# What the oracle's names hold, for a reader who has not read it: (formula, name) first, then the name alone.
ROLES = {
    "x": "the layer's input", "x1": "the state after the self-attention sublayer", "y": "the layer's input",
    "y1": "the state after the masked self-attention sublayer", "y2": "the state after the cross-attention sublayer",
    "memory": "the encoder's output", "q": "the queries", "k": "the keys", "v": "the values",
    "query": "the queries' input", "key": "the keys' input", "value": "the values' input",
    "attn": "the self-attention's output", "cross": "the cross-attention's output", "centred": "x - μ",
    "variance": "σ²", "log_p": "the log-probabilities", "src_mask": "the source padding mask",
    "tgt_mask": "the target padding mask", "future": "the causal mask", "self_mask": "the self-attention's mask",
    "cross_mask": "the cross-attention's mask", "'Q'": "W_Q", "'K'": "W_K", "'V'": "W_V", "'O'": "W_O",
    ("token_losses", "q"): "the smoothed target", ("smoothed_target", "q"): "the smoothed target",
    ("label_smoothed_loss", "q"): "the smoothed target", ("_sublayer", "x"): "the residual",
    ("_sublayer", "out"): "the sublayer's output", "pad_id": "the padding token's id", "bos_id": "the id of <s>",
    "eos_id": "the id of </s>",
}


def role(formula: str, name: str) -> str:
    found = ROLES.get((formula, name)) or ROLES.get(name) or ROLES.get(notation(name))
    return f"{notation(name)} ({found})" if found else notation(name)


NOTATION = (
    (r"\bweights\[(['\"])([\w.]+)\1\]", r"\2"),
    (r"\bself\.activation\(", "ReLU("),
    (r"\bself\.layer_norm\(", "LayerNorm("),
    (r"\bself\.config\.|\bcfg\.|\bself\.adapter\.|\bself\.", ""),
    (r"\bnp\.|\bmath\.", ""),
    (r"\bsqrt\(", "√("),
    (r"\bepsilon\b|\beps\b", "ε"),
    (r"\bgamma\b", "γ"),
    (r"\bbeta\b", "β"),
    (r" ?\*\* ?", "^"),
    (r"^return ", ""),
)


def notation(code: str) -> str:
    """Python as the paper writes it, where it has a way: √, ε, γ, β, ^, W1 for weights['W1'], no prefixes."""
    for pattern, replacement in NOTATION:
        code = re.sub(pattern, replacement, code)
    return code


def _name(node: ast.AST) -> str:
    from conformance.diagnosis.neighbourhood.operators import callee

    if isinstance(node, ast.Call):
        name = callee(node) or ast.unparse(node.func)
        return FUNCTION_WORDS.get(name, name)
    return notation(ast.unparse(node))


def _value(node: ast.AST) -> float | None:
    """A piece without variables, evaluated (log10(10000.0) -> 4.0); None when it reads anything."""
    if any(isinstance(n, ast.Name) and n.id not in ("np", "math") for n in ast.walk(node)):
        return None
    try:
        value = eval(compile(ast.Expression(node), "<piece>", "eval"), {"np": np, "math": math})  # noqa: S307
        return float(value)
    except Exception:  # noqa: BLE001 - a piece that is not a number
        return None


def _ratio(new: float, old: float) -> str:
    if old == 0 or new == 0 or new == old:
        return ""
    r = new / old
    return f" (×{r:.4g})" if abs(r) >= 1 else f" (÷{1 / r:.4g})"


def change(old: ast.AST, new: ast.AST, family: str, formula: str = "") -> str:
    """What the operator did to ``old`` in ``formula``, in words."""
    old_text, new_text = notation(ast.unparse(old)), notation(ast.unparse(new))
    dumped = {ast.dump(part) for part in ast.walk(old)}
    if family == "constant":
        a, b = _value(old), _value(new)
        off = " (off by one)" if a is not None and b is not None and abs(a - b) == 1 else ""
        return f"{new_text} in place of {old_text}{off}"
    if family == "term":
        if isinstance(new, ast.BinOp) and isinstance(new.op, ast.Add) and isinstance(new.right, ast.Name) \
                and ast.dump(new.left) == ast.dump(old):
            return f"{role(formula, new.right.id)} added once more, to the result"
        if isinstance(new, ast.Call) and new.args and ast.dump(new.args[0]) == ast.dump(old):
            return f"{_name(new)} applied once more, to the result"
        if isinstance(old, ast.Call) and ast.dump(new) in dumped:
            return f"{_name(old)} left out"
        if isinstance(old, ast.BinOp) and ast.dump(new) in (ast.dump(old.left), ast.dump(old.right)):
            dropped = old.right if ast.dump(new) == ast.dump(old.left) else old.left
            return f"the term {notation(ast.unparse(dropped))} left out"
        if isinstance(new, ast.Constant) and new.value is None:
            return f"{role(formula, old_text)} left out (None: no position hidden)"
        if isinstance(old, ast.UnaryOp):
            return f"the minus sign of {old_text} left out" if isinstance(old.op, ast.USub) else "the negation left out"
        if isinstance(old, ast.BinOp) and isinstance(new, ast.BinOp) and type(old.op) is not type(new.op):
            return f"{OPERATOR_WORDS.get(type(new.op), '?')} in place of {OPERATOR_WORDS.get(type(old.op), '?')}"
        if isinstance(old, ast.BinOp) and isinstance(new, ast.BinOp):
            return f"the term {notation(ast.unparse(old.right))} counted twice"
        if isinstance(old, ast.Compare):
            mirror, original = (OPERATOR_WORDS.get(type(node.ops[0]), "?") for node in (new, old))
            return f"{mirror} in place of {original}"
        return f"{old_text} becomes {new_text}"
    if family == "confusion":
        if isinstance(new, ast.BinOp) and isinstance(new.right, ast.Subscript) \
                and isinstance(new.right.value, ast.Attribute) and new.right.value.attr == "shape":
            return f"the sum divided by the size of axis {ast.unparse(new.right.slice)}, where the paper takes" \
                   f" {_name(old)}"
        if isinstance(old, ast.Call) and isinstance(new, ast.BinOp) and _name(old) == "softmax":
            return "the sigmoid 1 / (1 + e^(-x)) in place of softmax: each weight squashed on its own, not normalised" \
                   " over the axis"
        if isinstance(old, ast.Name) and isinstance(new, ast.Call) and ast.dump(new.args[0]) == ast.dump(old):
            return f"exp({old_text}) in place of {role(formula, old.id)}: probabilities where the paper uses" \
                   " log-probabilities"
        return f"{_name(new)} in place of {_name(old)}"
    if family == "axis":
        return _axis(old, new, old_text, new_text)
    if family == "variable":
        return f"reads {role(formula, ast.unparse(new))} where the paper reads {role(formula, ast.unparse(old))}"
    if family == "order":
        return _order(old, new, formula)
    return f"{new_text} in place of {old_text}"


def _axis(old: ast.AST, new: ast.AST, old_text: str, new_text: str) -> str:
    from conformance.diagnosis.neighbourhood.operators import callee

    if isinstance(new, ast.Call) and callee(new) == "swapaxes":  # x.reshape(..., b, a).swapaxes(-1, -2)
        return "the reshape's last two sizes taken in the other order, then transposed back: each group holds every" \
               " k-th element (strided), where the paper's holds a contiguous block"
    if isinstance(new, ast.Call) and callee(new) == "reshape" and isinstance(new.func, ast.Attribute) \
            and isinstance(new.func.value, ast.Call) and callee(new.func.value) == "swapaxes":
        return "a merge that reads the last two axes in the other order (strided), where the paper concatenates" \
               " contiguous blocks"
    return f"{new_text} in place of {old_text} (keepdims)"


def _order(old: ast.AST, new: ast.AST, formula: str = "") -> str:
    from conformance.diagnosis.neighbourhood.operators import callee

    if isinstance(new, ast.Call) and callee(new) == "reversed":
        return "the loop runs in reverse order"
    if isinstance(old, ast.Call) and isinstance(new, ast.Call) and callee(old) == callee(new):
        return f"two arguments of {_name(old)} swapped"
    leftmost = new
    while isinstance(leftmost, ast.BinOp):
        leftmost = leftmost.left
    if isinstance(old, ast.Call) and isinstance(leftmost, ast.Call) and callee(leftmost) == callee(old):
        read = notation(ast.unparse(leftmost.args[0])) if leftmost.args else "its input"
        return f"{_name(old)} applied to {read}, what the linear map reads, rather than to its result"
    if isinstance(old, ast.Call) and isinstance(new, ast.BinOp):  # f(a + b) -> a + f(b)
        added = new.left
        said = role(formula, added.id) if isinstance(added, ast.Name) else notation(ast.unparse(added))
        return f"{said} added after {_name(old)}, not inside it"
    if isinstance(old, ast.Call) and isinstance(new, ast.Call):  # f(g(x)) -> g(f(x)): g now comes after f
        return f"{_name(new)} applied after {_name(old)}, where the paper applies it before"
    if isinstance(old, ast.BinOp) and isinstance(new, ast.Call):
        return f"the factor {notation(ast.unparse(old.left))} moved inside {_name(new)}"
    if isinstance(old, ast.BinOp) and isinstance(new, ast.BinOp) and isinstance(new.op, ast.Mult) \
            and isinstance(new.left, ast.Name | ast.Attribute | ast.Subscript):
        return f"the factor {notation(ast.unparse(new.left))} applied to the whole sum"
    if isinstance(old, ast.BinOp) and isinstance(new, ast.BinOp):
        return "a factor moved across a sum"
    return f"{notation(ast.unparse(new))} in place of {notation(ast.unparse(old))}"


def statement(form: dict) -> str:
    """"§3.1 layer_norm_denominator: the square root left out: computes ⟦variance + ε⟧ where the paper computes
    ⟦√(variance + ε)⟧"; a piece without variables also evaluated ("= 4, the paper's 9.21 (÷2.303)")."""
    found, paper = notation(form["found"]), notation(form["paper"])
    where = f"{form['section']}, " if form.get("section") else ""
    value = ""
    a, b = (_value(ast.parse(piece, mode="eval").body) for piece in (form["found_piece"], form["paper_piece"]))
    if a is not None and b is not None and a != b and form["family"] != "constant":
        value = f" (= {a:.6g}, the paper's {b:.6g}{_ratio(a, b)})"
    only = f" (only where {form['at']['formula']} calls it: {notation(form['at']['line'])})" if form.get("at") else ""
    words = form.get("words", "")
    if form["family"] == "constant" and "axis=⟦" in form["paper"]:  # a reduction's axis, said as one
        words = f"over axis {form['found_piece']} where the paper reduces over axis {form['paper_piece']}"
    return (f"{where}{form['formula']}: {words}{value}{only}: computes {found} where the paper"
            f" computes {paper}")
