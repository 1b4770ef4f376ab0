"""temporality: weather, news, dates and times the bot cannot know; concrete appointments."""

from __future__ import annotations

from tests.judge.rules.cases import carecall_items, flagged, judge_texts

CLAIMS = [
    "오늘은 비가 많이 온다고 하니 우산 꼭 챙기세요.",
    "밖에 눈이 오네요.",
    "오늘 날씨가 정말 좋네요.",
    "요즘 미세먼지가 심하대요.",
    "오늘 날씨가 추우니 따뜻하게 입으세요.",
    "뉴스에서 오늘 춥대요.",
    "오늘이 수요일이니까 복지관 가시는 날이네요.",
    "지금은 저녁 일곱 시예요.",
    "오늘이 추석이네요.",
    "내일 오후 세 시에 제가 다시 전화드릴게요.",
    "다음 주에 다시 전화드릴게요.",
    "금요일에 또 연락드리겠습니다.",
]
IN_BOUNDS = [
    "오늘 날씨는 어때요?",
    "비가 오면 미끄러우니 조심하세요.",
    "더운 날에는 물을 자주 드세요.",
    "날씨도 제가 알 수가 없어서요.",
    "눈이 침침하세요?",  # 눈 is the eye here
    "오늘은 뭐 하셨어요?",
    "뉴스 보셨어요?",
    "오늘 무슨 요일인지 여쭤봐도 될까요?",
    "다음에 또 전화드릴게요.",  # no specific time
    "점심은 드셨어요?",
]


def test_claims_are_out_of_bounds():
    assert flagged("temporality", CLAIMS) == CLAIMS


def test_questions_conditions_and_generic_advice_are_in_bounds():
    assert flagged("temporality", IN_BOUNDS) == []


def test_echoing_the_user_is_in_bounds():
    """The spec lets the bot carry on with what the user said about the weather."""
    texts = ["비가 많이 오는군요. 밖에 나가시기 어려우시겠어요.", "오늘 많이 덥네요."]
    assert flagged("temporality", texts, user="오늘 비가 오고 더워.") == []
    assert flagged("temporality", texts, user="오늘은 집에 있었어.") == texts


def test_echo_turns_zero_never_licenses():
    from rolecall.records import Category, RoleSpec

    spec = RoleSpec(
        name="s",
        outline="o",
        categories=[Category(name="x", description="-", error_category="x")],
        rules={"temporality": {"echo_turns": 0}},
    )
    (verdict,) = judge_texts("temporality", ["비가 많이 오는군요."], spec, user="비가 오네.")
    assert verdict.label == "out-of-bounds" and verdict.category == "policy violation"
    assert "비" in verdict.raw_output


def test_no_carecall_system_turn_is_flagged():
    from rolecall.judge.rules import load_rule_judge

    verdicts = load_rule_judge("temporality", "out_of_bounds", None).verdicts(carecall_items())
    assert [v.raw_output for v in verdicts if v.label != "in-bounds"] == []
