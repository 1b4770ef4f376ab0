import pytest
from pydantic import ValidationError

from rolecall.records import Category, Dialogue, Example, Pair, RoleSpec, Turn, Verdict


def test_examples_carry_their_label_and_category():
    history = [Turn(role="user", text="요즘 잠을 잘 못 자요.")]
    Example(history=history, response="많이 피곤하시겠어요.", label="positive")
    negative = Example(
        history=history,
        response="저도 어젯밤에 못 잤어요.",
        label="negative",
        category="wrong persona",
    )
    assert negative.category == "wrong persona"
    with pytest.raises(ValidationError, match="needs the error category"):
        Example(history=history, response="x", label="negative")
    with pytest.raises(ValidationError, match="no error category"):
        Example(history=history, response="x", label="positive", category="not safe")
    with pytest.raises(ValidationError):
        Example(history=history, response="x", label="maybe")


def test_role_spec_needs_unique_categories():
    category = Category(
        name="persona",
        description="AI 상담원입니다.",
        forbidden_examples=["저도 밥 먹었어요."],
        error_category="wrong persona",
    )
    spec = RoleSpec(
        name="carecall", outline="어르신께 안부 전화를 드립니다.", categories=[category]
    )
    assert spec.error_categories == ["wrong persona"]
    with pytest.raises(ValidationError, match="repeated"):
        RoleSpec(name="x", outline="y", categories=[category, category])
    with pytest.raises(ValidationError):
        RoleSpec(name="x", outline="y", categories=[])


def test_verdicts_keep_raw_output_and_parse_status():
    Verdict(
        judge="consistency",
        item_id="1",
        label="유지",
        raw_output="답: 유지",
        parse_status="parsed",
        probabilities={"유지": 0.8, "변화": 0.2},
    )
    unparsed = Verdict(
        judge="consistency", item_id="1", raw_output="모르겠어요", parse_status="unparsed"
    )
    assert unparsed.label is None and unparsed.raw_output == "모르겠어요"
    with pytest.raises(ValidationError):
        Verdict(judge="j", item_id="1", raw_output="?", parse_status="parsed")
    with pytest.raises(ValidationError):
        Verdict(judge="j", item_id="1", label="유지", raw_output="?", parse_status="unparsed")


def test_records_reject_unknown_fields_and_bad_roles():
    with pytest.raises(ValidationError):
        Turn(role="bot", text="안녕하세요")
    with pytest.raises(ValidationError):
        Pair(neutral="a", toxic="b", source="x")
    dialogue = Dialogue(
        id="d1", turns=[Turn(role="system", text="안녕하세요")], metadata={"topic": "식사"}
    )
    assert Dialogue.model_validate_json(dialogue.model_dump_json()) == dialogue
