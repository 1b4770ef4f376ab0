"""The TF-IDF + logistic regression baseline: texts, pairs, saving and loading."""

from __future__ import annotations

import numpy as np
import pytest

from rolecall.errors import InputFileError
from rolecall.train.baselines import TfidfModel, TfidfSettings

TEXTS = ["시발 진짜 짜증나", "개새끼 꺼져", "오늘 날씨 좋네요", "점심 맛있게 드세요"] * 3
LABELS = ["explicit", "explicit", "none", "none"] * 3


def test_a_text_model_learns_its_labels_and_keeps_every_column():
    model = TfidfModel(TfidfSettings(labels=["implicit", "none", "explicit"]))
    log = model.fit(TEXTS, LABELS)
    assert log["train_examples"] == 12 and log["features"] > 0
    proba = model.predict_proba(["시발 꺼져", "날씨 좋네요"])
    assert proba.shape == (2, 3)
    assert proba[:, 0].max() == 0  # a label without training items: a column of zeros
    assert np.allclose(proba.sum(axis=1), 1)
    assert model.predict(["시발 꺼져", "날씨 좋네요"]) == ["explicit", "none"]
    assert model.predict_proba([]).shape == (0, 3)


def test_a_pair_model_sees_what_the_two_texts_share():
    firsts = [f"{w} 이야기를 하자" for w in ("축구", "영화", "요리", "여행", "음악", "게임")]
    kept = [(a, a.replace("하자", "하자 꼰대야")) for a in firsts]
    mismatched = [(a, kept[(i + 1) % len(kept)][1]) for i, a in enumerate(firsts)]
    model = TfidfModel(TfidfSettings(labels=["maintained", "shifted"], pair=True, c=50))
    model.fit(kept + mismatched, ["maintained"] * 6 + ["shifted"] * 6)
    assert model.predict([("날씨 이야기를 하자", "날씨 이야기를 하자 꼰대야")]) == ["maintained"]
    with pytest.raises(ValueError, match="pairs"):
        model.predict_proba(["one text"])


def test_save_and_load_give_the_same_probabilities_without_pickle(tmp_path):
    model = TfidfModel(TfidfSettings(task="implicit", labels=["implicit", "none", "explicit"]))
    model.fit(TEXTS, LABELS)
    model.save(tmp_path / "m", {"accuracy": 1.0})
    again = TfidfModel.load(tmp_path / "m")
    probe = ["시발 날씨", "맛있게 꺼져", "아무 말"]
    assert np.array_equal(again.predict_proba(probe), model.predict_proba(probe))
    assert again.settings == model.settings
    with np.load(tmp_path / "m" / "tfidf.npz", allow_pickle=False) as arrays:
        assert arrays["vocabulary_chars"].dtype.kind == "U"  # strings, not pickled objects


def test_views_side_by_side_save_and_load(tmp_path):
    settings = TfidfSettings(labels=["implicit", "none", "explicit"], views=["chars", "morphemes"])
    model = TfidfModel(settings)
    log = model.fit(TEXTS, LABELS)
    chars_only = TfidfModel(TfidfSettings(labels=["implicit", "none", "explicit"]))
    assert log["features"] > chars_only.fit(TEXTS, LABELS)["features"]
    assert any("/" in term for term in model.vectorizers["morphemes"].vocabulary_)  # form/TAG
    model.save(tmp_path / "m")
    again = TfidfModel.load(tmp_path / "m")
    probe = ["시발 날씨", "맛있게 꺼져", "아무 말"]
    assert np.array_equal(again.predict_proba(probe), model.predict_proba(probe))


def test_pair_views_and_a_model_saved_before_views(tmp_path):
    pairs = [("밥 먹었어요", "밥 처먹었냐"), ("밥 먹었어요", "내일 비 와요")] * 3
    settings = TfidfSettings(labels=["maintained", "shifted"], pair=True, views=["chars", "words"])
    model = TfidfModel(settings)
    model.fit(pairs, ["maintained", "shifted"] * 3)
    assert model.predict(pairs[:2]) == ["maintained", "shifted"]
    old = TfidfModel(TfidfSettings(labels=["implicit", "none", "explicit"]))
    old.fit(TEXTS, LABELS)
    old.save(tmp_path / "old")
    path = tmp_path / "old" / "tfidf.npz"
    with np.load(path, allow_pickle=False) as arrays:
        renamed = {k.removesuffix("_chars"): arrays[k] for k in arrays.files}
    np.savez_compressed(path, **renamed)  # the layout before views: one unnamed vocabulary
    again = TfidfModel.load(tmp_path / "old")
    assert np.array_equal(again.predict_proba(TEXTS), old.predict_proba(TEXTS))


def test_bad_inputs_are_clear_errors(tmp_path):
    model = TfidfModel(TfidfSettings(labels=["a", "b"]))
    with pytest.raises(ValueError, match="not among"):
        model.fit(["x", "y"], ["a", "c"])
    with pytest.raises(ValueError, match="two different"):
        model.fit(["x", "y"], ["a", "a"])
    with pytest.raises(InputFileError, match="no model.json"):
        TfidfModel.load(tmp_path)
