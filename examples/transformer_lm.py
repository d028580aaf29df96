"""A small causal Transformer language model: token embedding, learned
positions, nn.TransformerEncoder (2 layers, d_model 64, 4 heads, GELU-free
default ReLU feed-forward of 128), tied output projection. Sequence 32,
batch 4, vocabulary 500.

Dropout is 0 unless build(dropout=P) is given (--entry-arg dropout=0.1):
then the embeddings, the attention weights, the feed-forward layer and both
residual branches drop with probability P. On the CPU, PyTorch's dropout
lowers to an in-place bernoulli_ on a fresh tensor, which a plan can never
recompute (an op that updates a tensor); on CUDA it lowers to
native_dropout, one op that makes the output and the mask. All but the
attention's dropout call native_dropout directly (FusedDropout), so that a
CPU capture too has random ops a plan may recompute, whose draws the runtime
replays (docs/capture.md, "Random ops").

    swapadvisor-capture examples/transformer_lm.py --optimizer adam -o out/transformer_lm
    swapadvisor-capture examples/transformer_lm.py --entry-arg dropout=0.1 -o out/transformer_lm_dropout
"""
import inspect

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D, HEADS, FF, LAYERS, SEQ, BATCH = 500, 64, 4, 128, 2, 32, 4

# torch 2.x's nn.TransformerEncoder compares a mask with a causal one in
# Python (a data-dependent read a capture cannot replay) unless told whether
# it is causal; torch 1.13's has no such argument.
CAUSAL = ({"is_causal": True}
          if "is_causal" in inspect.signature(nn.TransformerEncoder.forward).parameters else {})


class FusedDropout(nn.Module):
    """nn.Dropout through aten::native_dropout, the op CUDA's dropout lowers to."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return torch.native_dropout(x, self.p, self.training)[0] if self.p > 0 else x


class TransformerLM(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(SEQ, 1, D) * 0.02)
        self.drop = FusedDropout(dropout)
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=dropout)
        for name in ("dropout", "dropout1", "dropout2"):  # not the attention's
            setattr(layer, name, FusedDropout(dropout))
        self.enc = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(D)
        self.out = nn.Linear(D, VOCAB)
        self.out.weight = self.emb.weight  # tied
        nn.init.normal_(self.emb.weight, std=0.02)
        mask = torch.triu(torch.full((SEQ, SEQ), float("-inf")), diagonal=1)
        self.register_buffer("causal_mask", mask)

    def forward(self, tokens):  # tokens: [SEQ, BATCH]
        x = self.drop(self.emb(tokens) + self.pos)
        x = self.enc(x, mask=self.causal_mask, **CAUSAL)
        return self.out(self.norm(x))


def loss_fn(logits, target):
    # reshape: a micro-batch of a [SEQ, BATCH] batch is a strided view
    return F.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))


def build(dropout=0.0):
    model = TransformerLM(dropout)

    def make_batch():
        g = torch.Generator().manual_seed(1234)
        seq = torch.randint(0, VOCAB, (SEQ + 1, BATCH), generator=g)
        return seq[:-1].clone(), seq[1:].clone()

    return {"model": model, "make_batch": make_batch, "loss_fn": loss_fn,
            "optimizer": {"name": "adam", "lr": 1e-3}}
