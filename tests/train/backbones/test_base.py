"""Backbones: pair assembly and truncation, states, saving, missing paths, feature cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rolecall.errors import ConfigError, InputFileError  # noqa: E402
from rolecall.train.backbones.base import keep_layers  # noqa: E402
from rolecall.train.backbones.features import Features, mean_pool  # noqa: E402
from rolecall.train.backbones.load import load_backbone, load_saved_backbone  # noqa: E402
from tests.tiny_models import TEXTS, tiny_backbone, tiny_gemma  # noqa: E402


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
    again = load_saved_backbone(tmp_path)
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
        load_saved_backbone(tmp_path / "empty")


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


# ---- the layer setting: a backbone cut after layer N -------------------------------------


def test_a_cut_gemma_gives_its_layer_through_the_final_norm():
    whole = tiny_gemma()
    batch = whole.batch_texts(TEXTS, 16)
    with torch.no_grad():
        output = whole.model(**batch, output_hidden_states=True)
    for layer in (1, 2):
        cut = tiny_gemma(layer)
        assert cut.layer == layer and len(cut.model.layers) == layer
        assert cut.model.config.layer_types == whole.model.config.layer_types[:layer]
        hidden, mask = cut.encode(TEXTS, 16)
        expected = whole.model.norm(output.hidden_states[layer])
        assert torch.allclose(hidden[mask], expected[mask], atol=1e-5)
        assert not torch.allclose(hidden[mask], output.last_hidden_state[mask], atol=1e-3)
    assert tiny_gemma(3).layer is None  # all layers: the whole model, same identity
    assert tiny_gemma(3).identity == whole.identity != tiny_gemma(2).identity
    assert tiny_gemma(1).identity != tiny_gemma(2).identity


def test_a_cut_bert_gives_its_layer_and_bad_layers_are_refused():
    whole = tiny_backbone(TEXTS * 3, vocab_size=120, layers=3, dropout=0.0)
    whole.train(False)
    batch = whole.batch_texts(TEXTS, 16)
    with torch.no_grad():
        expected = whole.model(**batch, output_hidden_states=True).hidden_states[2]
    cut = tiny_backbone(TEXTS * 3, vocab_size=120, layers=3, dropout=0.0)
    assert keep_layers(cut.model, 2) == 2 and len(cut.model.encoder.layer) == 2
    cut.train(False)
    with torch.no_grad():
        assert torch.allclose(cut.encode(TEXTS, 16)[0], expected, atol=1e-5)
    for bad in (0, 4):
        with pytest.raises(ConfigError, match="has 3 transformer layers"):
            keep_layers(tiny_backbone(TEXTS, vocab_size=120, layers=3).model, bad)


def test_the_layer_is_saved_and_old_directories_load_whole(tmp_path):
    cut = tiny_gemma(2)
    cut.save(tmp_path / "copied")  # a tiny backbone is saved whole (copied)
    again = load_saved_backbone(tmp_path / "copied")
    assert again.layer == 2 and again.identity == cut.identity
    assert torch.allclose(again.encode(TEXTS, 16)[0], cut.encode(TEXTS, 16)[0])
    # a frozen model directory is saved as a reference and cut again on load
    whole = tiny_gemma()
    whole.model.save_pretrained(tmp_path / "hf")
    whole.tokenizer.save_pretrained(tmp_path / "hf")
    reference = load_backbone(str(tmp_path / "hf"), frozen=True, layer=1)
    assert load_backbone(str(tmp_path / "hf"), frozen=True).layer is None  # a user's: all
    reference.save(tmp_path / "model")
    info = json.loads((tmp_path / "model" / "backbone.json").read_text())
    assert info["layer"] == 1 and info["copied"] is False
    loaded = load_saved_backbone(tmp_path / "model")
    assert loaded.layer == 1 and len(loaded.model.layers) == 1
    assert torch.allclose(loaded.encode(TEXTS, 16)[0], reference.encode(TEXTS, 16)[0])
    del info["layer"]  # written before the setting existed
    (tmp_path / "model" / "backbone.json").write_text(json.dumps(info))
    old = load_saved_backbone(tmp_path / "model")
    assert old.layer is None and len(old.model.layers) == 3


# ---- tune_top: the top N layers trained, the rest kept --------------------------------


def test_tune_top_trains_the_top_layers_and_final_norm_only():
    backbone = tiny_gemma(frozen=True).tune_top(1)
    assert not backbone.frozen and backbone.tuned == 1
    trained = {n for n, p in backbone.model.named_parameters() if p.requires_grad}
    assert trained and all(n.startswith(("layers.2.", "norm.")) for n in trained)
    assert any(n.startswith("norm.") for n in trained)
    assert set(backbone.tuned_weights()) == trained
    assert tiny_gemma().tune_top(0).frozen  # 0: frozen again
    with pytest.raises(ConfigError, match="backbone has 3"):
        tiny_gemma().tune_top(4)


def test_a_tuned_backbone_saves_only_its_tuned_layers_and_reloads_them(tmp_path):
    whole = tiny_gemma()
    whole.model.save_pretrained(tmp_path / "hf")
    whole.tokenizer.save_pretrained(tmp_path / "hf")
    tuned = load_backbone(str(tmp_path / "hf"), frozen=True, layer=2).tune_top(1)
    with torch.no_grad():  # what training does to the tuned layer
        for parameter in tuned.model.layers[1].parameters():
            parameter.add_(0.1)
    tuned.save(tmp_path / "model")
    info = json.loads((tmp_path / "model" / "backbone.json").read_text())
    assert info["tuned"] == 1 and info["copied"] is False and info["layer"] == 2
    assert not (tmp_path / "model" / "backbone").exists()
    loaded = load_saved_backbone(tmp_path / "model")
    assert loaded.tuned == 1 and loaded.layer == 2
    tuned.train(False)
    states = tuned.encode(TEXTS, 16)[0]
    assert torch.allclose(loaded.encode(TEXTS, 16)[0], states, atol=1e-6)
    source = load_backbone(str(tmp_path / "hf"), frozen=True, layer=2)
    assert not torch.allclose(source.encode(TEXTS, 16)[0], states, atol=1e-3)
    (tmp_path / "model" / "tuned.safetensors").unlink()
    with pytest.raises(InputFileError, match="tuned.safetensors"):
        load_saved_backbone(tmp_path / "model")
