"""What each check's verdict rests on: a sentence of the paper, of the lessons, or a convention of this suite.

Every check carries one ``claim`` marker (a module may set a default in ``pytestmark``; a check's own
marker overrides it). Claims of the paper and of the lessons decide conformance. Where both are silent
the suite still has to say what it expects (a query whose keys are all masked: the lesson's own
``masked_fill(-inf)`` gives NaN there, a ``-1e9`` fill gives uniform weights); such a check is a
*convention*: when it does not hold, its status is ``advisory``, printed apart, and the exit code
ignores it unless ``--strict``. ``docs/claims.md`` lists the conventions.
"""

from __future__ import annotations

import pytest

SOURCES = ("paper", "lesson", "convention")

STEP_BY_STEP = "The original transformer, step by step"
VANILLA = "Vanilla Transformer"


def paper(where: str, text: str) -> pytest.MarkDecorator:
    """A sentence of Vaswani et al. (2017), e.g. ``paper("§3.4", "we multiply those weights by sqrt(d_model)")``."""
    return pytest.mark.claim(source="paper", where=f"Attention Is All You Need, {where}", text=text)


def lesson(where: str, text: str) -> pytest.MarkDecorator:
    """A sentence of one of the two lessons (``shared/seeds/``): ``where`` names the lesson and its section."""
    return pytest.mark.claim(source="lesson", where=where, text=text)


def convention(text: str, *, judges_non_finite: bool = False,
               where: str = "this suite (the paper and the lessons are silent)") -> pytest.MarkDecorator:
    """What this suite expects where the paper says nothing (and the lessons nothing, or only a framework's default,
    named in ``where``); never decides conformance alone. ``judges_non_finite``: finiteness is what it claims (a fully
    masked row: the paper's own formula gives NaN there), so a NaN or inf answer is its claim not holding, not an
    error (``plugin._classify``)."""
    return pytest.mark.claim(source="convention", where=where, text=text, judges_non_finite=judges_non_finite)


def of(item) -> dict | None:
    """The claim of a collected check, as plain data for the report: {source, where, text}."""
    marker = item.get_closest_marker("claim")
    return {key: marker.kwargs[key] for key in ("source", "where", "text")} if marker else None


def is_convention(item) -> bool:
    claim = of(item)
    return bool(claim) and claim["source"] == "convention"


def judges_non_finite(item) -> bool:
    """Whether the check's claim is a convention about finiteness itself (``convention(judges_non_finite=...)``)."""
    marker = item.get_closest_marker("claim")
    return bool(marker) and marker.kwargs.get("judges_non_finite") is True


# --------------------------------------------------------------------------------------------------
# The sentences the checks rest on, by what they claim. A check module uses them as decorators:
# ``@claims.CAUSAL_MASK``. Paper sections appear as the lessons quote them.
# --------------------------------------------------------------------------------------------------

# §3.1, §3.3 layers
POST_NORM = lesson(f"{STEP_BY_STEP}, Step 3: the encoder layer",
                   '"the output of each sub-layer is LayerNorm(x + Sublayer(x))" ... The norm comes after the'
                   " addition: post-norm.")
DECODER_LAYER = lesson(f"{STEP_BY_STEP}, Step 4: the decoder layer and cross-attention",
                       "A decoder layer has three sublayers, each wrapped in the same add-and-norm: masked"
                       " self-attention, cross-attention, the feed-forward network.")
LAYER_NORM = lesson(f"{STEP_BY_STEP}, Step 3: the encoder layer",
                    "LayerNorm(x) = gamma (x - mu) / sqrt(sigma^2 + eps) + beta ... sigma^2 their variance (divided"
                    " by d, not by d - 1).")
LAYER_NORM_BY_HAND = lesson(f"{STEP_BY_STEP}, Step 3: the encoder layer",
                            "Take x = (1, 2, 3, 6). The mean is 12 / 4 = 3. The variance is (4 + 1 + 0 + 9) / 4 = 3.5"
                            " ... 1 becomes -1.069, and 6 becomes 1.604.")
FEED_FORWARD = paper("§3.3", "FFN(x) = max(0, x W1 + b1) W2 + b2 ... applied to each position separately and"
                             " identically.")

# §3.2 attention and its masks
ATTENTION = paper("§3.2.1", "Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V")
SOFTMAX_OVER_KEYS = lesson(f"{VANILLA}, 2. What one encoder layer computes",
                           "softmax is computed along the key dimension of each row.")
MULTI_HEAD = lesson(f"{STEP_BY_STEP}, Step 3: the encoder layer",
                    "MultiHead(X) = [head_1, ..., head_h] W_O, head_i = softmax(X W_Q^(i) (X W_K^(i))^T / sqrt(d_k))"
                    " X W_V^(i) ... With h heads, d_k = d_model / h.")
HEADS_OWN_PROJECTIONS = paper("§3.2.2", "head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V): each head has its own"
                                        " projections.")
CROSS_ATTENTION = lesson(f"{STEP_BY_STEP}, Step 4: the decoder layer and cross-attention",
                         "The queries come from the decoder, and the keys and values come from the encoder's memory"
                         " ... with no causal mask: the whole source is known.")
CROSS_READS_WHOLE_SOURCE = lesson(f"{VANILLA}, The three attention sites ask different questions",
                                  "Cross-attention can read the full source sentence, not just a source prefix"
                                  " matching the translation position.")
MASKED_WEIGHTS_ZERO = lesson(f"{VANILLA}, 4. Why one decoder layer has three sublayers",
                             "Since e^-inf = 0, masked positions have weight exactly 0 after softmax.")
KEY_PADDING = lesson(f"{VANILLA}, The three attention sites ask different questions",
                     "For input lengths 3 and 5, a collator can pad both to 5; the mask then excludes the first"
                     " input's two placeholder keys.")
DECODER_KEYS = lesson(f"{VANILLA}, The three attention sites ask different questions",
                      "For valid decoder self-attention queries, a key must be both non-padding and not in the"
                      " future.")
CAUSAL_MASK = lesson(f"{VANILLA}, The three attention sites ask different questions",
                     "With query rows and key columns, the strictly upper triangle is blocked; the diagonal stays"
                     " visible because the current input predicts the next token.")
START_READS_ITSELF = lesson(f"{STEP_BY_STEP}, Step 4: the decoder layer and cross-attention",
                            "Masked self-attention ... with the causal mask M ..., added to the scores before"
                            " softmax. Position 1, the start token, reads only itself.")
PERMUTATION_EQUIVARIANT = lesson(f"{VANILLA}, The missing information: attention does not know order",
                                 "Without positional information or an order-dependent mask, self-attention is"
                                 " permutation-equivariant: reordering inputs reorders outputs.")
FULLY_MASKED_ROW = convention("A query whose keys are all masked gets attention weights 0 and output 0, finite."
                              " The paper defines no softmax over an empty set of keys: the lesson's"
                              " masked_fill(-inf) gives NaN there, a -1e9 fill uniform weights; both conform.",
                              judges_non_finite=True)

ANY_LENGTH = convention("A source longer than the positional tables real code precomputes (1,100 tokens) is encoded:"
                        " the sinusoids are defined at every position, and the paper kept them because they \"may"
                        " allow the model to extrapolate to sequence lengths longer than the ones encountered during"
                        " training\" (the lesson's Step 2). A table of 512 or 1,024 rows is an engineering limit the"
                        " paper does not set.")

LESSONS_EPSILON = convention("The layers' LayerNorm epsilon is the lesson's: \"ε (10⁻⁵ in PyTorch) avoids dividing by"
                             " 0\". The paper gives none; a value fixed elsewhere (1e-12 in code ported from"
                             " TensorFlow's BERT, 1e-6) changes the outputs only of rows whose variance is near it.",
                             where=f"{STEP_BY_STEP}, Step 3: the encoder layer (PyTorch's default; the paper is"
                                   " silent)")

# §3.4, §3.5 embeddings, output, positions
EMBEDDING = lesson(f"{STEP_BY_STEP}, Step 1: token embeddings, times sqrt(d_model)",
                   "x_pos = sqrt(d_model) E[token_pos] + PE(pos) ... The paper uses one table for the source, the"
                   " target and the output layer of step 5.")
OUTPUT_LAYER = lesson(f"{STEP_BY_STEP}, Step 5: the output layer, tied to the embedding",
                      "P(next token) = softmax(y_pos E^T) ... a linear layer multiplies by the transposed embedding"
                      " table, with no new weights.")
TIED_WEIGHTS = paper("§3.4", "we share the same weight matrix between the two embedding layers and the pre-softmax"
                             " linear transformation")
GREEDY_DECODING = lesson(f"{STEP_BY_STEP}, The toy run: it learns to reverse",
                         "Greedy decoding. At inference, there is no answer to shift. The encoder runs once. Then"
                         " the decoder starts with <s> and adds the most likely token at each step.")
POSITIONAL_ENCODING = lesson(f"{STEP_BY_STEP}, Step 2: sinusoidal positional encoding",
                             "PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos /"
                             " 10000^(2i/d_model)).")
POSITIONAL_ENCODING_BY_HAND = lesson(f"{STEP_BY_STEP}, Step 2: sinusoidal positional encoding",
                                     "Check by hand at position 1 ... sin 1 = 0.841 and cos 1 = 0.540 ..."
                                     " sin 0.750 = 0.682 and cos 0.750 = 0.732.")
POSITIONS_ADDED = lesson(f"{VANILLA}, 1. How the source enters the encoder",
                         "PE is added to the embedding, not concatenated, so the shape remains (S, 512).")

# §5 training
LEARNING_RATE = lesson(f"{STEP_BY_STEP}, Step 6: the training recipe",
                       "lrate = d_model^-0.5 min(step^-0.5, step warmup_steps^-1.5) ... the rate grows in a straight"
                       " line for warmup_steps steps, then falls as 1/sqrt(step).")
LEARNING_RATE_LOGGED = lesson(f"{STEP_BY_STEP}, Guided practice: trace the shapes of a bigger example",
                              "A log printed after sched.step() shows 1.58e-03, the rate of the next step.")
LABEL_SMOOTHING = lesson(f"{STEP_BY_STEP}, Step 6: the training recipe",
                         "nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1): the target puts 0.9077 on the"
                         " right token and 0.0077 on each other; the best possible loss is 0.537.")
ADAM = lesson(f"{STEP_BY_STEP}, Step 6: the training recipe",
              "Adam with unusual settings. beta_1 = 0.9, beta_2 = 0.98 and eps = 10^-9.")
DROPOUT_IN_TRAINING_ONLY = lesson(f"{STEP_BY_STEP}, Step 3: the encoder layer",
                                  "With dropout, used in training (§5.4) ... (.eval() switches dropout off.)")
DROPOUT_PLACES = lesson(f"{STEP_BY_STEP}, Step 6: the training recipe",
                        "Dropout 0.1 on every sublayer's output and on the embeddings plus positions, as in Overfitting"
                        " controls.")
TOY_RUN = lesson(f"{STEP_BY_STEP}, The toy run: it learns to reverse",
                 "Now train the toy model with the whole recipe ... step 3000 ... exact match 100.0%.")
MIRRORED_ATTENTION = lesson(f"{STEP_BY_STEP}, The toy run: it learns to reverse",
                            "Layer 2 is sharp. The start token's row puts 0.999 on d (position 5) ... These cells form"
                            " a line from the top right to the bottom left.")
SMOOTHED_CONFIDENCE = lesson(f"{STEP_BY_STEP}, Follow one example through every step",
                             "the most likely tokens are d, e, b, a, c and the end token, with probabilities 0.916,"
                             " 0.916, 0.929, 0.927, 0.924 and 0.927.")
TRAINED_EXAMPLE = lesson(f"{STEP_BY_STEP}, Follow one example through every step",
                         "The trained toy model on the source c a b e d, in eval mode (no dropout) ... the most likely"
                         " tokens are d, e, b, a, c and the end token.")

# Table 3 and the shapes
PARAMETER_COUNT = lesson(f"{STEP_BY_STEP}, Step 7: how big is the base model?",
                         "attention 4d^2 + 4d, the FFN two matrices and biases, each LayerNorm 2d ... total"
                         " 63,082,496; with a separate output matrix 82,026,496.")
PARAMETER_COUNT_WITHOUT_BIASES = lesson(f"{STEP_BY_STEP}, Step 7: how big is the base model?",
                                        "the paper's attention formulas show none [no biases], which would remove"
                                        " only 36,864 parameters.")
EXPLORER_SHAPES = lesson(f"{STEP_BY_STEP}, Follow one example through every step",
                         "Step 6, encoder self-attention weights of layer 1, head 1, (1, 4, 5, 5) ... Step 13, the"
                         " output layer tied to the embedding, (1, 6, 13).")
PRACTICE_SHAPES = lesson(f"{STEP_BY_STEP}, Guided practice: trace the shapes of a bigger example",
                         "Masked self-attention (1, 4, 8, 8), with 28 hidden cells per head above the diagonal;"
                         " cross-attention (1, 4, 8, 7), with no causal mask; logits (1, 8, 13).")
BASE_SHAPES = lesson(f"{VANILLA}, 4. Why one decoder layer has three sublayers",
                     "With target length T and source length S, the attention weights have shape (T, S) and need not"
                     " be square.")
BASE_CONFIGURATION = lesson(f"{VANILLA}, From token IDs to the next token: the complete path",
                            "The 512-dimensional states, 8 heads, and 2048-dimensional FFN below refer to the paper's"
                            " base configuration.")
