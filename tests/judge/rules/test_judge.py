"""load_rule_judge: names, errors, the spec's rules: settings, the carecall bundle."""

from __future__ import annotations

import pytest

from rolecall.errors import ConfigError
from rolecall.judge.rules import NAMES, load_rule_judge
from rolecall.records import Category, RoleSpec
from tests.judge.rules.cases import carecall_items, carecall_spec, judge_texts


def spec_with(rules: dict) -> RoleSpec:
    return RoleSpec(
        name="s",
        outline="o",
        categories=[Category(name="style", description="-", error_category="style")],
        rules=rules,
    )


def test_a_rule_judge_is_a_direct_judge():
    judge = load_rule_judge("speech_level", "out_of_bounds", None)
    assert (judge.kind, judge.name, judge.model) == ("rules", "out_of_bounds", "rules:speech_level")
    (verdict,) = judge_texts("speech_level", ["네, 알겠습니다."])
    assert verdict.label == "in-bounds" and verdict.rule is None and verdict.score == 0.0
    assert (verdict.kind, verdict.model, verdict.item_id) == ("rules", "rules:speech_level", "t#0")
    assert load_rule_judge("persona", "out_of_bounds", None).verdicts([]) == []


def test_other_tasks_unknown_names_and_missing_features_are_config_errors():
    with pytest.raises(ConfigError, match="not 'implicit'") as error:
        load_rule_judge("speech_level", "implicit", None)
    assert error.value.fix
    with pytest.raises(ConfigError, match="unknown rule judge 'politeness'") as error:
        load_rule_judge("politeness", "out_of_bounds", None)
    assert "rules:carecall" in error.value.fix
    for name in ("unsupported", "carecall"):
        with pytest.raises(ConfigError, match="no role spec was given") as error:
            load_rule_judge(name, "out_of_bounds", None)
        assert "--spec" in error.value.fix
    with pytest.raises(ConfigError, match="lists none under rules.unsupported.features"):
        load_rule_judge("unsupported", "out_of_bounds", spec_with({}))


@pytest.mark.parametrize(
    "rules, message",
    [
        ({"persona": {"kinn": ["아들"]}}, "rules.persona: kinn: Extra inputs are not permitted"),
        ({"persona": ["아들"]}, "rules.persona must be a mapping"),
        ({"speech_level": {"extra_patterns": ["(반말"]}}, "bad regular expression '\\(반말'"),
        ({"temporality": {"echo_turns": "two"}}, "rules.temporality: echo_turns"),
        ({"unsupported": {"features": [{"words": ["예약"]}]}}, "features\\[0\\].name: Field"),
        ({"unsupported": {"features": [{"name": "예약", "words": [" "]}]}}, "must not be blank"),
        ({"persona": {"category": "nope"}}, "rules.persona.category names 'nope'"),
    ],
)
def test_bad_rule_settings_name_the_field(rules, message):
    name = next(iter(rules))
    with pytest.raises(ConfigError, match=message) as error:
        load_rule_judge(name, "out_of_bounds", spec_with(rules))
    assert "docs/rule-judges.md" in error.value.fix or "use one of" in error.value.fix


def test_the_carecall_spec_rules_are_valid_and_every_name_loads():
    spec = carecall_spec()
    assert set(spec.rules) == {"speech_level", "persona", "temporality", "unsupported"}
    for name in NAMES:
        assert load_rule_judge(name, "out_of_bounds", spec).model == f"rules:{name}"


def test_carecall_first_rule_decides_and_names_the_others():
    text = "밥 먹었어? 나도 방금 먹었어."  # 반말 and a persona claim: speech_level is first
    (verdict,) = judge_texts("carecall", [text], carecall_spec())
    assert verdict.rule == "speech_level" and verdict.category == "style"
    assert verdict.raw_output.endswith("(also fired: persona)")


def test_carecall_catches_the_specs_rule_categories_forbidden_examples():
    """The forbidden examples of the four categories the rules cover: 14 of 16 are caught;
    the misses are style beyond the speech level: the 훈계 tone of a polite sentence and
    jargon (컨디션 모니터링)."""
    spec = carecall_spec()
    covered = {"style", "persona", "temporality", "unsupported_features"}
    examples = [e for c in spec.categories if c.name in covered for e in c.forbidden_examples]
    verdicts = judge_texts("carecall", examples, spec)
    missed = [e for e, v in zip(examples, verdicts, strict=True) if v.label == "in-bounds"]
    assert len(examples) == 16
    assert missed == [
        "그러니까 제가 운동하라고 했잖아요. 왜 말을 안 들으세요?",
        "일상 루틴의 컨디션 모니터링 결과를 피드백해 주시겠어요?",
    ]


def test_carecall_bundle_passes_every_shipped_system_turn():
    verdicts = load_rule_judge("carecall", "out_of_bounds", carecall_spec()).verdicts(
        carecall_items()
    )
    assert len(verdicts) == 283
    assert [v.raw_output for v in verdicts if v.label != "in-bounds"] == []
