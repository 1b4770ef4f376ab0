import pytest

from rolecall.generate.dialogues import GenerationConfig, build_requests, parse_dialogue
from rolecall.prompts import load_template
from rolecall.records import Category, Dialogue, Rejected, RoleSpec, Turn

GOOD = """시스템: 안녕하세요, 어르신. 식사는 하셨어요?
사용자: 응, 먹었어.
시스템: 뭐 드셨어요?
사용자: 김치찌개.
그리고 밥 한 공기.
시스템: 맛있게 드셨네요.
사용자: 그래.
[대화 끝]
사용자: 이 줄은 끝 표시 뒤라서 버려집니다."""


def test_a_clean_generation_parses_with_continuation_lines_joined():
    dialogue = parse_dialogue(GOOD, "g1", min_turns=6)
    assert isinstance(dialogue, Dialogue)
    assert [t.role for t in dialogue.turns] == ["system", "user"] * 3
    assert dialogue.turns[3].text == "김치찌개. 그리고 밥 한 공기."


@pytest.mark.parametrize(
    "raw",
    [
        "System: Hello.\nUser: Hi.\nSystem: Did you eat?\nUser: Yes.\nSystem: Good.\n"
        "User: Bye.\n[dialogue end]",
        "**상담원**: 안녕하세요.\n**어르신**: 응.\n상담원 : 식사는요?\n할머니: 했어.\n"
        "AI: 다행이에요.\nUser: 그래.\n[대화 끝]",
    ],
)
def test_speaker_tags_in_korean_or_english(raw):
    dialogue = parse_dialogue(raw, "g", min_turns=6)
    assert isinstance(dialogue, Dialogue)
    assert [t.role for t in dialogue.turns] == ["system", "user"] * 3


def test_stray_text_before_the_first_tag_is_ignored_and_repeated_speakers_merge():
    raw = (
        "여기는 잡담입니다.\n시스템: 안녕하세요.\n시스템: 식사는 하셨어요?\n사용자: 응.\n"
        "시스템: 다행이에요.\n사용자: 그래.\n시스템: 건강하세요.\n사용자: 고마워.\n[대화 끝]"
    )
    dialogue = parse_dialogue(raw, "g", min_turns=6)
    assert dialogue.turns[0].text == "안녕하세요. 식사는 하셨어요?"
    assert len(dialogue.turns) == 6


@pytest.mark.parametrize(
    "raw, reason",
    [
        (GOOD.split("[대화 끝]")[0], "never ended"),
        ("시스템: 안녕하세요.\n사용자: 응.\n[대화 끝]", "too short"),
        (
            "사용자: 여보세요?\n시스템: 네.\n사용자: 응.\n시스템: 네.\n사용자: 응.\n"
            "시스템: 네.\n[대화 끝]",
            "does not start with the system",
        ),
        (
            "시스템: 네.\n사용자: 응.\n시스템: 네.\n사용자: 응.\n"
            "시스템: 네.\n사용자: 응.\n시스템: 네.\n사용자: 응.\n시스템:",
            "runaway repetition",
        ),
        ("아무 형식도 없는 글입니다.\n[대화 끝]", "too short: 0 turns"),
    ],
)
def test_bad_generations_are_rejected_with_a_reason(raw, reason):
    rejected = parse_dialogue(raw, "g", min_turns=6)
    assert isinstance(rejected, Rejected) and reason in rejected.reason
    assert rejected.raw == raw


def test_unfinished_generations_can_be_kept_without_their_cut_last_turn():
    cut = GOOD.split("[대화 끝]")[0] + "시스템: 그럼 오늘도 건강하"
    dialogue = parse_dialogue(cut, "g", min_turns=6, require_end=False)
    assert isinstance(dialogue, Dialogue) and len(dialogue.turns) == 6
    assert dialogue.turns[-1].text == "그래."


def test_requests_follow_the_paper_and_repeat_across_runs():
    spec = RoleSpec(
        name="s",
        outline="어르신께 안부 전화를 드립니다.",
        categories=[
            Category(name="persona", description="인공지능입니다.", error_category="wrong persona")
        ],
    )
    examples = [
        Dialogue(
            id=f"e{i}",
            turns=[Turn(role="system", text=f"예시 {i}번 인사"), Turn(role="user", text="응")],
        )
        for i in range(5)
    ]
    template = load_template("dialogue_generate")
    plan = build_requests(spec, examples, GenerationConfig(count=8, seed=4), template)
    again = build_requests(spec, examples, GenerationConfig(count=8, seed=4), template)
    assert plan == again
    assert len({example_id for _, _, example_id in plan}) > 1  # one example sampled each
    gen_id, request, example_id = plan[0]
    assert request.params.temperature == 0.5 and request.params.top_p == 0.8
    assert request.prompt.startswith("어르신께 안부 전화를 드립니다.")
    assert f"예시 {example_id[1:]}번 인사" in request.prompt
    assert request.prompt.endswith("시스템:")
    assert len({r.params.seed for _, r, _ in plan}) == 8
