import pytest

from rolecall.errors import ConfigError
from rolecall.prompts import available, load_template


@pytest.mark.parametrize("language", ["ko", "en"])
def test_every_template_declares_its_form_and_renders(language):
    for name in available(language):
        template = load_template(name, language)
        assert template.form in ("completion", "chat")
        assert template.hash.startswith("sha256:")


def test_demo_template_renders_without_the_form_line():
    text = load_template("demo", "ko").render(opening="안녕하세요, 어르신.")
    assert text.startswith("다음은") and text.endswith("안녕하세요, 어르신.")


def test_missing_template_and_missing_value_are_errors():
    with pytest.raises(ConfigError, match="demo"):
        load_template("nope", "ko")
    with pytest.raises(Exception, match="opening"):
        load_template("demo", "ko").render()
