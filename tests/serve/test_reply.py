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
