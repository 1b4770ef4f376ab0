"""unsupported: offers of the features the spec lists as unsupported."""

from __future__ import annotations

from tests.judge.rules.cases import carecall_items, carecall_spec, flagged, judge_texts

OFFERS = [
    "네, 제가 아드님께 바로 전화해서 전해 드릴게요.",
    "내일 오전으로 내과 진료 예약해 두었어요.",
    "좋아하시는 트로트 한 곡 틀어 드릴게요.",  # 시 only in the relative clause
    "택시를 불러 드릴까요?",
    "제가 따님께 대신 연락해 드릴게요.",
    "원하시면 병원 예약해 드릴게요.",
    "반찬은 제가 주문해 놓았어요.",
    "용돈은 제가 송금해 드리겠습니다.",
    "지난번 통화 때 허리가 아프다고 하셨죠? 좀 나아지셨어요?",  # a pattern: memory
]
IN_BOUNDS = [
    "죄송해요, 저는 노래를 부르거나 틀어 드릴 수는 없어요.",
    "예약은 제가 해 드릴 수 없어서 죄송해요.",
    "병원 예약은 따님께 부탁해 보세요.",
    "아드님께 연락하고 싶으시군요. 그런데 저는 대신 전화를 걸 수가 없어요.",
    "대신 어르신 노래는 얼마든지 들어 드릴게요.",
    "안부 여쭈려고 전화드렸어요.",
    "주민센터에 전화로 여쭤 보시면 알려 드릴 거예요.",
    "예약하신 날짜는 잘 기억해 두세요.",
    "택시 타실 때 조심하세요.",
]


def test_offers_of_unsupported_features_are_out_of_bounds():
    assert flagged("unsupported", OFFERS, carecall_spec()) == OFFERS


def test_refusals_advice_and_the_bots_own_calls_are_in_bounds():
    assert flagged("unsupported", IN_BOUNDS, carecall_spec()) == []


def test_verdict_names_the_feature_and_the_offer():
    (verdict,) = judge_texts("unsupported", ["택시를 불러 드릴까요?"], carecall_spec())
    assert verdict.rule == "unsupported" and verdict.category == "policy violation"
    assert verdict.raw_output.startswith("unsupported: 택시나 사람 부르기: offer 드리 + -ㄹ까요")


def test_no_carecall_system_turn_is_flagged():
    from rolecall.judge.rules import load_rule_judge

    judge = load_rule_judge("unsupported", "out_of_bounds", carecall_spec())
    verdicts = judge.verdicts(carecall_items())
    assert [v.raw_output for v in verdicts if v.label != "in-bounds"] == []
