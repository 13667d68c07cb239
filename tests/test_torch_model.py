"""``conformance.adapters.torch``: TorchModel and its helpers, and ``propose_mapping`` on real modules.

Small modules written here test one helper each; the built-in torch.nn and fused-QKV models test the
whole: a proposed map must load the same weights the hand-written one does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conformance import Conventions
from conformance.adapters import NameMapError
from conformance.adapters.propose import propose_mapping
from conformance.config import ModelConfig, toy_config
from conformance.paper.formulas import lrate
from conformance.problems import oracle
from conformance.weights import attention_shapes, model_shapes, random_weights

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from conformance.adapters.torch import TorchModel, UnmappedMatrixError, load_component  # noqa: E402
from conformance.implementations.torch_nn import adapter as torch_nn  # noqa: E402
from conformance.implementations.torch_nn import model as torch_nn_model  # noqa: E402
from conformance.implementations.variants import fused_qkv  # noqa: E402

PAD, BOS, EOS = 0, 1, 2


def arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for shape in shapes]


# -- weights ------------------------------------------------------------------------------------------


def test_nn_linear_weights_are_stored_transposed_raw_parameters_as_given_unless_marked_T():
    module = nn.Module()
    module.lin, module.raw = nn.Linear(3, 5), nn.Parameter(torch.zeros(3, 5))
    module.raw_t = nn.Parameter(torch.zeros(5, 3))
    A, = arrays((3, 5))
    load_component(module, {"W1": A, "W2": A, "W_O": A, "b1": np.zeros(5, np.float32)},
                   {"W1": "lin.weight", "b1": "lin.bias", "W2": "raw", "W_O": "raw_t.T"})
    np.testing.assert_array_equal(module.lin.weight.detach().numpy(), A.T)
    np.testing.assert_array_equal(module.raw.detach().numpy(), A)
    np.testing.assert_array_equal(module.raw_t.detach().numpy(), A.T)


def test_a_fused_in_projection_is_split_and_merged_as_torch_nn_multihead_attention_reads_it():
    d, h = 8, 2
    weights = random_weights(attention_shapes(d), np.random.default_rng(1))
    mha = load_component(nn.MultiheadAttention(d, h, batch_first=True), weights, torch_nn.MHA)
    stacked = torch.cat([torch.as_tensor(weights[m]).T for m in ("W_Q", "W_K", "W_V")])  # nn's (3d, d)
    assert torch.equal(mha.in_proj_weight.detach(), stacked)
    x, = arrays((2, 5, d), seed=2)
    with torch.no_grad():
        out, _ = mha(*(torch.as_tensor(x),) * 3, need_weights=False)
    want, _ = oracle.multi_head_attention(x, x, x, weights, h)
    assert np.abs(out.numpy() - want).max() <= 1e-5


def test_every_mismatch_of_names_or_shapes_is_reported_with_the_fix():
    module = nn.Module()
    module.lin = nn.Linear(3, 5)
    with pytest.raises(NameMapError, match=r"W1 \(key 'W1'\) -> 'lin.weights' matches no parameter; closest: lin.we"):
        load_component(module, {"W1": np.zeros((3, 5))}, {"W1": "lin.weights"})
    with pytest.raises(ValueError, match=r"W1: shape \(5, 3\) does not fit lin.weight \(3, 5\) .*add or remove '.T'"):
        load_component(module, {"W1": np.zeros((5, 3))}, {"W1": "lin.weight"})
    model = torch_nn.torch_nn_fixed.build_model(toy_config().as_dict(), 0)
    weights = random_weights(model_shapes(toy_config()), np.random.default_rng(0))
    del weights["E"]
    with pytest.raises(KeyError, match=r"missing E \(13, 64\)"):
        model.load_weights(weights)


def test_parameters_without_a_canonical_name_get_identity_values_and_are_listed():
    module = nn.Module()
    module.lin, module.norm = nn.Linear(3, 3), nn.LayerNorm(3)
    module.extra_bias, module.positions = nn.Parameter(torch.ones(4)), nn.Parameter(torch.ones(6, 3))
    module.final_logits_bias = nn.Parameter(torch.ones(1, 7))  # a bias, though 2-D (Hugging Face's)
    A, = arrays((3, 3))
    load_component(module, {"W_O": A}, {"W_O": "lin.weight"})
    assert (module.norm.weight == 1).all() and (module.norm.bias == 0).all()
    assert (module.lin.bias == 0).all() and (module.extra_bias == 0).all() and (module.positions == 0).all()
    assert (module.final_logits_bias == 0).all()


def test_a_weight_matrix_without_a_canonical_name_is_refused_with_the_names_that_fit_it():
    """An output matrix of its own that the map leaves out (a draft that took it for tied) is never set to 0, which
    would make every logit equal: load_weights writes nothing and names it, its shape and the names that fit."""
    module = nn.Module()
    module.emb, module.out = nn.Embedding(29, 16), nn.Linear(16, 29, bias=False)
    tied = ModelConfig(src_vocab=29, tgt_vocab=29, d_model=16, h=2, d_ff=40, N=0)
    before = module.emb.weight.detach().clone()
    with pytest.raises(UnmappedMatrixError) as raised:
        TorchModel(module, tied, names={"E": "emb.weight"}).load_weights(
            random_weights(model_shapes(tied), np.random.default_rng(0)))
    assert raised.value.problems == [
        'out.weight (29, 16) is a weight matrix no entry of the name map reaches, and a matrix has no identity value (0'
        ' would silence it). W_out (16, 29) fits it: add "W_out": "out" to the name map (the module keeps an output'
        ' matrix of its own: do not declare supports tie_output=(True,)); or, if it holds a copy of E (29, 16), list'
        ' it beside the map\'s: "E": ["emb.weight", "out"] with Conventions(ties_embeddings=False)']
    assert torch.equal(module.emb.weight, before)  # nothing written
    untied = tied.replace(tie_output=False)
    weights = random_weights(model_shapes(untied), np.random.default_rng(1))
    model = TorchModel(module, untied, names={"E": "emb.weight", "W_out": "out"})  # as the message says
    model.load_weights(weights)
    np.testing.assert_array_equal(model.dump_weights()["W_out"], weights["W_out"])

    layer = nn.Module()  # a component: the names it was given that fit
    layer.encoder = nn.ModuleList([nn.ModuleDict({"attn": nn.ModuleDict({"q": nn.Linear(4, 4), "k": nn.Linear(4, 4),
                                                                         "v": nn.Linear(4, 4), "o": nn.Linear(4, 4)}),
                                                  "gate": nn.Linear(4, 4)})])
    with pytest.raises(UnmappedMatrixError, match=r'encoder.0.gate.weight \(4, 4\) is a weight matrix .*\. If it holds'
                                                  r' a copy of W_[QKVO] \(4, 4\), list it beside the map\'s:'
                                                  r' "W_[QKVO]": \["encoder.0.attn.[qkvo]", "encoder.0.gate"\]'):
        load_component(layer, random_weights(attention_shapes(4), np.random.default_rng(2)),
                       {f"W_{r}": f"encoder.0.attn.{r.lower()}" for r in "QKVO"})


def test_a_shared_table_is_copied_into_separate_tables_and_read_back_from_the_first():
    """Separate source, target and output tables serving the paper's one E (ties_embeddings=False)."""
    shared, separate = toy_config(dropout=0.0), toy_config(dropout=0.0, share_embeddings=False, tie_output=False)
    net = torch_nn_model.TorchNNSeq2Seq(separate, final_norms=False, nested_tensor=False)
    names = {**torch_nn.NAMES, "E": ["src_embedding.weight", "tgt_embedding.weight", "generator.weight"]}
    model = TorchModel(net, shared, names=names, forward=lambda m, s, t: m(s, t))
    weights = random_weights(model_shapes(shared), np.random.default_rng(3))
    model.load_weights(weights)
    for table in (net.src_embedding.weight, net.tgt_embedding.weight, net.generator.weight):  # (V, d) each
        np.testing.assert_array_equal(table.detach().numpy(), weights["E"])
    assert model.unmapped_parameters() == {}
    np.testing.assert_array_equal(model.dump_weights()["E"], weights["E"])
    reference = torch_nn.torch_nn_fixed.build_model(shared.as_dict(), 0)
    reference.load_weights(weights)
    src, tgt_in = np.array([[5, 6, 7, 0]]), np.array([[1, 5, 9, 4]])
    np.testing.assert_array_equal(model.forward(src, tgt_in), reference.forward(src, tgt_in))


def test_a_parameter_shared_by_two_modules_is_mapped_under_either_name_and_listed_never():
    module = nn.Module()
    module.embed, module.out = nn.Embedding(7, 4), nn.Linear(4, 7, bias=False)
    module.out.weight = module.embed.weight  # tied by assignment
    config = ModelConfig(src_vocab=7, tgt_vocab=7, d_model=4, h=1, d_ff=4, N=0)
    model = TorchModel(module, config, names={"E": "out.weight"})
    model.load_weights({"E": np.eye(7, 4, dtype=np.float32)})
    assert model.unmapped_parameters() == {} and torch.equal(module.embed.weight, module.out.weight)


# -- evaluation ---------------------------------------------------------------------------------------


class Scripted(nn.Module):
    """A decoder whose next token is scripted per row: row r emits SCRIPT[r] one token per step."""

    SCRIPT = [[5, 6, EOS, 9], [7, EOS, 9, 9], [8, 8, 8, 8]]

    def __init__(self, batch_first: bool):
        super().__init__()
        self.batch_first, self.calls = batch_first, 0
        self.p = nn.Parameter(torch.zeros(1))

    def encode(self, src):
        return torch.zeros(*src.shape, 4)

    def decode(self, tgt_in, memory, src):
        ys = tgt_in if self.batch_first else tgt_in.T
        self.calls += 1
        step = ys.shape[1] - 1  # tokens generated so far
        logits = torch.zeros(*ys.shape, 10)
        for row, script in enumerate(self.SCRIPT[: ys.shape[0]]):
            logits[row, -1, script[min(step, 3)]] = 1.0
        return logits if self.batch_first else logits.transpose(0, 1)


@pytest.mark.parametrize("batch_first", [True, False])
def test_greedy_decoding_is_batched_pads_after_eos_and_follows_the_layout(batch_first):
    config = ModelConfig(src_vocab=10, tgt_vocab=10, d_model=4, h=1, d_ff=4, N=0)
    module = Scripted(batch_first)
    model = TorchModel(module, config, names={}, batch_first=batch_first, supplied=("greedy_decode",))
    src = np.array([[3, 4], [3, 0], [4, 4]])
    got = model.greedy_decode(src if batch_first else src.T, max_len=6)
    got = got if batch_first else got.T
    np.testing.assert_array_equal(got, [[5, 6, EOS, PAD, PAD, PAD], [7, EOS, PAD, PAD, PAD, PAD], [8] * 6])
    two_rows = src[:2] if batch_first else src[:2].T  # both rows end: decoding stops after three tokens
    short = model.greedy_decode(two_rows, max_len=6)
    assert (short if batch_first else short.T).shape == (2, 3)


class KeepsWeights(nn.Module):
    """Attention inside a residual module that keeps its weights as ``attn`` (the annotated transformer's way)."""

    def __init__(self, d: int, h: int):
        super().__init__()
        self.mha, self.norm = nn.MultiheadAttention(d, h, batch_first=True), nn.LayerNorm(d)
        self.attn = None

    def forward(self, x):
        out, self.attn = self.mha(x, x, x, average_attn_weights=False)
        return self.norm(x + out)


def test_attention_weights_are_read_by_hooks_from_nn_multihead_attention_and_from_a_kept_attribute():
    d, h = 8, 2
    config = ModelConfig(src_vocab=10, tgt_vocab=10, d_model=d, h=h, d_ff=8, N=1)
    module = nn.Module()
    module.embed, module.enc, module.dec = nn.Embedding(10, d), nn.TransformerEncoderLayer(
        d, h, 16, 0.0, batch_first=True), KeepsWeights(d, h)
    attention = {"encoder.{l}.self_attn": "enc.self_attn", "decoder.{l}.self_attn": "dec"}
    model = TorchModel(module, config, names={}, attention=attention,
                       forward=lambda m, src, tgt_in: m.dec(m.enc(m.embed(src))))
    src = np.array([[3, 4, 5], [6, 7, 8]])
    got = model.attention_weights(src, src)
    with torch.no_grad():
        x = module.embed(torch.as_tensor(src))
        _, want = module.enc.self_attn(x, x, x, average_attn_weights=False)
    assert sorted(got) == ["decoder.0.self_attn", "encoder.0.self_attn"]  # cross_attn: named by no entry
    assert got["encoder.0.self_attn"].shape == (2, h, 3, 3)
    assert np.abs(got["encoder.0.self_attn"] - want.numpy()).max() <= 1e-6
    np.testing.assert_array_equal(got["decoder.0.self_attn"], module.dec.attn.numpy())
    with pytest.raises(NotImplementedError, match="no attention modules named"):
        TorchModel(module, config, names={}).attention_weights(src, src)


# -- training -----------------------------------------------------------------------------------------


def test_the_paper_recipe_reports_the_loss_before_the_update_and_the_rate_it_used():
    cfg = toy_config(dropout=0.0)
    model = fused_qkv.adapter.build_model(cfg.as_dict(), 0)
    src, tgt_in = np.array([[5, 3, 4, 7], [5, 3, 0, 0]]).T, np.array([[1, 6, 7, 4], [1, 3, 5, 0]]).T
    tgt_out = np.array([[6, 7, 4, 2], [3, 5, 2, 0]]).T
    logits = torch.as_tensor(model.forward(src, tgt_in)).reshape(-1, cfg.tgt_vocab)
    before = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)(logits, torch.as_tensor(tgt_out).reshape(-1))
    first, second = model.train_step(src, tgt_in, tgt_out), model.train_step(src, tgt_in, tgt_out)
    assert first["loss"] == pytest.approx(before.item(), abs=1e-6)
    assert (first["lr"], second["lr"]) == (pytest.approx(lrate(1, 64, 400)), pytest.approx(lrate(2, 64, 400)))


def test_the_reference_trains_with_the_paper_recipe_and_is_credited_with_it():
    """One recipe: the reference's trainer is ``PaperRecipe`` with the reference's own schedule and loss; its
    updates are the recipe's (the losses and rates of ``PaperRecipe``'s defaults, dropout off), and as the
    reference's own code it is not reported as supplied."""
    from conformance.adapters.torch import PaperRecipe
    from conformance.implementations.reference.adapter import ReferenceAdapter

    cfg = toy_config(dropout=0.0)
    reference = ReferenceAdapter().build_model(cfg.as_dict(), 0)
    twin = ReferenceAdapter().build_model(cfg.as_dict(), 0)
    recipe = PaperRecipe(twin.module, cfg, forward=lambda m, src, tgt_in: m(src, tgt_in))
    src, tgt_in = np.array([[5, 3, 4, 7], [5, 3, 0, 0]]), np.array([[1, 6, 7, 4], [1, 3, 5, 0]])
    tgt_out = np.array([[6, 7, 4, 2], [3, 5, 2, 0]])
    for _ in range(4):  # the losses after the first follow the updates
        ours = reference.train_step(src, tgt_in, tgt_out)
        theirs = recipe.train_step(*(torch.as_tensor(a) for a in (src, tgt_in, tgt_out)))
        assert ours["lr"] == theirs["lr"] and ours["loss"] == pytest.approx(theirs["loss"], abs=1e-6)
    assert isinstance(reference._trainer, PaperRecipe)
    assert reference.__conformance_supplied__ == {}


# -- proposals ----------------------------------------------------------------------------------------

PROBE = ModelConfig(src_vocab=23, tgt_vocab=23, d_model=16, h=2, d_ff=40, N=2, dropout=0.0)


@pytest.mark.parametrize("builtin", ["torch_nn", "fused_qkv"])
def test_a_proposed_map_loads_what_the_hand_written_one_loads(builtin, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nn's nested-tensor notice
        model = (torch_nn.torch_nn_fixed.build_model(PROBE.as_dict(), 0) if builtin == "torch_nn"
                 else fused_qkv.adapter.build_model(PROBE.as_dict(), 0))
    proposal = propose_mapping(model.module, PROBE)
    assert "NAMES = {" in capsys.readouterr().out and proposal.unmapped == []
    drafted = TorchModel(model.module, PROBE, names=proposal.names)
    weights = random_weights(model_shapes(PROBE), np.random.default_rng(4))
    drafted.load_weights(weights)
    for name, value in model.dump_weights().items():  # the hand-written map reads back what the draft wrote
        np.testing.assert_array_equal(value, weights[name], err_msg=name)
    want = ({"*.{l}.self_attn": "*.{l}.self_attn", "decoder.{l}.cross_attn": "decoder.{l}.cross_attn"}
            if builtin == "fused_qkv" else {"*.{l}.self_attn": "transformer.*.layers.{l}.self_attn",
                                            "decoder.{l}.cross_attn": "transformer.decoder.layers.{l}.multihead_attn"})
    assert proposal.attention == want


def test_a_proposal_lists_what_has_no_canonical_name_and_says_where_it_guessed():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = torch_nn_model.TorchNNSeq2Seq(PROBE, final_norms=True, nested_tensor=False)
    proposal = propose_mapping(net, PROBE, echo=False)
    assert proposal.unmapped == [f"transformer.{stack}.norm.{p}" for stack in ("encoder", "decoder")
                                 for p in ("weight", "bias")]

    class Annotated(nn.Module):  # the annotated transformer's attention: four Linear layers in a list
        def __init__(self):
            super().__init__()
            self.encoder_layers = nn.ModuleList(nn.ModuleDict({"self_attn": nn.ModuleDict(
                {"linears": nn.ModuleList(nn.Linear(16, 16) for _ in range(4))})}) for _ in range(2))

    proposal = propose_mapping(Annotated(), PROBE, echo=False)
    assert proposal.names["encoder.{l}.self_attn.W_K"] == "encoder_layers.{l}.self_attn.linears.1.weight"
    assert any("W_Q, W_K, W_V, W_O in the order the module registers them" in g for g in proposal.guesses)
    assert "TODO encoder_layers.{l}.self_attn: projections taken as" in proposal.render()


class _Attention(nn.Module):
    """Four (d, d) projections registered under ``names``, in the order given (k before q, say)."""

    def __init__(self, names, d=16):
        super().__init__()
        for name in names:
            setattr(self, name, nn.Linear(d, d))


class _Layer(nn.Module):
    def __init__(self, attention, decoder=False, cross="encoder_attn"):
        super().__init__()
        self.self_attn = attention()
        if decoder:
            setattr(self, cross, attention())
        self.fc1, self.fc2 = nn.Linear(16, 40), nn.Linear(40, 16)
        self.norms = nn.ModuleList(nn.LayerNorm(16) for _ in range(3 if decoder else 2))


class _Seq2Seq(nn.Module):
    def __init__(self, attention, cross="encoder_attn"):
        super().__init__()
        self.encoder = nn.ModuleList(_Layer(attention) for _ in range(2))
        self.decoder = nn.ModuleList(_Layer(attention, True, cross) for _ in range(2))


@pytest.mark.parametrize("names", [("k_proj", "v_proj", "q_proj", "out_proj"),  # HF, key first
                                   ("linear_keys", "linear_values", "linear_query", "final_linear"),  # OpenNMT-py
                                   ("key", "value", "query", "out"), ("w_k", "w_o", "w_q", "w_v"),
                                   ("wk", "wv", "wq", "wo"), ("to_k", "to_v", "to_q", "to_out"),
                                   ("linear_out", "linear_keys", "linear_values", "linear_query")])
def test_projections_are_proposed_by_their_names_whatever_order_registers_them(names):
    proposal = propose_mapping(_Seq2Seq(lambda: _Attention(names)), PROBE, echo=False)
    by_role = {role: next(n for n in names if role_of(n, role)) for role in "QKVO"}
    for role, name in by_role.items():
        for attention in ("*.{l}.self_attn", "decoder.{l}.cross_attn"):
            module = attention.replace("cross_attn", "encoder_attn")
            assert proposal.names[f"{attention}.W_{role}"] == f"{module}.{name}.weight", (attention, role)
    assert not any("order the module registers" in guess for guess in proposal.guesses), proposal.guesses


def role_of(name: str, role: str) -> bool:
    """The test's own reading of the spellings above, independent of ROLE_HINTS."""
    return {"Q": ("q_proj", "linear_query", "query", "w_q", "wq", "to_q"),
            "K": ("k_proj", "linear_keys", "key", "w_k", "wk", "to_k"),
            "V": ("v_proj", "linear_values", "value", "w_v", "wv", "to_v"),
            "O": ("out_proj", "final_linear", "out", "w_o", "wo", "to_out", "linear_out")}[role].__contains__(name)


def test_names_decide_what_they_can_the_order_the_rest_and_the_guess_says_which():
    proposal = propose_mapping(_Seq2Seq(lambda: _Attention(("lin_a", "value", "lin_b", "lin_c"))), PROBE, echo=False)
    assert proposal.names["*.{l}.self_attn.W_V"] == "*.{l}.self_attn.value.weight"
    assert [proposal.names[f"*.{{l}}.self_attn.W_{r}"] for r in "QKO"] == [
        f"*.{{l}}.self_attn.{n}.weight" for n in ("lin_a", "lin_b", "lin_c")]
    assert any("projections taken as W_Q, W_K, W_O in the order the module registers them"
               " (encoder.{l}.self_attn.lin_a.weight" in guess for guess in proposal.guesses), proposal.guesses


def test_a_fused_in_projection_of_nn_multihead_attention_under_any_name_is_w_qkv():
    class Layer(nn.Module):
        def __init__(self, decoder=False):
            super().__init__()
            self.mixer = nn.MultiheadAttention(16, 2)  # no attention word in its name: found by its projections
            if decoder:
                self.memory = nn.MultiheadAttention(16, 2)
            self.ff = nn.Sequential(nn.Linear(16, 40), nn.ReLU(), nn.Linear(40, 16))
            self.ln = nn.ModuleList(nn.LayerNorm(16) for _ in range(3 if decoder else 2))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.ModuleList(Layer() for _ in range(2))
            self.dec = nn.ModuleList(Layer(True) for _ in range(2))
            self.emb = nn.Embedding(23, 16)

    proposal = propose_mapping(Net(), PROBE, echo=False)
    assert proposal.names["encoder.{l}.self_attn.W_QKV"] == "enc.{l}.mixer.in_proj_weight"
    assert proposal.names["decoder.{l}.self_attn.W_O"] == "dec.{l}.mixer.out_proj.weight"
    assert proposal.names["decoder.{l}.cross_attn.W_QKV"] == "dec.{l}.memory.in_proj_weight"
    assert proposal.names["E"] == "emb.weight" and proposal.unmapped == []
    model = TorchModel(Net(), PROBE, names=proposal.names)
    weights = random_weights(model_shapes(PROBE), np.random.default_rng(5))
    model.load_weights(weights)
    np.testing.assert_array_equal(model.dump_weights()["decoder.1.cross_attn.W_K"], weights["decoder.1.cross_attn.W_K"])


def test_nested_embedding_tables_and_the_annotated_transformers_norms_are_found():
    """The Annotated Transformer keeps its tables in Embeddings modules inside a Sequential
    (``src_embed.0.lut.weight``) and its LayerNorm vectors as a_2, b_2; OpenNMT-py keeps them under the
    encoder, in a numbered list (``encoder.embeddings.emb_luts.0.weight``)."""
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.a_2, self.b_2 = nn.Parameter(torch.ones(16)), nn.Parameter(torch.zeros(16))

    class Embeddings(nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self.lut = nn.Embedding(vocab, 16)

    def attention():
        return nn.ModuleDict({"linears": nn.ModuleList(nn.Linear(16, 16) for _ in range(4))})

    def layer(decoder):
        parts = {"self_attn": attention(), "feed_forward": nn.ModuleDict({"w_1": nn.Linear(16, 40),
                                                                          "w_2": nn.Linear(40, 16)}),
                 "sublayer": nn.ModuleList(nn.ModuleDict({"norm": Norm()}) for _ in range(3 if decoder else 2))}
        return nn.ModuleDict({**parts, "src_attn": attention()} if decoder else parts)

    class Annotated(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.encoder = nn.ModuleDict({"layers": nn.ModuleList(layer(False) for _ in range(2))})
            self.decoder = nn.ModuleDict({"layers": nn.ModuleList(layer(True) for _ in range(2))})
            self.src_embed = nn.Sequential(Embeddings(config.src_vocab))
            self.tgt_embed = nn.Sequential(Embeddings(config.tgt_vocab))
            self.generator = nn.ModuleDict({"proj": nn.Linear(16, config.tgt_vocab, bias=False)})

    config = PROBE.replace(tgt_vocab=29, share_embeddings=False, tie_output=False)
    proposal = propose_mapping(Annotated(config), config, echo=False)
    assert {k: proposal.names[k] for k in ("E_src", "E_tgt", "W_out")} == {
        "E_src": "src_embed.0.lut.weight", "E_tgt": "tgt_embed.0.lut.weight", "W_out": "generator.proj.weight"}
    assert proposal.names["*.{l}.norm1.gamma"] == "*.layers.{l}.sublayer.0.norm.a_2"
    assert proposal.names["decoder.{l}.norm3.beta"] == "decoder.layers.{l}.sublayer.2.norm.b_2"
    assert proposal.attention == {"*.{l}.self_attn": "*.layers.{l}.self_attn",
                                  "decoder.{l}.cross_attn": "decoder.layers.{l}.src_attn"}
    assert proposal.unmapped == []
    model = TorchModel(Annotated(config), config, names=proposal.names)
    weights = random_weights(model_shapes(config), np.random.default_rng(6))
    model.load_weights(weights)
    for name, value in model.dump_weights().items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)

    opennmt = nn.Module()
    opennmt.encoder = nn.ModuleDict({"embeddings": nn.ModuleDict({"emb_luts": nn.ModuleList([nn.Embedding(23, 16)])}),
                                     "transformer": nn.ModuleList(layer(False) for _ in range(2))})
    proposal = propose_mapping(opennmt, PROBE, echo=False)
    assert proposal.names["E"] == "encoder.embeddings.emb_luts.0.weight"
    assert "encoder.{l}.self_attn.W_Q" in proposal.names


def test_tables_are_placed_by_what_they_are_a_tied_output_is_the_table_and_an_untied_one_w_out():
    """An nn.Embedding is a table, an nn.Linear from d_model to the target vocabulary (or a raw (d, V) matrix) an
    output; a weight tied by assignment is one tensor, the table's; E_src and E_tgt by their number of rows."""
    config = PROBE.replace(tgt_vocab=29, share_embeddings=False, tie_output=False)

    def net(tied: bool, raw: bool):
        module = nn.Module()
        module.source, module.target = nn.Embedding(23, 16), nn.Embedding(29, 16)  # no name says which side
        if raw:
            module.W = nn.Parameter(torch.zeros(16, 29))  # x @ W, no name saying output
        else:
            module.readout = nn.Linear(16, 29, bias=False)
            if tied:
                module.readout.weight = module.target.weight
        return module

    untied = propose_mapping(net(tied=False, raw=False), config, echo=False)
    assert {k: untied.names.get(k) for k in ("E_src", "E_tgt", "W_out")} == {
        "E_src": "source.weight", "E_tgt": "target.weight", "W_out": "readout.weight"}
    assert propose_mapping(net(tied=False, raw=True), config, echo=False).names["W_out"] == "W"
    tied = propose_mapping(net(tied=True, raw=False), config.replace(tie_output=True), echo=False)
    assert "W_out" not in tied.names and tied.names["E_tgt"] == "target.weight" and tied.unmapped == []


# -- TorchAdapter: an adapter declared ---------------------------------------------------------------


def test_a_declared_adapter_has_the_parts_it_was_given_and_no_other():
    from conformance.adapters.torch import Component, TorchAdapter, on_tensors
    from conformance.boundary.candidate import Candidate

    adapter = TorchAdapter(lambda c: nn.Linear(c.d_model, c.d_model), names={}, conventions=Conventions(),
                           learning_rate=lambda step, d_model, warmup: step / warmup,
                           feed_forward=Component(lambda s: nn.Sequential(nn.Linear(s.d_model, s.d_ff), nn.ReLU(),
                                                                          nn.Linear(s.d_ff, s.d_model)),
                                                  names={"W1": "0", "W2": "2"}))
    provided = Candidate(adapter, name="declared").provided_parts()
    assert [p for p in provided if not p.startswith("model.")] == ["feed_forward", "build_model", "learning_rate",
                                                                   "parameter_count"]
    assert adapter.learning_rate(3, 64, 4) == 0.75 and adapter.parameter_count(toy_config().as_dict()) == 64 * 65
    weights = random_weights({"W1": (4, 6), "b1": (6,), "W2": (6, 4), "b2": (4,)}, np.random.default_rng(0))
    x, = arrays((2, 3, 4))
    want = np.maximum(x @ weights["W1"] + weights["b1"], 0) @ weights["W2"] + weights["b2"]
    np.testing.assert_allclose(adapter.feed_forward(x, weights), want, atol=1e-5)
    with pytest.raises(TypeError, match="no part named layernorm"):
        TorchAdapter(names={}, conventions=Conventions(), layernorm=lambda x: x)
    halve = on_tensors(lambda t, keep: (t / 2, keep.sum()))
    halved, kept = halve(np.ones((2, 2), np.float32), np.array([True, False, True]))
    assert halved.dtype == np.float32 and (halved == 0.5).all() and kept == 2.0


class _OddNorm(nn.Module):
    """A LayerNorm whose vectors' names say nothing of their roles: ``weird_w`` built as ones (its gain), ``weird_s``
    as zeros (its shift); ``random`` draws both instead, so that only the forward could tell them."""

    def __init__(self, random=False):
        super().__init__()
        self.weird_w = nn.Parameter(torch.randn(16) if random else torch.ones(16))
        self.weird_s = nn.Parameter(torch.randn(16) if random else torch.zeros(16))

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return self.weird_w * centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5) + self.weird_s


def test_a_norms_gain_and_shift_are_told_by_what_they_hold_when_built_never_guessed():
    """Ones when built: the gain; zeros: the shift, whatever their names. Drawn at random and named like neither: a
    TODO that names them, and no entry (the draft never guesses a role)."""
    class Layer(nn.Module):
        def __init__(self, decoder, random):
            super().__init__()
            self.self_attn = _Attention(("q_proj", "k_proj", "v_proj", "out_proj"))
            if decoder:
                self.encoder_attn = _Attention(("q_proj", "k_proj", "v_proj", "out_proj"))
            self.fc1, self.fc2 = nn.Linear(16, 40), nn.Linear(40, 16)
            self.norms = nn.ModuleList(_OddNorm(random) for _ in range(3 if decoder else 2))

    class Net(nn.Module):
        def __init__(self, random=False):
            super().__init__()
            self.encoder = nn.ModuleList(Layer(False, random) for _ in range(2))
            self.decoder = nn.ModuleList(Layer(True, random) for _ in range(2))

    proposal = propose_mapping(Net(), PROBE, echo=False)
    assert proposal.names["*.{l}.norm1.gamma"] == "*.{l}.norms.0.weird_w"
    assert proposal.names["decoder.{l}.norm3.beta"] == "decoder.{l}.norms.2.weird_s"
    drawn = propose_mapping(Net(random=True), PROBE, echo=False)
    assert not any(".norm" in name for name in drawn.names), drawn.names
    assert any("encoder.0.norms.0.weird_w (16,): a vector of encoder LayerNorm 1 built neither as ones" in guess
               for guess in drawn.guesses), drawn.guesses


def test_a_parameter_without_a_canonical_name_is_set_to_what_it_held_when_built():
    """A gain named like nothing the name rule knows (``weird_w``), left out of the map: load_weights sets it to the
    ones it was built with, not to a shift's 0 (which would make every output of the norm its shift)."""
    from conformance.adapters.torch import identity_value

    norm = _OddNorm()
    norm.weird_w.data.fill_(1.0)
    assert identity_value(norm, "weird_w") == 1.0 and identity_value(norm, "weird_s") == 0.0
    norm.weird_w.data.normal_()  # trained since: the value it was first asked for is kept
    assert identity_value(norm, "weird_w") == 1.0
