"""One secret masker: every spelling of a secret in a URL, and every command that prints
a URL (cache, database, model server) run with one, the secret nowhere in its output."""

from __future__ import annotations

import pytest

from rolecall.secrets import masked
from tests.cli_runs import run_cli

SECRET = "s3cr3tPW"
# a dead port: every command fails to connect and says so, quoting the URL
SPELLINGS = {
    "user-info": f"postgresql://ann:{SECRET}@127.0.0.1:1/rolecall",
    "password=": f"postgresql://ann@127.0.0.1:1/rolecall?password={SECRET}",
    "sslpassword=": f"postgresql://ann@127.0.0.1:1/rolecall?sslmode=disable&sslpassword={SECRET}",
    "token=": f"postgresql://ann@127.0.0.1:1/rolecall?token={SECRET}",
    # issue 50 D3, D5: a space in the password (decoded before it is printed), and a
    # parameter name the driver percent-decodes
    "a space in the password": f"postgresql://ann:{SECRET}%20x@127.0.0.1:1/rolecall",
    "pass%77ord=": f"postgresql://ann@127.0.0.1:1/rolecall?pass%77ord={SECRET}",
}


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"postgresql://ann:{SECRET}@h/db", "postgresql://ann:***@h/db"),
        (
            f"http://h:8000/v1?model=qwen&api_key={SECRET}",
            "http://h:8000/v1?model=qwen&api_key=***",
        ),
        (f"cannot open http://a:{SECRET}@h/x (?access_token={SECRET})", None),
        ("postgresql://ann@127.0.0.1:5432/db", "postgresql://ann@127.0.0.1:5432/db"),
        ("sqlite:////home/ann/rolecall.db", "sqlite:////home/ann/rolecall.db"),
        ("http://gpu:8000/v1?model=qwen", "http://gpu:8000/v1?model=qwen"),
    ],
)
def test_every_spelling_is_masked_and_nothing_else(text, shown):
    out = masked(text)
    assert SECRET not in out
    if shown is not None:
        assert out == shown


def test_an_api_key_variable_is_masked_wherever_it_appears(monkeypatch):
    monkeypatch.setenv("MY_SERVER_API_KEY", SECRET)
    assert masked(f"Bearer {SECRET} rejected") == "Bearer *** rejected"


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_no_command_prints_the_secret(spelling, tmp_path):
    url = SPELLINGS[spelling]
    env = {"ROLECALL_HOME": str(tmp_path)}
    runs = {
        "logs --path": run_cli("logs", "--cache", url, "--path", env_extra=env),
        "logs": run_cli("logs", "--cache", url, env_extra=env),
        "doctor": run_cli("doctor", "--no-check", env_extra={**env, "ROLECALL_CACHE": url}),
        "web add-user": run_cli(
            "web", "add-user", "ann", "--db", url, "--password-stdin", input="pw\n", env_extra=env
        ),
        "web add-user (env)": run_cli(
            "web",
            "add-user",
            "ann",
            "--password-stdin",
            input="pw\n",
            env_extra={**env, "ROLECALL_DATABASE_URL": url},
        ),
    }
    for name, result in runs.items():
        printed = result.stdout + result.stderr
        assert SECRET not in printed, (name, printed[-800:])
    assert runs["logs"].returncode != 0 and "127.0.0.1:1" in runs["logs"].stderr
    assert runs["web add-user"].returncode != 0 and "127.0.0.1:1" in runs["web add-user"].stderr
    assert "***" in runs["logs --path"].stdout


def test_a_model_server_url_and_its_key_are_masked(tmp_path):
    model = f"openai:http://ann:{SECRET}@127.0.0.1:1/v1?model=m&api_key={SECRET}"
    env = {"ROLECALL_HOME": str(tmp_path), "OPENAI_API_KEY": f"sk-{SECRET}"}
    result = run_cli("doctor", "--model", model, env_extra=env)
    printed = result.stdout + result.stderr
    assert result.returncode != 0 and "127.0.0.1:1" in printed
    assert SECRET not in printed, printed[-800:]


@pytest.mark.parametrize("scheme", ["postgresql+psycopg2", "postgresql+asyncpg", "mysql"])
def test_another_drivers_url_is_refused_without_its_secret(scheme, tmp_path):
    """Issue 50 D4: a URL of a driver rolecall does not use, given for the cache or the
    database, is refused; its password is not in the message."""
    url = f"{scheme}://ann:{SECRET}@127.0.0.1:1/rolecall"
    env = {"ROLECALL_HOME": str(tmp_path)}
    for args in (
        ("logs", "--cache", url),
        ("llm", "complete", "x", "-m", "fake:a", "--cache", url),
        ("web", "add-user", "ann", "--db", url, "--password-stdin"),
    ):
        result = run_cli(*args, input="pw\n", env_extra=env)
        printed = result.stdout + result.stderr
        assert result.returncode != 0 and "Traceback" not in printed, printed[-800:]
        assert SECRET not in printed, (args, printed[-800:])


def test_doctor_masks_the_default_model_from_the_environment(tmp_path):
    """Issue 50 D6: ROLECALL_MODEL may carry a key."""
    model = f"openai:http://127.0.0.1:1/v1?model=m&api_key={SECRET}"
    env = {"ROLECALL_HOME": str(tmp_path), "ROLECALL_MODEL": model}
    result = run_cli("doctor", "--no-check", env_extra=env)
    assert result.returncode == 0 and "api_key=***" in result.stdout
    assert SECRET not in result.stdout + result.stderr
