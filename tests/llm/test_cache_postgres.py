"""The LLM call cache on a real PostgreSQL server (tests/postgres.py starts one), and
``open_cache`` choosing between it and the SQLite file."""

from __future__ import annotations

import json
import sys
import threading
import uuid

import pytest
from typer.testing import CliRunner

from rolecall.cli.app import app
from rolecall.errors import ConfigError, RolecallError
from rolecall.llm import Cache, Completion, Request, SamplingParams
from rolecall.llm.cache import cache_key, open_cache
from tests.postgres import _admin, _with_database, free_port

REQUEST = Request(prompt="안녕하세요", params=SamplingParams(temperature=0.5, seed=1))


@pytest.fixture
def cache_url(postgres_url):
    """A new, empty database on the test server, as a bare ``postgresql://`` URL (the form
    a user types; the cache picks the psycopg 3 driver itself)."""
    name = f"c_{uuid.uuid4().hex[:12]}"
    _admin(postgres_url, f"CREATE DATABASE {name}")
    try:
        yield _with_database(postgres_url, name).replace("postgresql+psycopg://", "postgresql://")
    finally:
        _admin(postgres_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def put(cache, key: str, text: str, sample: int = 0) -> None:
    cache.put(key, "fake", "m", REQUEST, sample, Completion(text=text, tokens_out=2))


def test_open_cache_picks_sqlite_for_a_path_and_refuses_other_urls(tmp_path):
    cache = open_cache(tmp_path / "c.sqlite")
    assert isinstance(cache, Cache)
    cache.close()
    assert isinstance(open_cache(str(tmp_path / "d.sqlite")), Cache)
    with pytest.raises(ConfigError, match="mysql://") as caught:
        open_cache("mysql://u@h/db")
    assert "postgresql://" in caught.value.fix


@pytest.mark.postgres
def test_entries_round_trip_and_persist_across_handles(cache_url):
    from rolecall.llm.cache_postgres import PostgresCache

    cache = open_cache(cache_url)
    assert isinstance(cache, PostgresCache)
    key = cache_key("fake", "m", REQUEST, 0)
    assert cache.get(key) is None and len(cache) == 0
    put(cache, key, "네, 안녕하세요 😊")
    put(cache, "other", "둘째")
    assert len(cache) == 2
    cache.close()

    again = open_cache(cache_url.replace("postgresql://", "postgresql+psycopg://"))
    assert again.get(key) == Completion(text="네, 안녕하세요 😊", tokens_out=2)
    assert again.get("missing") is None
    again.close()


@pytest.mark.postgres
def test_concurrent_puts_of_the_same_key_keep_the_first_and_raise_nothing(cache_url):
    caches = [open_cache(cache_url), open_cache(cache_url)]  # two actors, as on a cluster
    start = threading.Barrier(16)
    errors = []

    def worker(i: int) -> None:
        start.wait()
        try:
            for round_ in range(20):
                put(caches[i % 2], "same", f"answer {i}")
                put(caches[i % 2], f"k{i}-{round_}", "own")
        except Exception as exc:  # noqa: BLE001  collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(caches[0]) == 1 + 16 * 20
    # one answer stored, the same for every reader: the first insert wins
    assert caches[0].get("same") == caches[1].get("same")
    assert caches[0].get("same").text.startswith("answer ")
    for cache in caches:
        cache.close()


@pytest.mark.postgres
def test_a_dropped_connection_is_replaced_not_failed(cache_url):
    from sqlalchemy import create_engine, text

    cache = open_cache(cache_url)
    put(cache, "k", "v")
    admin = create_engine(cache_url.replace("postgresql://", "postgresql+psycopg://"))
    with admin.begin() as conn:  # what a server restart or an idle timeout does
        ended = conn.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid != pg_backend_pid()"
            )
        ).scalar_one()
    admin.dispose()
    assert ended >= 1
    assert cache.get("k").text == "v"
    cache.close()


def test_a_server_that_does_not_answer_is_a_clear_error():
    url = f"postgresql://rolecall@127.0.0.1:{free_port()}/rolecall"  # nothing listens there
    pytest.importorskip("psycopg")
    with pytest.raises(RolecallError, match="cannot open the PostgreSQL cache") as caught:
        open_cache(url)
    assert "start the PostgreSQL server" in caught.value.fix


def test_a_url_without_a_database_or_malformed_is_a_config_error():
    with pytest.raises(ConfigError, match="names no database"):
        open_cache("postgresql://rolecall@127.0.0.1:5432")
    with pytest.raises(ConfigError, match="malformed"):
        open_cache("postgresql://u@h:port/db")


def test_missing_psycopg_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now raises
    with pytest.raises(RolecallError, match="psycopg is not installed") as caught:
        open_cache("postgresql://rolecall@127.0.0.1:5432/rolecall")
    assert "rolecall[postgres]" in caught.value.fix


@pytest.mark.postgres
def test_another_programs_calls_table_is_refused(cache_url):
    from sqlalchemy import create_engine, text

    admin = create_engine(cache_url.replace("postgresql://", "postgresql+psycopg://"))
    with admin.begin() as conn:
        conn.execute(text("CREATE TABLE calls (id INTEGER PRIMARY KEY, who TEXT)"))
    admin.dispose()
    with pytest.raises(ConfigError, match="not a rolecall LLM cache"):
        open_cache(cache_url)


def invoke(*args: str, env: dict | None = None):
    result = CliRunner().invoke(app, list(args), env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.mark.postgres
@pytest.mark.parametrize("given", ["option", "environment"])
def test_llm_batch_and_logs_keep_a_cache_url_whole(cache_url, tmp_path, given):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        "".join(json.dumps({"id": f"p{i}", "prompt": f"{i}번: 안녕"}) + "\n" for i in range(6)),
        encoding="utf-8",
    )
    password_url = cache_url.replace("rolecall@", "rolecall:secret@")  # trust auth ignores it
    where = ["--cache", password_url] if given == "option" else []
    env = {"ROLECALL_CACHE": password_url} if given == "environment" else None
    args = ["llm", "batch", str(prompts), "-m", "fake:a", "--no-progress", *where]

    first = invoke(*args, "--out", str(tmp_path / "one.jsonl"), env=env)
    assert first.exit_code == 0, first.output
    cache = open_cache(cache_url)
    assert len(cache) == 6  # the calls are on the server, not in a file named postgresql:
    cache.close()
    assert not list(tmp_path.glob("postgresql*")) and not list(tmp_path.parent.glob("postgres*"))
    second = invoke(*args, "--out", str(tmp_path / "two.jsonl"), env=env)
    assert second.exit_code == 0, second.output
    assert (tmp_path / "two.jsonl").read_text() == (tmp_path / "one.jsonl").read_text()
    assert "0 calls, 6 cache hits" in second.output

    listed = invoke("logs", "-n", "0", "--json", *where, env=env)
    assert listed.exit_code == 0, listed.output
    calls = json.loads(listed.stdout)
    assert sorted(c["prompt"] for c in calls) == sorted(f"{i}번: 안녕" for i in range(6))
    assert all(c["backend"] == "fake" for c in calls)
    one = invoke("logs", calls[0]["id"][:10], "--json", *where, env=env)
    assert json.loads(one.stdout)["id"] == calls[0]["id"]
    found = invoke("logs", "--json", "-q", "3번", *where, env=env)
    assert [c["prompt"] for c in json.loads(found.stdout)] == ["3번: 안녕"]
    shown = invoke("logs", "--path", *where, env=env)
    assert "secret" not in shown.output and "***@127.0.0.1" in shown.output


@pytest.mark.postgres
def test_logs_on_a_database_without_a_cache_says_so(cache_url):
    with pytest.raises(ConfigError, match="holds no LLM cache"):
        invoke("logs", "--cache", cache_url)
