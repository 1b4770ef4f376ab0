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
"""

from __future__ import annotations

from typing import Any

from rolecall.train.backbone import _torch

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
    torch = _torch()

    class SentenceTop(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for _, names in LAYERS:
                for name in names:
                    weight = torch.from_numpy(getattr(network, name).copy())
                    self.register_parameter(name, torch.nn.Parameter(weight, requires_grad=False))
            self.eps = float(network.eps)

        def tune(self, layers: int) -> None:
            for number, (_, names) in enumerate(reversed(LAYERS)):
                for name in names:
                    getattr(self, name).requires_grad_(number < layers)

        def forward(self, sums: Any) -> Any:
            """[n, 1281] token sums (and the root of the length) -> [n, 512], unit length."""
            relu = torch.relu
            mean = sums[:, :-1] @ self.cnn_W + sums[:, -1:] * self.cnn_b
            first = relu(mean @ self.d0)
            middle = relu(mean @ self.p1 + first @ self.d1)
            deep = relu(middle @ self.d2)
            out = torch.tanh(middle @ self.p3 + deep @ self.d3)
            norm = (out * out).sum(dim=-1, keepdim=True).clamp_min(self.eps).sqrt()
            return out / norm

    return SentenceTop()
