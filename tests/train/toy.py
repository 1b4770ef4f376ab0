"""Toy models for the training-loop tests: a two-class head over a tiny backbone on
``TEXTS`` (``setup``), and a linear regression that trains the same on one process or
several (``toy_run``, also run by a launched script)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rolecall.train.backbones.features import mean_pool
from rolecall.train.loop import TrainConfig, fit
from tests.tiny_models import tiny_backbone

TEXTS = [
    ("좋은 말씀 감사합니다", 0),
    ("나쁜 욕설 문장", 1),
    ("오늘 날씨 좋네요", 0),
    ("정말 나쁜 욕", 1),
] * 4


def setup():
    backbone = tiny_backbone([t for t, _ in TEXTS], vocab_size=100)
    head = torch.nn.Linear(backbone.hidden_size, 2)

    def loss_of(batch):
        hidden, mask = backbone.encode([t for t, _ in batch], 16)
        logits = head(mean_pool(hidden, mask))
        return torch.nn.functional.cross_entropy(logits, torch.tensor([y for _, y in batch]))

    return backbone, head, loss_of


def toy_run(out: Path) -> dict:
    """A linear regression on 9 points in batches of 4 (so the last batch, of 1, leaves
    the second process nothing) with one parameter no loss touches; rank 0 writes what
    it trained to ``out``. Run here and by the launched script."""
    torch.manual_seed(0)
    model = torch.nn.Module()
    model.linear = torch.nn.Linear(3, 1)
    model.unused = torch.nn.Parameter(torch.ones(2))
    x = torch.randn(9, 3)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.3
    items = list(range(9))

    def loss_of(batch):
        return torch.nn.functional.mse_loss(model.linear(x[batch]).squeeze(-1), y[batch])

    history = fit(model, None, items, loss_of, TrainConfig(epochs=4, batch_size=4, lr=0.05), False)
    result = {
        "losses": history["losses"],
        "weight": model.linear.weight.detach().flatten().tolist(),
        "unused": model.unused.detach().tolist(),
    }
    out.write_text(json.dumps(result))
    return result
