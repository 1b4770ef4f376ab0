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


def _dialogue(id: str, lines: list[str]) -> Dialogue:
    roles = ["system", "user"]
    return Dialogue(id=id, turns=[Turn(role=roles[i % 2], text=t) for i, t in enumerate(lines)])


EXAMPLE_LINES = [
    "안녕하세요, 어르신. 식사는 하셨어요?",
    "응, 아까 된장찌개에 밥 먹었어.",
    "잘하셨어요. 요즘 잠은 잘 주무세요?",
    "밤에 자꾸 깨서 좀 피곤해.",
    "낮에 햇볕 쬐며 조금 걸으시면 도움이 될 거예요.",
    "그래, 내일은 공원에 나가 봐야겠다.",
]


def test_a_near_copy_of_the_example_is_rejected_with_its_share():
    from rolecall.generate.dialogues import MAX_COPY, copied_share, near_copy

    example = _dialogue("ex-1", EXAMPLE_LINES)
    copy = _dialogue("g1", [*EXAMPLE_LINES[:5], "그래, 내일은 꼭 공원에 가 볼게."])
    own = _dialogue(
        "g2",
        [
            "어르신, 안녕하세요. 오늘 날이 쌀쌀하죠?",
            "응, 바람이 차네.",
            "따뜻하게 입고 계세요.",
            "고마워. 너도 감기 조심해.",
            "네, 어르신. 저녁은 뭐 드실 거예요?",
            "호박죽이나 쑤어 먹지.",
        ],
    )
    assert copied_share(example, example) == 1.0 and copied_share(own, example) < 0.2
    reason = near_copy(copy, example, MAX_COPY)
    assert reason.startswith("a near copy of its example ex-1: ") and "--max-copy" in reason
    assert near_copy(own, example, MAX_COPY) is None
    assert near_copy(copy, example, None) is None  # the filter off


def test_generation_writes_a_near_copy_to_rejected_with_the_reason(tmp_path):
    from types import SimpleNamespace

    from rolecall.generate.dialogues import generate_dialogues
    from rolecall.jsonl import read_jsonl

    example = _dialogue("ex-1", EXAMPLE_LINES)
    persona = Category(name="persona", description="인공지능", error_category="wrong persona")
    spec = RoleSpec(name="s", outline="안부 전화", categories=[persona])
    body = "\n".join(
        f"{'시스템' if i % 2 == 0 else '사용자'}: {t}" for i, t in enumerate(EXAMPLE_LINES)
    )

    class CopyingEngine:  # every call answers with the example written out again
        stats = SimpleNamespace(failures=0)
        model_id = "stub"

        def run(self, work, records, params, on_row):
            for record in records:
                text = body.removeprefix("시스템:")
                on_row({"id": record["id"], "text": text, "finish_reason": "stop", "model": "s"})

    counts = generate_dialogues(
        CopyingEngine(), spec, [example], GenerationConfig(count=2), tmp_path
    )
    assert (counts["accepted"], counts["rejected"]) == (0, 2)
    rejected = list(read_jsonl(tmp_path / "rejected.jsonl"))
    assert all(r["reason"].startswith("a near copy of its example ex-1: 100%") for r in rejected)
    kept = generate_dialogues(
        CopyingEngine(), spec, [example], GenerationConfig(count=3, max_copy=None), tmp_path / "all"
    )
    assert kept["accepted"] == 3
