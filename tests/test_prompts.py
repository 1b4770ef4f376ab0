import pytest

from rolecall.errors import ConfigError
from rolecall.prompts import available, load_template


@pytest.mark.parametrize("language", ["ko", "en"])
def test_every_template_declares_its_form_and_renders(language):
    for name in available(language):
        template = load_template(name, language)
        assert template.form in ("completion", "chat")
        assert template.hash.startswith("sha256:")


def test_chat_role_template_renders_without_the_form_line():
    text = load_template("chat_role", "ko").render(outline="돌봄 전화 봇입니다.",
                                                   categories=[], history=[])
    assert text.startswith("돌봄 전화 봇입니다.") and text.endswith("시스템:")
    assert "form:" not in text


def test_missing_template_and_missing_value_are_errors():
    with pytest.raises(ConfigError, match="nope"):
        load_template("nope", "ko")
    with pytest.raises(Exception, match="outline"):
        load_template("chat_role", "ko").render(categories=[], history=[])
