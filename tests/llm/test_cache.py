import sqlite3
import time

import pytest

from rolecall.errors import InputFileError
from rolecall.llm import Cache, Completion, Message, Request, SamplingParams
from rolecall.llm.cache import cache_key

BASE = Request(prompt="안녕하세요", params=SamplingParams(temperature=0.5, top_p=0.8, seed=1))


@pytest.mark.parametrize(
    "other",
    [
        Request(prompt="안녕하세요!", params=BASE.params),
        Request(prompt="안녕하세요", params=SamplingParams(temperature=0.6, top_p=0.8, seed=1)),
        Request(prompt="안녕하세요", params=SamplingParams(temperature=0.5, top_p=0.9, seed=1)),
        Request(prompt="안녕하세요", params=SamplingParams(temperature=0.5, top_p=0.8, seed=2)),
        Request(
            prompt="안녕하세요",
            params=SamplingParams(temperature=0.5, top_p=0.8, seed=1, stop=("\n",)),
        ),
        Request(
            prompt="안녕하세요",
            params=SamplingParams(temperature=0.5, top_p=0.8, seed=1, max_tokens=12),
        ),
        Request(
            prompt="안녕하세요",
            params=SamplingParams(temperature=0.5, top_p=0.8, seed=1, logprobs=2),
        ),
        Request(messages=(Message(role="user", content="안녕하세요"),), params=BASE.params),
        Request(prompt="안녕하세요", score_text="반갑습니다", params=BASE.params),
    ],
)
def test_every_part_of_a_request_changes_the_key(other):
    assert cache_key("x", "m", BASE, 0) != cache_key("x", "m", other, 0)


def test_backend_model_and_sample_index_change_the_key():
    key = cache_key("x", "m", BASE, 0)
    assert key == cache_key("x", "m", BASE, 0)
    assert (
        len(
            {
                key,
                cache_key("y", "m", BASE, 0),
                cache_key("x", "n", BASE, 0),
                cache_key("x", "m", BASE, 1),
            }
        )
        == 4
    )


def test_entries_persist_across_handles(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = Cache(path)
    cache.put("k", "x", "m", BASE, 0, Completion(text="네, 안녕하세요", tokens_out=3))
    cache.close()
    again = Cache(path)
    assert again.get("k").text == "네, 안녕하세요" and len(again) == 1
    assert again.get("missing") is None


def test_a_file_that_is_not_a_cache_is_a_clear_error(tmp_path):
    bad = tmp_path / "c.sqlite"
    bad.write_text("this is not sqlite" * 100)
    with pytest.raises(InputFileError) as info:
        Cache(bad)
    assert str(bad) in str(info.value) and "ROLECALL_CACHE" in info.value.fix


def test_each_stored_call_keeps_the_time_it_was_stored(tmp_path):
    # 'rolecall logs' shows this time; the column has been in every cache file made so far
    cache = Cache(tmp_path / "c.sqlite")
    before = time.time()
    cache.put("k", "x", "m", BASE, 0, Completion(text="네"))
    after = time.time()
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        stored = db.execute("SELECT created FROM calls WHERE key = 'k'").fetchone()[0]
    assert before <= stored <= after


def test_a_postgres_cache_url_is_shown_without_its_password():
    from rolecall.llm.cache import shown

    assert shown("postgresql://ann:s3cret@db:5432/calls") == "postgresql://ann:***@db:5432/calls"
    assert shown("postgresql://ann@db/calls") == "postgresql://ann@db/calls"
    assert shown("/tmp/calls.sqlite") == "/tmp/calls.sqlite"


def test_a_busy_switch_to_wal_mode_is_tried_again():
    """Ray workers open the run's cache together; SQLite can refuse the switch of a new
    file to WAL mode as "database is locked" without waiting its timeout (seen in CI on
    the Ray dialogue test). The switch is tried again; another error is not hidden."""
    import sqlite3

    from rolecall.llm.cache import _write_ahead_log

    class Busy:
        def __init__(self, refusals: int, error: str = "database is locked"):
            self.refusals, self.error, self.statements = refusals, error, []

        def execute(self, statement):
            self.statements.append(statement)
            if self.refusals:
                self.refusals -= 1
                raise sqlite3.OperationalError(self.error)
            mode = "wal" if statement == "PRAGMA journal_mode=WAL" else "delete"
            return type("Row", (), {"fetchone": lambda _: [mode]})()

    db = Busy(refusals=3)
    _write_ahead_log(db)
    assert db.statements[-1] == "PRAGMA journal_mode=WAL" and len(db.statements) == 5
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        _write_ahead_log(Busy(refusals=1, error="disk I/O error"))
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _write_ahead_log(Busy(refusals=10), tries=3)
