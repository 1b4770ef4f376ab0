"""BM25 beside the retriever (``serve/lexical.py``) and the text it matches."""

from __future__ import annotations

import numpy as np

from rolecall.records import Turn
from rolecall.serve.lexical import LEXICAL_CAP, LexicalScorer, fuse, standardised
from rolecall.serve.selection import last_user_text
from rolecall.train.data import context_text

TEXTS = ["오늘 날씨가 맑아요", "점심은 드셨어요", "병원 예약 하셨어요"]


def test_bm25_scores_the_candidates_sharing_content_words():
    scores = LexicalScorer(TEXTS).scores("병원에 예약했어")
    assert scores.shape == (3,) and scores.argmax() == 2 and scores[2] > 0
    assert scores[0] == scores[1] == 0
    assert not LexicalScorer(TEXTS).scores("음").any()  # nothing shared: all zero


def test_fusion_standardises_each_score_set():
    dense, lexical = np.array([3.0, 2.0, 1.0]), np.array([0.0, 0.0, 5.0])
    assert fuse(dense, lexical, 0.0).argmax() == 0
    assert fuse(dense, lexical, 1.0).argmax() == 0  # z: [0.52, -0.71, 0.19]
    assert fuse(dense, lexical, 2.0).argmax() == 2  # the lexical match outweighs
    assert not standardised(np.zeros(4)).any()
    assert np.allclose(standardised(np.array([1.0, 3.0])), [-1.0, 1.0])


def test_one_rare_shared_word_cannot_outvote_the_retriever():
    """BM25 is 0 for most candidates, so the one sharing a rare word gets a z of ~4 here;
    capped at LEXICAL_CAP it adds 2 at most, and the retriever's clear best stays best."""
    dense = np.array([5.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    lexical = np.zeros_like(dense)
    lexical[1] = 9.0
    assert standardised(lexical)[1] > 3.5
    assert fuse(dense, lexical, 1.0, cap=None).argmax() == 1
    assert fuse(dense, lexical, 1.0).argmax() == 0
    assert LEXICAL_CAP == 2.0 and fuse(dense, lexical, 1.0)[1] == standardised(dense)[1] + 2.0


def test_the_last_user_turn_is_what_bm25_matches():
    turns = [
        Turn(role="user", text="안녕"),
        Turn(role="system", text="식사는 하셨어요?"),
        Turn(role="user", text="병원 다녀왔어"),
    ]
    assert last_user_text(turns) == "병원 다녀왔어"
    assert last_user_text(context_text(turns)) == "병원 다녀왔어"
    assert last_user_text(turns[:2]) == "안녕"
    assert last_user_text("") == "" and last_user_text([]) == ""
