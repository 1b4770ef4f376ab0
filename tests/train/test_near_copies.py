"""Near-copies and rule paraphrases: what each edit changes, and only that."""

from __future__ import annotations

import random

from rolecall.train.near_copies import repunctuated, respaced, reworded, surface_edit


def test_respacing_moves_one_space_and_nothing_else():
    rng = random.Random(0)
    for text in ["3박 4일 여행 다녀왔어요", "오늘날씨", "가"]:
        out = respaced(text, rng)
        if out is None:
            assert len(text) == 1  # no place for a space
            continue
        assert out.replace(" ", "") == text.replace(" ", "")
        assert abs(out.count(" ") - text.count(" ")) == 1


def test_repunctuating_takes_off_or_puts_on_one_closing_mark():
    rng = random.Random(0)
    assert repunctuated("밥 먹었어?", rng) == "밥 먹었어"
    out = repunctuated("밥 먹었어", rng)
    assert out.startswith("밥 먹었어") and out[len("밥 먹었어") :] in {".", "!", "~", "..."}
    assert repunctuated("   ", rng) is None


def test_rewording_swaps_the_speech_level_and_drops_intensifiers():
    assert reworded("밥 먹었어요") == "밥 먹었어"
    assert reworded("정말 맛있었습니다") == "맛있었다"
    assert reworded("너무 좋네요") == "좋네"
    assert reworded("ㅋㅋㅋ") is None  # no ending: no paraphrase


def test_a_surface_edit_always_changes_the_text():
    rng = random.Random(1)
    for text in ["응 ㅋㅋ 중식 좋아 그거 먹자", "좋아요!", "네"]:
        out = surface_edit(text, rng)
        assert out is None or out != text
