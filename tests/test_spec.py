import pytest

from rolecall.errors import InputFileError
from rolecall.spec import display_name, error_categories_in_order, load_role_spec
from tests.paths import REPO

GOOD = """name: test
outline: 어르신께 안부 전화를 드리는 인공지능 상담원입니다.
categories:
  - name: persona
    description: 인공지능임을 잊지 않습니다.
    forbidden_examples: ["저도 어제 김치찌개 먹었어요."]
    error_category: wrong persona
"""


def test_the_carecall_example_spec_is_valid():
    spec = load_role_spec(REPO / "examples" / "carecall" / "spec.yaml")
    names = {c.name for c in spec.categories}
    assert {
        "sensibleness",
        "style",
        "safety",
        "persona",
        "temporality",
        "unsupported_features",
    } <= names
    assert {"not sensible", "wrong persona", "policy violation", "not safe"} <= set(
        spec.error_categories
    )
    # the web app's labels: every error category has a Korean name, in the spec's order
    order = error_categories_in_order(spec)
    assert order[:2] == ["not sensible", "style"] and sorted(order) == spec.error_categories
    assert all(display_name(spec, c, "ko") != c for c in order)
    assert display_name(spec, "policy violation", "ko") == "정책 위반"


@pytest.mark.parametrize(
    "text, needle",
    [
        (
            GOOD.replace("    error_category: wrong persona\n", ""),
            "categories[0].error_category: Field required",
        ),
        (GOOD.replace("outline: 어르신께", "outlne: 어르신께"), "outlne: Extra inputs"),
        (GOOD + "  - name: persona\n    description: x\n    error_category: y\n", "repeated"),
        (GOOD.replace("name: test", "name: [test"), "not valid YAML"),
        ("- just\n- a list\n", "must be a YAML mapping"),
        (
            GOOD.replace('["저도 어제 김치찌개 먹었어요."]', "3"),
            "categories[0].forbidden_examples: Input should be a valid list",
        ),
        (
            GOOD + "display_names:\n  ko:\n    wrong persna: 페르소나 위반\n",
            "display_names.ko names ['wrong persna'], which are not categories",
        ),
    ],
)
def test_spec_errors_name_the_file_and_field(tmp_path, text, needle):
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        load_role_spec(path)
    assert str(path) in str(info.value) and needle in str(info.value), str(info.value)


def test_missing_spec_file(tmp_path):
    with pytest.raises(InputFileError, match="not found"):
        load_role_spec(tmp_path / "none.yaml")


def test_display_names_fall_back_to_the_identifier(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(GOOD + "display_names:\n  ko:\n    persona: 페르소나\n", encoding="utf-8")
    spec = load_role_spec(path)
    assert display_name(spec, "persona", "ko") == "페르소나"
    assert display_name(spec, "wrong persona", "ko") == "wrong persona"  # none given
    assert display_name(spec, "persona", "en") == "persona"


CHECK = """
help_lines: {"119": 응급}
user_checks:
  - name: emergency
    kind: crisis
    description: 응급 상황
    replies: ["{reply}"]
"""


def test_the_carecall_spec_declares_user_checks_that_point_to_help():
    spec = load_role_spec(REPO / "examples" / "carecall" / "spec.yaml")
    kinds = {c.kind for c in spec.user_checks}
    assert kinds == {"crisis", "abuse", "refuse", "answer", "clarify"}
    crisis = [c for c in spec.user_checks if c.kind == "crisis"]
    assert {c.name for c in crisis} == {"self_harm", "medical_emergency", "abuse_by_others"}
    assert all(c.flags for c in crisis) and not any(
        c.flags for c in spec.user_checks if c.kind != "crisis"
    )


@pytest.mark.parametrize(
    "reply, needle",
    [
        ("지금 바로 119에 전화하세요.", None),
        ("많이 놀라셨겠어요.", "names none of help_lines"),
    ],
)
def test_a_crisis_check_must_name_a_help_line(tmp_path, reply, needle):
    path = tmp_path / "spec.yaml"
    path.write_text(GOOD + CHECK.replace("{reply}", reply), encoding="utf-8")
    if needle is None:
        assert load_role_spec(path).user_checks[0].flags
        return
    with pytest.raises(InputFileError) as caught:
        load_role_spec(path)
    assert needle in str(caught.value) and str(path) in str(caught.value)


def test_a_crisis_check_without_help_lines_and_a_check_named_none_are_refused(tmp_path):
    path = tmp_path / "spec.yaml"
    text = GOOD + CHECK.replace("{reply}", "119").replace('help_lines: {"119": 응급}', "")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError, match="no help_lines"):
        load_role_spec(path)
    path.write_text(
        GOOD + CHECK.replace("{reply}", "119").replace("name: emergency", "name: none"),
        encoding="utf-8",
    )
    with pytest.raises(InputFileError, match="turns no check fires on"):
        load_role_spec(path)


def test_rolecall_spec_check_names_the_user_checks_or_their_absence(tmp_path):
    from tests.cli_runs import run_cli

    shown = run_cli("spec", "check", str(REPO / "examples" / "carecall" / "spec.yaml"))
    assert shown.returncode == 0, shown.stderr
    assert "15 user-turn checks: crisis self_harm" in shown.stdout and "109" in shown.stdout
    bare = tmp_path / "spec.yaml"
    bare.write_text(GOOD, encoding="utf-8")
    plain = run_cli("spec", "check", str(bare))
    assert plain.returncode == 0 and "no user_checks" in plain.stdout


def test_a_spec_language_without_templates_is_refused(tmp_path):
    """The package ships Korean and English prompt templates: another language is an
    error at spec check, not at the first generation."""
    text = (REPO / "examples/carecall/spec.yaml").read_text(encoding="utf-8")
    path = tmp_path / "spec.yaml"
    path.write_text(text.replace("language: ko", "language: kr"), encoding="utf-8")
    with pytest.raises(InputFileError, match="language: Input should be 'ko' or 'en'"):
        load_role_spec(path)
