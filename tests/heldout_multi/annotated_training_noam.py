"""A compact post-norm Transformer on ``nn.MultiheadAttention(batch_first=True)`` layers, trained with the
training code of The Annotated Transformer (Harvard NLP, 2018 edition): ``NoamOpt`` as ``get_std_opt`` builds
it, the ``LabelSmoothing`` criterion (its smoothed target ``true_dist``) and ``SimpleLossCompute``, which
returns the batch's total loss, here the cross-entropy against ``true_dist`` summed over the batch.

The adapter gives the model with its own training step (``run_epoch``'s body for one batch) and greedy
decoding, the rate ``NoamOpt.rate`` computes and the criterion as the loss function.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from conformance import Conventions
from conformance.adapters.torch import TorchAdapter

NOAM_FACTOR = 2
SMOOTHING_STYLE = "annotated"   # "annotated" (true_dist) or "torch" (nn.CrossEntropyLoss(label_smoothing=...))
LOSS_REDUCTION = "sum"


class NoamOpt:
    "Optim wrapper that implements rate."

    def __init__(self, model_size, factor, warmup, optimizer):
        self.optimizer = optimizer
        self._step = 0
        self.warmup = warmup
        self.factor = factor
        self.model_size = model_size
        self._rate = 0

    def step(self):
        "Update parameters and rate"
        self._step += 1
        rate = self.rate()
        for p in self.optimizer.param_groups:
            p["lr"] = rate
        self._rate = rate
        self.optimizer.step()

    def rate(self, step=None):
        "Implement `lrate` above"
        if step is None:
            step = self._step
        return self.factor * (self.model_size ** (-0.5) * min(step ** (-0.5), step * self.warmup ** (-1.5)))


def get_std_opt(model, d_model, warmup):
    return NoamOpt(d_model, NOAM_FACTOR, warmup,
                   torch.optim.Adam(model.parameters(), lr=0, betas=(0.9, 0.98), eps=1e-9))


class LabelSmoothing(nn.Module):
    "Implement label smoothing."

    def __init__(self, size, padding_idx, smoothing=0.0):
        super().__init__()
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.true_dist = None

    def forward(self, x, target):
        """x: log-probabilities (N, V); target (N,)."""
        assert x.size(1) == self.size
        if SMOOTHING_STYLE != "annotated":
            loss = F.nll_loss(x, target, ignore_index=self.padding_idx, reduction="sum") * self.confidence
            smooth = -(x.sum(dim=1) / self.size) * (target != self.padding_idx)
            return loss + self.smoothing * smooth.sum()
        true_dist = x.data.clone()
        true_dist.fill_(self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        mask = torch.nonzero(target.data == self.padding_idx)
        if mask.dim() > 0 and mask.numel() > 0:
            true_dist.index_fill_(0, mask.squeeze(1), 0.0)
        self.true_dist = true_dist
        return -(true_dist * x).sum()


class SimpleLossCompute:
    "A simple loss compute and train function."

    def __init__(self, criterion, opt=None):
        self.criterion = criterion
        self.opt = opt

    def __call__(self, x, y, norm):
        logp = F.log_softmax(x, dim=-1)
        loss = self.criterion(logp.contiguous().view(-1, logp.size(-1)), y.contiguous().view(-1))
        if LOSS_REDUCTION == "sum":
            (loss / norm).backward()
            reported = loss
        else:
            loss = loss / norm
            loss.backward()
            reported = loss
        if self.opt is not None:
            self.opt.step()
            self.opt.optimizer.zero_grad()
        return reported.item()


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


def positional_table(n, d):
    position = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * -(math.log(10000.0) / d))
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.float()


class EncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, d_ff, dropout, eps, bias):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, bias=bias, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, src_pad):
        a = self.self_attn(x, x, x, key_padding_mask=src_pad, need_weights=False)[0]
        x = self.norm1(x + self.dropout(a))
        return self.norm2(x + self.dropout(self.linear2(F.relu(self.linear1(x)))))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, d_ff, dropout, eps, bias):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, bias=bias, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.src_attn = nn.MultiheadAttention(d_model, nhead, bias=bias, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.norm3 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y, memory, tgt_pad, src_pad):
        T = y.size(1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=y.device), diagonal=1)
        a = self.self_attn(y, y, y, attn_mask=future, key_padding_mask=tgt_pad, need_weights=False)[0]
        y = self.norm1(y + self.dropout(a))
        a = self.src_attn(y, memory, memory, key_padding_mask=src_pad, need_weights=False)[0]
        y = self.norm2(y + self.dropout(a))
        return self.norm3(y + self.dropout(self.linear2(F.relu(self.linear1(y)))))


class Transformer(nn.Module):
    def __init__(self, vocab, d_model, nhead, d_ff, N, dropout, eps, bias, pad):
        super().__init__()
        self.pad, self.d_model = pad, d_model
        self.lut = nn.Embedding(vocab, d_model)
        self.encoder = nn.ModuleList([EncoderLayer(d_model, nhead, d_ff, dropout, eps, bias) for _ in range(N)])
        self.decoder = nn.ModuleList([DecoderLayer(d_model, nhead, d_ff, dropout, eps, bias) for _ in range(N)])
        self.dropout = nn.Dropout(dropout)

    def embed(self, ids):
        x = self.lut(ids) * math.sqrt(self.d_model) + positional_table(ids.size(1), self.d_model)
        return self.dropout(x)

    def encode(self, src):
        src_pad = src == self.pad
        x = self.embed(src)
        for layer in self.encoder:
            x = layer(x, src_pad)
        return x

    def decode(self, tgt, memory, src):
        y = self.embed(tgt)
        for layer in self.decoder:
            y = layer(y, memory, tgt == self.pad, src == self.pad)
        return y @ self.lut.weight.t()

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)


def greedy_decode(model, src, max_len, bos, eos, pad):
    memory = model.encode(src)
    ys = torch.full((src.size(0), 1), bos, dtype=torch.long)
    ended = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len):
        prob = model.decode(ys, memory, src)[:, -1]
        _, next_word = torch.max(prob, dim=1)
        next_word = torch.where(ended, torch.full_like(next_word, pad), next_word)
        ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
        ended |= next_word == eos
        if bool(ended.all()):
            break
    return ys[:, 1:]


class Batch:
    def __init__(self, src, trg_in, trg_y, pad):
        self.src, self.trg, self.trg_y = src, trg_in, trg_y
        self.ntokens = int((trg_y != pad).sum())


class AnnotatedTrainer:
    """run_epoch's body for one batch, with get_std_opt and LabelSmoothing."""

    def __init__(self, model, config):
        self.model, self.config = model, config
        criterion = LabelSmoothing(size=config.tgt_vocab, padding_idx=config.pad_id,
                                   smoothing=config.recipe.label_smoothing)
        self.opt = get_std_opt(model, config.d_model, config.recipe.warmup)
        self.loss_compute = SimpleLossCompute(criterion, self.opt)

    def train_step(self, src, tgt_in, tgt_out):
        self.model.train()
        batch = Batch(src, tgt_in, tgt_out, self.config.pad_id)
        out = self.model.forward(batch.src, batch.trg)
        loss = self.loss_compute(out, batch.trg_y, batch.ntokens)
        return {"loss": float(loss), "lr": float(self.opt._rate)}


def label_smoothed_loss(logits, targets, epsilon, pad_id):
    criterion = LabelSmoothing(size=logits.size(-1), padding_idx=int(pad_id), smoothing=float(epsilon))
    loss = criterion(F.log_softmax(logits, dim=-1), targets)
    return loss if LOSS_REDUCTION == "sum" else loss / (targets != pad_id).sum()


def learning_rate(step, d_model, warmup):
    return NoamOpt(d_model, NOAM_FACTOR, warmup, None).rate(step)


NAMES = {
    "E": "lut.weight",
    "*.{l}.self_attn.W_QKV": "*.{l}.self_attn.in_proj_weight",
    "*.{l}.self_attn.b_QKV": "*.{l}.self_attn.in_proj_bias",
    "*.{l}.self_attn.W_O": "*.{l}.self_attn.out_proj.weight",
    "decoder.{l}.cross_attn.W_QKV": "decoder.{l}.src_attn.in_proj_weight",
    "decoder.{l}.cross_attn.b_QKV": "decoder.{l}.src_attn.in_proj_bias",
    "decoder.{l}.cross_attn.W_O": "decoder.{l}.src_attn.out_proj.weight",
    "*.{l}.ffn.W1": "*.{l}.linear1.weight",
    "*.{l}.ffn.W2": "*.{l}.linear2.weight",
    "*.{l}.norm1": "*.{l}.norm1",
    "*.{l}.norm2": "*.{l}.norm2",
    "decoder.{l}.norm3": "decoder.{l}.norm3",
}


def build(c):
    model = Transformer(c.src_vocab, c.d_model, c.h, c.d_ff, c.N, c.dropout, c.eps, c.attention_bias, c.pad_id)
    model.config = c
    return model


adapter = TorchAdapter(
    build,
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"share_embeddings": (True,), "tie_output": (True,)},
        reasons={"share_embeddings": "one lut for source, target and output",
                 "tie_output": "one lut for source, target and output"}),
    model={"greedy_decode": lambda m, src, max_len: greedy_decode(m, src, max_len, m.config.bos_id,
                                                                  m.config.eos_id, m.config.pad_id),
           "trainer": lambda m: AnnotatedTrainer(m, m.config)},
    learning_rate=learning_rate,
    label_smoothed_loss=label_smoothed_loss,
)
