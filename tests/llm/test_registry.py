import pytest

from rolecall.errors import BadModelString, InputFileError
from rolecall.llm import load_backend, parse_model_string
from rolecall.llm.registry import DEFAULT_MODEL


def test_model_strings_parse_into_scheme_location_and_options():
    spec = parse_model_string("openai:http://localhost:8000/v1?model=qwen&timeout=5")
    assert (spec.scheme, spec.location) == ("openai", "http://localhost:8000/v1")
    assert spec.options == {"model": "qwen", "timeout": "5"}
    assert str(parse_model_string("llamacpp:embedded")) == "llamacpp:embedded"


def test_default_model_is_the_embedded_one(monkeypatch):
    monkeypatch.delenv("ROLECALL_MODEL", raising=False)
    assert str(parse_model_string(None)) == DEFAULT_MODEL == "llamacpp:embedded"
    monkeypatch.setenv("ROLECALL_MODEL", "fake:x")
    assert parse_model_string(None).scheme == "fake"


@pytest.mark.parametrize(
    "text, needle",
    [
        ("embedded", "not a model string"),
        ("llamacpp:", "not a model string"),
        ("gpt4:foo", "unknown backend 'gpt4'"),
        ("llamacpp:embedded?n_ctx=1&n_ctx=2", "given twice"),
        (":x", "not a model string"),
    ],
)
def test_bad_model_strings_name_the_problem(text, needle):
    with pytest.raises(BadModelString) as info:
        parse_model_string(text)
    assert needle in str(info.value)
    assert info.value.fix


def test_unknown_and_bad_options_list_the_accepted_ones():
    with pytest.raises(BadModelString) as info:
        load_backend("fake:x?colour=red")
    assert "colour" in str(info.value) and "delay" in info.value.fix
    with pytest.raises(BadModelString) as info:
        load_backend("llamacpp:embedded?n_ctx=lots")
    assert "n_ctx" in str(info.value)


def test_missing_gguf_file_is_named():
    with pytest.raises(InputFileError) as info:
        load_backend("llamacpp:/no/such/model.gguf")
    assert "/no/such/model.gguf" in str(info.value) and "llamacpp:embedded" in info.value.fix


def test_fake_backend_is_registered_through_the_real_path():
    backend = load_backend("fake:unit?delay=0")
    assert backend.scheme == "fake" and backend.model_id == "fake-unit"
