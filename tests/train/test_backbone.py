"""Backbones: pair assembly and truncation, states, saving, missing paths, feature cache."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rolecall.errors import InputFileError  # noqa: E402
from rolecall.train.backbone import Backbone, load_backbone  # noqa: E402
from rolecall.train.features import Features, mean_pool  # noqa: E402
from tests.tiny_models import tiny_backbone  # noqa: E402

TEXTS = ["오늘 날씨가 좋네요", "식사는 하셨어요", "어르신 산책 다녀오셨어요", "가 나 다 라 마"]


@pytest.fixture(scope="module")
def tiny():
    return tiny_backbone(TEXTS * 3, vocab_size=120)


def tokens(backbone, batch, row=0):
    ids = batch["input_ids"][row][batch["attention_mask"][row].bool()]
    return backbone.tokenizer.convert_ids_to_tokens(ids)


def test_pairs_cut_the_history_from_the_left_and_mark_segments(tiny):
    batch = tiny.batch_pairs(["가 나 다 라 마"], ["오늘"], max_length=6)
    assert tokens(tiny, batch) == ["[CLS]", "라", "마", "[SEP]", "오늘", "[SEP]"]
    assert batch["token_type_ids"][0].tolist() == [0, 0, 0, 0, 1, 1]
    whole = tiny.batch_pairs(["가 나"], ["오늘"], max_length=32)
    assert tokens(tiny, whole) == ["[CLS]", "가", "나", "[SEP]", "오늘", "[SEP]"]


def test_texts_cut_from_the_side_asked_and_pad(tiny):
    left = tiny.batch_texts(["가 나 다 라 마", "가"], max_length=4, side="left")
    assert tokens(tiny, left) == ["[CLS]", "라", "마", "[SEP]"]
    assert tokens(tiny, left, 1) == ["[CLS]", "가", "[SEP]"]
    assert left["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    right = tiny.batch_texts(["가 나 다 라 마"], max_length=4, side="right")
    assert tokens(tiny, right) == ["[CLS]", "가", "나", "[SEP]"]


def test_states_and_mean_pool(tiny):
    tiny.train(False)
    hidden, mask = tiny.encode(TEXTS, 16)
    assert hidden.shape[:2] == mask.shape and hidden.shape[2] == tiny.hidden_size == 32
    pooled = mean_pool(hidden, mask)
    row = hidden[0][mask[0]].mean(0)
    assert torch.allclose(pooled[0], row, atol=1e-6)


def test_a_saved_tiny_backbone_reloads_with_the_same_states(tiny, tmp_path):
    tiny.train(False)
    tiny.save(tmp_path)
    again = Backbone.load(tmp_path)
    again.train(False)
    with torch.no_grad():
        assert torch.allclose(tiny.encode(TEXTS, 16)[0], again.encode(TEXTS, 16)[0])


def test_missing_backbone_paths_are_clear(tmp_path):
    with pytest.raises(InputFileError, match="no such model directory"):
        load_backbone(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFileError, match="transformers cannot load"):
        load_backbone(str(tmp_path / "empty"))
    with pytest.raises(InputFileError, match="not a saved rolecall model"):
        Backbone.load(tmp_path / "empty")


def test_frozen_features_are_computed_once_and_kept_on_disk(tmp_path):
    backbone = tiny_backbone(TEXTS * 3, vocab_size=120)
    backbone.frozen = True
    backbone.train(False)
    calls = []
    states = backbone.states
    backbone.states = lambda batch: calls.append(len(batch["input_ids"])) or states(batch)
    features = Features(backbone, tmp_path / "features", batch_size=2)
    hidden, mask = features.texts(TEXTS + TEXTS[:1], 16)
    assert calls == [2, 2] and mask.shape[0] == 5  # the repeated text was run once
    with torch.no_grad():
        direct, direct_mask = states(backbone.batch_texts(TEXTS, 16))
    assert torch.equal(mask[:4], direct_mask)
    assert np.allclose(hidden[:4][mask[:4]].numpy(), direct[direct_mask].numpy(), atol=1e-2)
    features.flush()
    calls.clear()
    again = Features(backbone, tmp_path / "features")
    again_hidden, _ = again.texts(TEXTS, 16)
    assert calls == [] and torch.equal(again_hidden, hidden[:4])
    again.pairs(["가 나"], ["오늘"], 16)
    assert calls == [1]  # pairs are their own inputs
    assert len(again._memory) == 5  # only what was asked for was read from disk


def test_a_shard_half_written_by_a_killed_run_is_dropped(tmp_path):
    backbone = tiny_backbone(TEXTS * 3, vocab_size=120)
    backbone.frozen = True
    backbone.train(False)
    features = Features(backbone, tmp_path / "features")
    features.texts(TEXTS[:2], 16)
    features.flush()
    broken = tmp_path / "features" / "shard-00001.partial.npz"
    broken.write_bytes(b"PK\x03\x04 cut short")
    again = Features(backbone, tmp_path / "features")
    assert not broken.exists()
    again.texts(TEXTS, 16)
    again.flush()
    names = sorted(p.name for p in (tmp_path / "features").glob("shard-*.npz"))
    assert names == ["shard-00000.npz", "shard-00001.npz"]
    hidden, _ = Features(backbone, tmp_path / "features").texts(TEXTS, 16)
    assert hidden.shape[0] == len(TEXTS)
