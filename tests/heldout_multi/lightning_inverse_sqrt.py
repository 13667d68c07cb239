"""A translation model organised as a PyTorch Lightning module (written without the Lightning dependency):
``hparams``, ``training_step``, ``configure_optimizers`` returning the optimiser and a per-step ``LambdaLR``
(fairseq's ``inverse_sqrt`` scheduler: linear warm-up to the peak ``lr``, then lr * sqrt(warmup / step)),
``generate`` for greedy decoding, and a small loop that plays the Trainer's part for one optimisation step.

The adapter gives the model with its own training step and greedy decoding, and the learning-rate function the
scheduler follows.
"""

import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from conformance import Conventions
from conformance.adapters.torch import TorchAdapter

HPARAMS = dict(lr=5e-4, scheduler="inverse_sqrt", betas=None, adam_eps=None)


def inverse_sqrt(step, warmup, peak):
    """fairseq's inverse_sqrt with warmup_init_lr = 0, steps counted from 1."""
    if step < warmup:
        return peak * step / warmup
    return peak * math.sqrt(warmup / step)


def noam(step, d_model, warmup):
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def sinusoidal(n, d):
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe.float()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.attn = None

    def forward(self, q, k, v, keep):
        B = q.size(0)
        q = self.w_q(q).view(B, -1, self.n_heads, self.d_head).transpose(1, 2)
        k = self.w_k(k).view(B, -1, self.n_heads, self.d_head).transpose(1, 2)
        v = self.w_v(v).view(B, -1, self.n_heads, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        scores = scores.masked_fill(~keep.unsqueeze(1), float("-inf"))
        self.attn = torch.nan_to_num(torch.softmax(scores, dim=-1))
        out = (self.attn @ v).transpose(1, 2).reshape(B, -1, self.n_heads * self.d_head)
        return self.w_o(out)


class FeedForward(nn.Sequential):
    def __init__(self, d_model, d_ff):
        super().__init__(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout, eps, bias):
        super().__init__()
        self.mha = MultiHeadAttention(d_model, n_heads, bias)
        self.ln_mha = nn.LayerNorm(d_model, eps=eps)
        self.ff = FeedForward(d_model, d_ff)
        self.ln_ff = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, keep):
        x = self.ln_mha(x + self.dropout(self.mha(x, x, x, keep)))
        return self.ln_ff(x + self.dropout(self.ff(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout, eps, bias):
        super().__init__()
        self.self_mha = MultiHeadAttention(d_model, n_heads, bias)
        self.ln_self = nn.LayerNorm(d_model, eps=eps)
        self.cross_mha = MultiHeadAttention(d_model, n_heads, bias)
        self.ln_cross = nn.LayerNorm(d_model, eps=eps)
        self.ff = FeedForward(d_model, d_ff)
        self.ln_ff = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y, memory, self_keep, cross_keep):
        y = self.ln_self(y + self.dropout(self.self_mha(y, y, y, self_keep)))
        y = self.ln_cross(y + self.dropout(self.cross_mha(y, memory, memory, cross_keep)))
        return self.ln_ff(y + self.dropout(self.ff(y)))


class TranslationModule(nn.Module):
    """What would subclass ``pl.LightningModule``."""

    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, dropout, eps, bias, pad_id, bos_id, eos_id,
                 warmup, label_smoothing, **hparams):
        super().__init__()
        self.hparams = SimpleNamespace(vocab_size=vocab_size, d_model=d_model, warmup=warmup, pad_id=pad_id,
                                       bos_id=bos_id, eos_id=eos_id, label_smoothing=label_smoothing,
                                       **{**HPARAMS, **hparams})
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=None)
        self.encoder_layers = nn.ModuleList(
            [EncoderLayer(d_model, n_heads, d_ff, dropout, eps, bias) for _ in range(n_layers)])
        self.decoder_layers = nn.ModuleList(
            [DecoderLayer(d_model, n_heads, d_ff, dropout, eps, bias) for _ in range(n_layers)])
        self.emb_dropout = nn.Dropout(dropout)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=d_model ** -0.5)

    def embed(self, ids):
        d = self.hparams.d_model
        return self.emb_dropout(self.embedding(ids) * math.sqrt(d) + sinusoidal(ids.size(1), d).to(ids.device))

    def encode(self, src):
        keep = (src != self.hparams.pad_id).unsqueeze(1)
        x = self.embed(src)
        for layer in self.encoder_layers:
            x = layer(x, keep)
        return x

    def decode(self, tgt, memory, src):
        T = tgt.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).tril()
        self_keep = (tgt != self.hparams.pad_id).unsqueeze(1) & causal
        cross_keep = (src != self.hparams.pad_id).unsqueeze(1)
        y = self.embed(tgt)
        for layer in self.decoder_layers:
            y = layer(y, memory, self_keep, cross_keep)
        return F.linear(y, self.embedding.weight)

    def forward(self, src, tgt):
        return self.decode(tgt, self.encode(src), src)

    def training_step(self, batch, batch_idx):
        src, tgt_in, tgt_out = batch
        logits = self(src, tgt_in)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1),
                               ignore_index=self.hparams.pad_id, label_smoothing=self.hparams.label_smoothing)

    def configure_optimizers(self):
        hp = self.hparams
        kwargs = {}
        if hp.betas is not None:
            kwargs["betas"] = hp.betas
        if hp.adam_eps is not None:
            kwargs["eps"] = hp.adam_eps
        if hp.scheduler == "inverse_sqrt":
            optimizer = torch.optim.Adam(self.parameters(), lr=hp.lr, **kwargs)
            factor = lambda s: inverse_sqrt(s + 1, hp.warmup, hp.lr) / hp.lr
        else:
            optimizer = torch.optim.Adam(self.parameters(), lr=1.0, **kwargs)
            factor = lambda s: noam(s + 1, hp.d_model, hp.warmup)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    @torch.no_grad()
    def generate(self, src, max_len):
        hp = self.hparams
        memory = self.encode(src)
        ys = torch.full((src.size(0), 1), hp.bos_id, dtype=torch.long)
        finished = torch.zeros(src.size(0), dtype=torch.bool)
        for _ in range(max_len):
            next_token = self.decode(ys, memory, src)[:, -1].argmax(-1)
            next_token = next_token.masked_fill(finished, hp.pad_id)
            ys = torch.cat([ys, next_token[:, None]], dim=1)
            finished |= next_token == hp.eos_id
            if finished.all():
                break
        return ys[:, 1:]


class StepLoop:
    """One optimisation step as Lightning's automatic optimisation runs it."""

    def __init__(self, module, seed=0):
        torch.manual_seed(seed)
        self.module = module
        config = module.configure_optimizers()
        self.optimizer = config["optimizer"]
        self.scheduler = config["lr_scheduler"]["scheduler"]
        self.batch_idx = 0

    def train_step(self, src, tgt_in, tgt_out):
        self.module.train()
        lr = self.optimizer.param_groups[0]["lr"]
        loss = self.module.training_step((src, tgt_in, tgt_out), self.batch_idx)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        self.batch_idx += 1
        return {"loss": float(loss.detach()), "lr": float(lr)}


def build(c):
    r = c.recipe
    return TranslationModule(c.src_vocab, c.d_model, c.h, c.d_ff, c.N, c.dropout, c.eps, c.attention_bias, c.pad_id,
                             c.bos_id, c.eos_id, r.warmup, r.label_smoothing)


def learning_rate(step, d_model, warmup):
    if HPARAMS["scheduler"] == "inverse_sqrt":
        return inverse_sqrt(step, warmup, HPARAMS["lr"])
    return noam(step, d_model, warmup)


NAMES = {
    "E": "embedding.weight",
    **{f"encoder.{{l}}.self_attn.W_{x}": f"encoder_layers.{{l}}.mha.w_{x.lower()}.weight" for x in "QKVO"},
    "encoder.{l}.norm1": "encoder_layers.{l}.ln_mha",
    **{f"decoder.{{l}}.self_attn.W_{x}": f"decoder_layers.{{l}}.self_mha.w_{x.lower()}.weight" for x in "QKVO"},
    "decoder.{l}.norm1": "decoder_layers.{l}.ln_self",
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"decoder_layers.{{l}}.cross_mha.w_{x.lower()}.weight" for x in "QKVO"},
    "decoder.{l}.norm2": "decoder_layers.{l}.ln_cross",
    "encoder.{l}.norm2": "encoder_layers.{l}.ln_ff",
    "decoder.{l}.norm3": "decoder_layers.{l}.ln_ff",
    "*.{l}.ffn.W1": "*_layers.{l}.ff.0.weight",
    "*.{l}.ffn.W2": "*_layers.{l}.ff.2.weight",
}

adapter = TorchAdapter(
    build,
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (Lightning-style module)",
        supports={"share_embeddings": (True,), "tie_output": (True,)},
        reasons={"share_embeddings": "one embedding for source, target and output",
                 "tie_output": "one embedding for source, target and output"}),
    model={"greedy_decode": lambda m, src, max_len: m.generate(src, max_len),
           "trainer": lambda m: StepLoop(m)},
    learning_rate=learning_rate,
)
