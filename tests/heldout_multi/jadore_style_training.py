"""A Transformer laid out like the widely forked "attention-is-all-you-need-pytorch" repository:
``transformer/Modules.py`` (``ScaledDotProductAttention`` with a ``temperature``), ``transformer/SubLayers.py``
(``MultiHeadAttention`` and ``PositionwiseFeedForward`` that each add their residual and apply their own
``LayerNorm(eps=1e-6)``), ``transformer/Layers.py``, ``transformer/Models.py`` (``PositionalEncoding`` table of
``n_position = 200``, ``get_pad_mask``, ``get_subsequent_mask``, weight sharing between the source and target
embeddings and the projection, ``scale_emb_or_prj = 'emb'``), ``transformer/Optim.py`` (``ScheduledOptim``)
and ``train.py``'s ``cal_loss``/``cal_performance``.

The adapter gives the model with the repository's own training step, its sublayers and layers, the schedule
and ``cal_loss`` as the loss function.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter

# train.py's options, as the run was launched
OPT = {"lr_mul": 1.0, "label_smoothing": True, "smoothing_target": "repo", "loss_reduction": "sum",
       "attn_dropout": True, "embedding_layer_norm": True}


# ----------------------------------------------------------------------------------------------- Modules.py
class ScaledDotProductAttention(nn.Module):
    """ Scaled Dot-Product Attention """

    def __init__(self, temperature, attn_dropout=0.1):
        super().__init__()
        self.temperature = temperature
        self.dropout = nn.Dropout(attn_dropout)

    def forward(self, q, k, v, mask=None):
        attn = torch.matmul(q / self.temperature, k.transpose(2, 3))
        if mask is not None:
            attn = attn.masked_fill(mask == 0, -1e9)
        attn = F.softmax(attn, dim=-1)
        if OPT["attn_dropout"]:
            attn = self.dropout(attn)
        output = torch.matmul(attn, v)
        return output, attn


# --------------------------------------------------------------------------------------------- SubLayers.py
class MultiHeadAttention(nn.Module):
    """ Multi-Head Attention module """

    def __init__(self, n_head, d_model, d_k, d_v, dropout=0.1):
        super().__init__()
        self.n_head = n_head
        self.d_k = d_k
        self.d_v = d_v
        self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)
        self.fc = nn.Linear(n_head * d_v, d_model, bias=False)
        self.attention = ScaledDotProductAttention(temperature=d_k ** 0.5, attn_dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, q, k, v, mask=None):
        d_k, d_v, n_head = self.d_k, self.d_v, self.n_head
        sz_b, len_q, len_k, len_v = q.size(0), q.size(1), k.size(1), v.size(1)
        residual = q
        q = self.w_qs(q).view(sz_b, len_q, n_head, d_k)
        k = self.w_ks(k).view(sz_b, len_k, n_head, d_k)
        v = self.w_vs(v).view(sz_b, len_v, n_head, d_v)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if mask is not None:
            mask = mask.unsqueeze(1)  # For head axis broadcasting.
        q, attn = self.attention(q, k, v, mask=mask)
        q = q.transpose(1, 2).contiguous().view(sz_b, len_q, -1)
        q = self.dropout(self.fc(q))
        q += residual
        q = self.layer_norm(q)
        return q, attn


class PositionwiseFeedForward(nn.Module):
    """ A two-feed-forward-layer module """

    def __init__(self, d_in, d_hid, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_in, d_hid)  # position-wise
        self.w_2 = nn.Linear(d_hid, d_in)  # position-wise
        self.layer_norm = nn.LayerNorm(d_in, eps=1e-6)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        residual = x
        x = self.w_2(F.relu(self.w_1(x)))
        x = self.dropout(x)
        x += residual
        x = self.layer_norm(x)
        return x


# ------------------------------------------------------------------------------------------------ Layers.py
class EncoderLayer(nn.Module):
    def __init__(self, d_model, d_inner, n_head, d_k, d_v, dropout=0.1):
        super().__init__()
        self.slf_attn = MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=dropout)
        self.pos_ffn = PositionwiseFeedForward(d_model, d_inner, dropout=dropout)

    def forward(self, enc_input, slf_attn_mask=None):
        enc_output, enc_slf_attn = self.slf_attn(enc_input, enc_input, enc_input, mask=slf_attn_mask)
        enc_output = self.pos_ffn(enc_output)
        return enc_output, enc_slf_attn


class DecoderLayer(nn.Module):
    def __init__(self, d_model, d_inner, n_head, d_k, d_v, dropout=0.1):
        super().__init__()
        self.slf_attn = MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=dropout)
        self.enc_attn = MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=dropout)
        self.pos_ffn = PositionwiseFeedForward(d_model, d_inner, dropout=dropout)

    def forward(self, dec_input, enc_output, slf_attn_mask=None, dec_enc_attn_mask=None):
        dec_output, dec_slf_attn = self.slf_attn(dec_input, dec_input, dec_input, mask=slf_attn_mask)
        dec_output, dec_enc_attn = self.enc_attn(dec_output, enc_output, enc_output, mask=dec_enc_attn_mask)
        dec_output = self.pos_ffn(dec_output)
        return dec_output, dec_slf_attn, dec_enc_attn


# ------------------------------------------------------------------------------------------------ Models.py
def get_pad_mask(seq, pad_idx):
    return (seq != pad_idx).unsqueeze(-2)


def get_subsequent_mask(seq):
    """ For masking out the subsequent info. """
    sz_b, len_s = seq.size()
    subsequent_mask = (1 - torch.triu(torch.ones((1, len_s, len_s), device=seq.device), diagonal=1)).bool()
    return subsequent_mask


class PositionalEncoding(nn.Module):
    def __init__(self, d_hid, n_position=200):
        super().__init__()
        self.register_buffer("pos_table", self._get_sinusoid_encoding_table(n_position, d_hid))

    def _get_sinusoid_encoding_table(self, n_position, d_hid):
        """ Sinusoid position encoding table """

        def get_position_angle_vec(position):
            return [position / np.power(10000, 2 * (hid_j // 2) / d_hid) for hid_j in range(d_hid)]

        sinusoid_table = np.array([get_position_angle_vec(pos_i) for pos_i in range(n_position)])
        sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2])  # dim 2i
        sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2])  # dim 2i+1
        return torch.FloatTensor(sinusoid_table).unsqueeze(0)

    def forward(self, x):
        return x + self.pos_table[:, :x.size(1)].clone().detach()


class Encoder(nn.Module):
    def __init__(self, n_src_vocab, d_word_vec, n_layers, n_head, d_k, d_v, d_model, d_inner, pad_idx,
                 dropout=0.1, n_position=200, scale_emb=False):
        super().__init__()
        self.src_word_emb = nn.Embedding(n_src_vocab, d_word_vec, padding_idx=None)
        self.position_enc = PositionalEncoding(d_word_vec, n_position=n_position)
        self.dropout = nn.Dropout(p=dropout)
        self.layer_stack = nn.ModuleList([EncoderLayer(d_model, d_inner, n_head, d_k, d_v, dropout=dropout)
                                          for _ in range(n_layers)])
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6) if OPT["embedding_layer_norm"] else nn.Identity()
        self.scale_emb = scale_emb
        self.d_model = d_model

    def forward(self, src_seq, src_mask, return_attns=False):
        enc_slf_attn_list = []
        enc_output = self.src_word_emb(src_seq)
        if self.scale_emb:
            enc_output *= self.d_model ** 0.5
        enc_output = self.dropout(self.position_enc(enc_output))
        enc_output = self.layer_norm(enc_output)
        for enc_layer in self.layer_stack:
            enc_output, enc_slf_attn = enc_layer(enc_output, slf_attn_mask=src_mask)
            enc_slf_attn_list += [enc_slf_attn] if return_attns else []
        if return_attns:
            return enc_output, enc_slf_attn_list
        return enc_output,


class Decoder(nn.Module):
    def __init__(self, n_trg_vocab, d_word_vec, n_layers, n_head, d_k, d_v, d_model, d_inner, pad_idx,
                 n_position=200, dropout=0.1, scale_emb=False):
        super().__init__()
        self.trg_word_emb = nn.Embedding(n_trg_vocab, d_word_vec, padding_idx=None)
        self.position_enc = PositionalEncoding(d_word_vec, n_position=n_position)
        self.dropout = nn.Dropout(p=dropout)
        self.layer_stack = nn.ModuleList([DecoderLayer(d_model, d_inner, n_head, d_k, d_v, dropout=dropout)
                                          for _ in range(n_layers)])
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6) if OPT["embedding_layer_norm"] else nn.Identity()
        self.scale_emb = scale_emb
        self.d_model = d_model

    def forward(self, trg_seq, trg_mask, enc_output, src_mask, return_attns=False):
        dec_output = self.trg_word_emb(trg_seq)
        if self.scale_emb:
            dec_output *= self.d_model ** 0.5
        dec_output = self.dropout(self.position_enc(dec_output))
        dec_output = self.layer_norm(dec_output)
        for dec_layer in self.layer_stack:
            dec_output, dec_slf_attn, dec_enc_attn = dec_layer(
                dec_output, enc_output, slf_attn_mask=trg_mask, dec_enc_attn_mask=src_mask)
        return dec_output,


class Transformer(nn.Module):
    """ A sequence to sequence model with attention mechanism. """

    def __init__(self, n_src_vocab, n_trg_vocab, src_pad_idx, trg_pad_idx, d_word_vec=512, d_model=512,
                 d_inner=2048, n_layers=6, n_head=8, d_k=64, d_v=64, dropout=0.1, n_position=200,
                 trg_emb_prj_weight_sharing=True, emb_src_trg_weight_sharing=True, scale_emb_or_prj="emb"):
        super().__init__()
        self.src_pad_idx, self.trg_pad_idx = src_pad_idx, trg_pad_idx
        assert scale_emb_or_prj in ["emb", "prj", "none"]
        scale_emb = (scale_emb_or_prj == "emb") if trg_emb_prj_weight_sharing else False
        self.scale_prj = (scale_emb_or_prj == "prj") if trg_emb_prj_weight_sharing else False
        self.d_model = d_model
        self.encoder = Encoder(n_src_vocab=n_src_vocab, n_position=n_position, d_word_vec=d_word_vec,
                               d_model=d_model, d_inner=d_inner, n_layers=n_layers, n_head=n_head, d_k=d_k,
                               d_v=d_v, pad_idx=src_pad_idx, dropout=dropout, scale_emb=scale_emb)
        self.decoder = Decoder(n_trg_vocab=n_trg_vocab, n_position=n_position, d_word_vec=d_word_vec,
                               d_model=d_model, d_inner=d_inner, n_layers=n_layers, n_head=n_head, d_k=d_k,
                               d_v=d_v, pad_idx=trg_pad_idx, dropout=dropout, scale_emb=scale_emb)
        self.trg_word_prj = nn.Linear(d_model, n_trg_vocab, bias=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        assert d_model == d_word_vec
        if trg_emb_prj_weight_sharing:
            self.trg_word_prj.weight = self.decoder.trg_word_emb.weight
        if emb_src_trg_weight_sharing:
            self.encoder.src_word_emb.weight = self.decoder.trg_word_emb.weight

    def forward(self, src_seq, trg_seq):
        src_mask = get_pad_mask(src_seq, self.src_pad_idx)
        trg_mask = get_pad_mask(trg_seq, self.trg_pad_idx) & get_subsequent_mask(trg_seq)
        enc_output, *_ = self.encoder(src_seq, src_mask)
        dec_output, *_ = self.decoder(trg_seq, trg_mask, enc_output, src_mask)
        seq_logit = self.trg_word_prj(dec_output)
        if self.scale_prj:
            seq_logit *= self.d_model ** -0.5
        return seq_logit.view(-1, seq_logit.size(2))


# ------------------------------------------------------------------------------------------------- Optim.py
class ScheduledOptim:
    """A simple wrapper class for learning rate scheduling"""

    def __init__(self, optimizer, lr_mul, d_model, n_warmup_steps):
        self._optimizer = optimizer
        self.lr_mul = lr_mul
        self.d_model = d_model
        self.n_warmup_steps = n_warmup_steps
        self.n_steps = 0

    def step_and_update_lr(self):
        "Step with the inner optimizer"
        self._update_learning_rate()
        self._optimizer.step()

    def zero_grad(self):
        "Zero out the gradients with the inner optimizer"
        self._optimizer.zero_grad()

    def _get_lr_scale(self):
        d_model = self.d_model
        n_steps, n_warmup_steps = self.n_steps, self.n_warmup_steps
        return (d_model ** -0.5) * min(n_steps ** (-0.5), n_steps * n_warmup_steps ** (-1.5))

    def _update_learning_rate(self):
        """ Learning rate scheduling per step """
        self.n_steps += 1
        lr = self.lr_mul * self._get_lr_scale()
        for param_group in self._optimizer.param_groups:
            param_group["lr"] = lr


# ------------------------------------------------------------------------------------------------- train.py
def cal_loss(pred, gold, trg_pad_idx, smoothing=False, eps=0.1):
    """ Calculate cross entropy loss, apply label smoothing if needed. """
    gold = gold.contiguous().view(-1)
    if smoothing and OPT["smoothing_target"] == "repo":
        n_class = pred.size(1)
        one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
        one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (n_class - 1)
        log_prb = F.log_softmax(pred, dim=1)
        non_pad_mask = gold.ne(trg_pad_idx)
        loss = -(one_hot * log_prb).sum(dim=1)
        loss = loss.masked_select(non_pad_mask).sum()  # average later
    elif smoothing:
        loss = F.cross_entropy(pred, gold, ignore_index=trg_pad_idx, reduction="sum", label_smoothing=eps)
    else:
        loss = F.cross_entropy(pred, gold, ignore_index=trg_pad_idx, reduction="sum")
    if OPT["loss_reduction"] != "sum":
        loss = loss / gold.ne(trg_pad_idx).sum()
    return loss


def cal_performance(pred, gold, trg_pad_idx, smoothing=False):
    """ Apply label smoothing if needed """
    loss = cal_loss(pred, gold, trg_pad_idx, smoothing=smoothing)
    pred = pred.max(1)[1]
    gold = gold.contiguous().view(-1)
    non_pad_mask = gold.ne(trg_pad_idx)
    n_correct = pred.eq(gold).masked_select(non_pad_mask).sum().item()
    n_word = non_pad_mask.sum().item()
    return loss, n_correct, n_word


class TrainEpoch:
    """train_epoch's body for one batch."""

    def __init__(self, model, d_model, n_warmup_steps, trg_pad_idx):
        self.model, self.trg_pad_idx = model, trg_pad_idx
        self.optimizer = ScheduledOptim(
            torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-09), OPT["lr_mul"], d_model,
            n_warmup_steps)

    def train_step(self, src_seq, trg_seq, gold):
        self.model.train()
        self.optimizer.zero_grad()
        pred = self.model(src_seq, trg_seq)
        loss, n_correct, n_word = cal_performance(pred, gold, self.trg_pad_idx, smoothing=OPT["label_smoothing"])
        loss.backward()
        self.optimizer.step_and_update_lr()
        return {"loss": float(loss.item()), "lr": float(self.optimizer._optimizer.param_groups[0]["lr"])}


# ------------------------------------------------------------------------------------------------ the adapter
N_POSITION = 200


def build(c):
    d_k = c.d_model // c.h
    model = Transformer(c.src_vocab, c.tgt_vocab, c.pad_id, c.pad_id, d_word_vec=c.d_model, d_model=c.d_model,
                        d_inner=c.d_ff, n_layers=c.N, n_head=c.h, d_k=d_k, d_v=d_k, dropout=c.dropout,
                        n_position=N_POSITION)
    model.recipe = c.recipe
    return model


def encode(model, src):
    return model.encoder(src, get_pad_mask(src, model.src_pad_idx))[0]


def decode(model, trg, enc_output, src):
    trg_mask = get_pad_mask(trg, model.trg_pad_idx) & get_subsequent_mask(trg)
    dec_output, *_ = model.decoder(trg, trg_mask, enc_output, get_pad_mask(src, model.src_pad_idx))
    return model.trg_word_prj(dec_output)


def learning_rate(step, d_model, warmup):
    schedule = ScheduledOptim(None, OPT["lr_mul"], d_model, warmup)
    schedule.n_steps = step
    return OPT["lr_mul"] * schedule._get_lr_scale()


def label_smoothed_loss(logits, targets, epsilon, pad_id):
    return cal_loss(logits, targets, int(pad_id), smoothing=OPT["label_smoothing"], eps=float(epsilon))


NAMES = {
    "E": "decoder.trg_word_emb.weight",
    **{f"*.{{l}}.self_attn.W_{x}": f"*.layer_stack.{{l}}.slf_attn.w_{x.lower()}s.weight" for x in "QKV"},
    "*.{l}.self_attn.W_O": "*.layer_stack.{l}.slf_attn.fc.weight",
    "*.{l}.norm1": "*.layer_stack.{l}.slf_attn.layer_norm",
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"decoder.layer_stack.{{l}}.enc_attn.w_{x.lower()}s.weight" for x in "QKV"},
    "decoder.{l}.cross_attn.W_O": "decoder.layer_stack.{l}.enc_attn.fc.weight",
    "decoder.{l}.norm2": "decoder.layer_stack.{l}.enc_attn.layer_norm",
    "*.{l}.ffn.W1": "*.layer_stack.{l}.pos_ffn.w_1.weight",
    "*.{l}.ffn.W2": "*.layer_stack.{l}.pos_ffn.w_2.weight",
    "encoder.{l}.norm2": "encoder.layer_stack.{l}.pos_ffn.layer_norm",
    "decoder.{l}.norm3": "decoder.layer_stack.{l}.pos_ffn.layer_norm",
}

adapter = TorchAdapter(
    build,
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (attention-is-all-you-need-pytorch)",
        supports={"share_embeddings": (True,), "tie_output": (True,), "attention_bias": (False,), "eps": (1e-6,),
                  "max_len": N_POSITION, "label_smoothing": (0.1,)},
        reasons={"share_embeddings": "-proj_share_weight -embs_share_weight",
                 "tie_output": "-proj_share_weight -embs_share_weight",
                 "attention_bias": "w_qs, w_ks, w_vs and fc are bias-free",
                 "eps": "every LayerNorm is built with eps=1e-6",
                 "max_len": "the positional table has n_position = 200 rows",
                 "label_smoothing": "cal_loss fixes eps = 0.1"}),
    model={"encode": encode, "decode": decode,
           "trainer": lambda m: TrainEpoch(m, m.encoder.d_model, m.recipe.warmup, m.trg_pad_idx)},
    learning_rate=learning_rate,
    label_smoothed_loss=label_smoothed_loss,
    attention_sublayer=Component(
        lambda s: MultiHeadAttention(s.h, s.d_model, s.d_model // s.h, s.d_model // s.h, dropout=0.0),
        lambda block, x, memory, keep: block(x, x if memory is None else memory, x if memory is None else memory,
                                             keep)[0],
        names={"W_Q": "w_qs.weight", "W_K": "w_ks.weight", "W_V": "w_vs.weight", "W_O": "fc.weight",
               "norm": "layer_norm"}),
    ffn_sublayer=Component(lambda s: PositionwiseFeedForward(s.d_model, s.d_ff, dropout=0.0),
                           names={"W1": "w_1.weight", "W2": "w_2.weight", "norm": "layer_norm"}),
    encoder_layer=Component(
        lambda s: EncoderLayer(s.d_model, s.d_ff, s.h, s.d_model // s.h, s.d_model // s.h, dropout=0.0),
        lambda layer, x, keep: layer(x, keep.unsqueeze(-2))[0]),
    decoder_layer=Component(
        lambda s: DecoderLayer(s.d_model, s.d_ff, s.h, s.d_model // s.h, s.d_model // s.h, dropout=0.0),
        lambda layer, y, memory, tgt, src: layer(
            y, memory, tgt.unsqueeze(-2) & get_subsequent_mask(tgt), src.unsqueeze(-2))[0]),
)
