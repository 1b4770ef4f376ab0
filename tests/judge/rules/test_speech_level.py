"""speech_level: 반말 sentence endings are out of bounds, 해요체/하십시오체 are not."""

from __future__ import annotations

from tests.judge.rules.cases import carecall_items, flagged, judge_texts

BANMAL = [
    "밥은 먹었어? 잘 챙겨 먹어야지.",
    "할머니, 그거 완전 별로야.",
    "같이 가자!",
    "왜 그랬냐?",
    "뭐 먹었니?",  # 니/EC at the sentence end
    "잘 드셨나?",  # honorific 시 but 반말 -나
    "내가 그랬거든.",
    "그렇구나! 😊",  # emoji after the ending
    "푹 쉬어",  # no punctuation
    "내일 또 전화할게~^^",
    "응.",  # a casual interjection alone
    "어, 그래.",
    "그렇게 하면 좋을 텐데.",
    "얼마나 맛있는데.",  # Kiwi: ETM 는 + 데/NNB
    "잘됐지 뭐.",  # trailing 뭐 after the ending
    "에어컨 빵빵하니까.",  # -니까 without ㅂ/습 is 반말
    "좋으시겠다!",  # 시 does not make -다 polite
    "식사는 하셨어요? 재밌었지?",  # the second of two sentences
    "괜찮아요, 걱정 마.",
    "순자야, 밥 먹었어요?",  # vocative 야
]
POLITE = [
    "식사는 챙겨 드셨어요?",
    "안녕하세요, 어르신.",
    "감사합니다!",
    "그렇죠 😊",
    "그렇지요.",
    "별말씀을요.",
    "제가 도와드릴게요~",
    "어르신, 정말 잘하셨네요 ㅎㅎ",
    "그렇습니까?",
    "안녕히 계십시오.",
    "몸조심하시고요.",  # 고/EC + 요/JX
    "그렇게 하시면 좋을 텐데요.",
    "정말 맛있더라고요.",  # 더라고/EF + 요/JX
    "그런 날도 있는 거죠 뭐.",
    "고마워용",  # the coda of 해용 split off
    "어르신.",  # a vocative noun has no speech level
    "저도요.",
    "네. 아니요. 그럼요.",
]
QUOTED = [
    '"밥 먹었어?"라고 물어보셨군요.',
    "어르신께서 '괜찮아'라고 하셨잖아요.",
    '할머니가 "밥 먹었니?" 하고 물으셨어요.',
    "손주가 밥 먹었냐고 물었대요.",  # indirect quote: 냐고/EC
]


def test_banmal_endings_are_out_of_bounds():
    assert flagged("speech_level", BANMAL) == BANMAL


def test_polite_endings_are_in_bounds():
    assert flagged("speech_level", POLITE) == []


def test_quoted_banmal_is_someone_elses():
    assert flagged("speech_level", QUOTED) == []


def test_verdict_names_the_ending_and_the_sentence():
    (verdict,) = judge_texts("speech_level", ["식사하셨어요? 밥은 먹었어?"])
    assert verdict.label == "out-of-bounds" and verdict.rule == "speech_level"
    assert verdict.category == "style" and verdict.score == 1.0
    assert "-어 (EF)" in verdict.raw_output and "밥은 먹었어?" in verdict.raw_output


def test_allowed_endings_from_the_spec():
    from rolecall.records import Category, RoleSpec

    spec = RoleSpec(
        name="friend",
        outline="친구 같은 봇",
        categories=[Category(name="style", description="-", error_category="tone")],
        rules={"speech_level": {"allow_endings": ["네"]}},
    )
    assert flagged("speech_level", ["그거 좋네!", "그거 좋아!"], spec) == ["그거 좋아!"]
    (verdict,) = judge_texts("speech_level", ["그거 좋아!"], spec)
    assert verdict.category == "tone"  # the spec's error category of "style"


def test_no_carecall_system_turn_is_flagged():
    """The shipped dialogues are all 존댓말: the false-positive rate must be 0."""
    from rolecall.judge.rules import load_rule_judge

    items = carecall_items("system")
    verdicts = load_rule_judge("speech_level", "out_of_bounds", None).verdicts(items)
    assert len(items) == 283
    assert [v.raw_output for v in verdicts if v.label != "in-bounds"] == []


def test_carecall_user_turns_are_mostly_banmal():
    """The elders speak 반말: all but noun-only fragments (목도리. 빨간색으로.) are hits."""
    from rolecall.judge.rules import load_rule_judge

    items = carecall_items("user")
    verdicts = load_rule_judge("speech_level", "out_of_bounds", None).verdicts(items)
    hits = sum(v.label == "out-of-bounds" for v in verdicts)
    assert hits / len(items) > 0.97
