"""How every bot draws a reply a person did not reject (serve/reply.py)."""

from __future__ import annotations

from rolecall.serve.reply import RESAMPLE_TEMPERATURE, TRIES, Reply, draw_unrejected


def test_the_first_draw_is_the_configured_one_and_later_draws_change_the_seed():
    calls = []

    def draw(temperature: float, seed: int) -> str:
        calls.append((temperature, seed))
        return ["", "거절된 답", "새 답"][min(seed, 2)]

    text, draws, temperature = draw_unrejected(draw, 0.0, {"거절된 답"})
    # an empty draw and a rejected one are both drawn again
    assert (text, draws, temperature) == ("새 답", 3, RESAMPLE_TEMPERATURE)
    assert calls == [(0.0, 0), (RESAMPLE_TEMPERATURE, 1), (RESAMPLE_TEMPERATURE, 2)]
    assert draw_unrejected(lambda t, s: "좋아요", 1.2, set()) == ("좋아요", 1, 1.2)
    assert draw_unrejected(lambda t, s: "좋아요", 1.2, {"좋아요"}) == ("좋아요", TRIES, 1.2)


def test_a_reply_without_its_text_is_its_provenance():
    reply = Reply("네", "retrieved", [{"stage": "retrieve", "confidence": 0.9}], 12.5)
    assert reply.provenance() == {
        "path": "retrieved",
        "latency_ms": 12.5,
        "stages": [{"stage": "retrieve", "confidence": 0.9}],
    }
    assert reply.to_dict() == {"text": "네", **reply.provenance()}


def test_a_reply_describes_itself_on_one_line():
    stages = [
        {
            "stage": "retrieve",
            "candidates": [{"text": "네", "retrieval_score": 1.0, "rerank_score": 0.25}],
            "confidence": 0.1234,
            "threshold": 0.5,
            "method": "cosine",
        },
        {"stage": "generate", "ms": 40.2},
        {"stage": "guard", "text": "나쁜 말", "p_out_of_bounds": 0.91, "flagged": True},
    ]
    line = Reply("다른 말", "fallback", stages, 51.4).describe()
    assert line == (
        "fallback · rerank 0.25 · cosine 0.123 vs threshold 0.500 · generated in 40 ms · "
        "P(out of bounds) 0.91 -> flagged '나쁜 말' · 51 ms"
    )
    bare = Reply("네", "retrieved", [{"stage": "retrieve", "confidence": 0.9}], 3.0)
    assert bare.describe() == "retrieved · confidence 0.900 · 3 ms"
