"""The sentence encoder's dense top in torch, its weights loaded from the package, so that
``--tune-layers N`` trains its last N layers on a CPU (issue #32 item 4).

USE multilingual v3 sums a text's token features (``sentence_vectors.token_sums_of_ids``:
its embedding and n-gram CNN branches, 1,280 numbers over the root of its length), then a
small dense network makes the 512-dim vector: a projection, then four layers with two
skip projections, tanh and unit length. That top is 1.7M weights of the model's 70M (the
rest is the 128k-piece embedding table and the CNN), and it is where a head's loss can
reach cheaply: the token sums are computed once per text with numpy and kept, and only the
top runs again at each step. Untrained, it gives the package's vectors (to 1e-6).

Layers, from the top: 1 ``out`` (d3, p3), 2 ``deep`` (d2), 3 ``middle`` (d1, p1),
4 ``first`` (d0), 5 ``projection`` (cnn_W, cnn_b).

Beside them, whenever the top is tuned, a table ``unknown`` of one 1,280-number vector per
bucket of pieces the package's vocabulary lacks (``sentence_vectors.UNKNOWN_BUCKETS``: 셨
녕 좀 밥 릎 ..., <unk> to the package): a text's unknown pieces' vectors are added to its
token sums (over the same root), so the top can learn what 밥 means where the package sees
only <unk>. It starts at zero: untrained, the package's vectors still.
"""

from __future__ import annotations

import itertools
from typing import Any

from rolecall.retrieval.sentence_vectors import SUMMED, UNKNOWN_BUCKETS
from rolecall.train.backbones.base import torch_module

UNKNOWN = "unknown"  # the table of unknown pieces' vectors (tuned with any layer)
# the table is kept divided by this, so the top's learning rate moves it this much faster:
# from zero it must grow to the size of a token's features within one training run
# (bench/retrieval_quality.py, docs/models.md: 10 helped on chatbot_data, 30 hurt care-call)
UNKNOWN_SCALE = 10.0

# the top's layers, bottom first, and the package's weights each one holds
LAYERS = (
    ("projection", ("cnn_W", "cnn_b")),
    ("first", ("d0",)),
    ("middle", ("d1", "p1")),
    ("deep", ("d2",)),
    ("out", ("d3", "p3")),
)


def sentence_top(network: Any) -> Any:
    """A torch module with the package's top weights (``network``: its ``NumpyBackend``),
    every weight frozen; ``tune(n)`` unfreezes the last n layers."""
    torch = torch_module()

    class SentenceTop(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for _, names in LAYERS:
                for name in names:
                    weight = torch.from_numpy(getattr(network, name).copy())
                    self.register_parameter(name, torch.nn.Parameter(weight, requires_grad=False))
            table = torch.zeros(UNKNOWN_BUCKETS, SUMMED)
            self.register_parameter(UNKNOWN, torch.nn.Parameter(table, requires_grad=False))
            self.eps = float(network.eps)

        def tune(self, layers: int) -> None:
            for number, (_, names) in enumerate(reversed(LAYERS)):
                for name in names:
                    getattr(self, name).requires_grad_(number < layers)
            self.unknown.requires_grad_(layers > 0)

        def forward(self, sums: Any, unknown: list[list[int]] | None = None) -> Any:
            """[n, 1281] token sums (and the root of the length), and per text the buckets
            of its unknown pieces -> [n, 512], unit length."""
            relu = torch.relu
            summed, root = sums[:, :-1], sums[:, -1:]
            if unknown is not None and any(unknown):
                flat = torch.tensor([b for row in unknown for b in row], dtype=torch.long)
                starts = torch.tensor([0, *itertools.accumulate(map(len, unknown))][:-1])
                bags = torch.nn.functional.embedding_bag(
                    flat.to(sums.device), self.unknown, starts.to(sums.device), mode="sum"
                )
                summed = summed + bags * UNKNOWN_SCALE / root
            mean = summed @ self.cnn_W + root * self.cnn_b
            first = relu(mean @ self.d0)
            middle = relu(mean @ self.p1 + first @ self.d1)
            deep = relu(middle @ self.d2)
            out = torch.tanh(middle @ self.p3 + deep @ self.d3)
            norm = (out * out).sum(dim=-1, keepdim=True).clamp_min(self.eps).sqrt()
            return out / norm

    return SentenceTop()
