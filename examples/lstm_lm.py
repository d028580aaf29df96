"""A small LSTM language model: embedding 64, nn.LSTM with 2 layers of 128,
linear decoder. Sequence 20, batch 4, vocabulary 500.

    swapadvisor-capture examples/lstm_lm.py --optimizer sgd -o out/lstm_lm
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, EMB, HIDDEN, LAYERS, SEQ, BATCH = 500, 64, 128, 2, 20, 4


class LSTMLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB)
        self.rnn = nn.LSTM(EMB, HIDDEN, LAYERS)
        self.dec = nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens):  # tokens: [SEQ, BATCH]
        out, _ = self.rnn(self.emb(tokens))
        return self.dec(out)


def loss_fn(logits, target):
    return F.cross_entropy(logits.view(-1, VOCAB), target.view(-1))


def build():
    model = LSTMLM()

    def make_batch():
        g = torch.Generator().manual_seed(1234)
        seq = torch.randint(0, VOCAB, (SEQ + 1, BATCH), generator=g)
        return seq[:-1].clone(), seq[1:].clone()

    return {"model": model, "make_batch": make_batch, "loss_fn": loss_fn,
            "optimizer": {"name": "sgd", "lr": 0.1}}
