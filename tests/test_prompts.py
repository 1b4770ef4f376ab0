import re

import pytest
from jinja2 import Environment, meta

from rolecall.errors import ConfigError
from rolecall.prompts import available, load_template
from rolecall.records import Category, Dialogue, Turn

# One distinctive value per variable a template may use: each must reach the rendered text.
CATEGORY = Category(
    name="VAL-CATNAME",
    description="VAL-CATDESC",
    forbidden_examples=["VAL-FORBIDDEN"],
    error_category="not_safe",
)
HISTORY = [Turn(role="system", text="VAL-SYSTEM"), Turn(role="user", text="VAL-USER")]
VALUES = {
    "outline": "VAL-OUTLINE",
    "categories": [CATEGORY],
    "history": HISTORY,
    "response": "VAL-RESPONSE",
    "example": Dialogue(id="d", turns=HISTORY),
    "neutral": "VAL-NEUTRAL",
    "toxic": "VAL-TOXIC",
    "text": "VAL-TEXT",
    "comments": ["VAL-COMMENT"],
    "topic": "VAL-TOPIC",
}


@pytest.mark.parametrize("language", ["ko", "en"])
def test_every_template_declares_its_form_and_renders_every_value(language):
    for name in available(language):
        template = load_template(name, language)
        assert template.form in ("completion", "chat")
        assert template.hash.startswith("sha256:")
        used = meta.find_undeclared_variables(Environment().parse(template.source))
        assert used <= set(VALUES), f"{language}/{name}: give {used - set(VALUES)} a value"
        text = template.render(**{k: v for k, v in VALUES.items() if k in used})
        assert text.strip() and "form:" not in text and "{{" not in text, (name, text)
        found = set(re.findall(r"VAL-[A-Z]+", text))
        expected = {m for k in used for m in re.findall(r"VAL-[A-Z]+", repr(VALUES[k]))}
        # subtle: the chat-role prompt shows only category descriptions, never names/examples
        missing = (
            expected - found - ({"VAL-CATNAME", "VAL-FORBIDDEN"} if name == "chat_role" else set())
        )
        assert not missing, f"{language}/{name} never shows {missing}"


def test_chat_role_template_renders_without_the_form_line():
    text = load_template("chat_role", "ko").render(
        outline="돌봄 전화 봇입니다.", categories=[], history=[]
    )
    assert text.startswith("돌봄 전화 봇입니다.") and text.endswith("시스템:")
    assert "form:" not in text


def test_missing_template_and_missing_value_are_errors():
    with pytest.raises(ConfigError, match="nope"):
        load_template("nope", "ko")
    with pytest.raises(Exception, match="outline"):
        load_template("chat_role", "ko").render(categories=[], history=[])
