"""``rolecall logs``: browse the LLM call cache, the way ``llm logs`` does.

Every call a command makes through a model is kept in the cache
(``rolecall.llm.cache``, default ``ROLECALL_HOME/llm-cache.sqlite`` or ``ROLECALL_CACHE``, a
SQLite file or a PostgreSQL URL):
the backend and model, the request (prompt or messages, the scored text, every sampling
parameter), the completion and the time it was stored. This command reads that table and
never writes to it: the newest calls first, filtered by model and by text, as a short list,
as full JSON records, or one call whole by its id (the first characters of its cache key).
Failed calls are never cached, so they are not here.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from rolecall import config
from rolecall.cli.common import err, out
from rolecall.errors import InputFileError, RolecallError
from rolecall.llm.cache import is_postgres_url, refuse_other_url, shown

ID_LENGTH = 12  # characters of the cache key shown; any unique prefix finds a call
EXCERPT = 100


def open_cache(path: str | Path):
    """The cache, read-only: a ``sqlite3`` connection to the file, or a psycopg one for a
    ``postgresql://`` URL; InputFileError / RolecallError with the fix when it cannot be
    read."""
    from rolecall.llm.cache_postgres import connect_readonly

    if is_postgres_url(path):
        return connect_readonly(str(path))
    refuse_other_url(path)  # another driver's URL: refused as the cache itself refuses it
    path = Path(path)
    if not path.is_file():
        raise InputFileError(
            path,
            "no LLM cache here",
            fix="pass --cache PATH (or set ROLECALL_CACHE); the cache is "
            "made by the first command that calls a model",
        )
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        db.execute(
            "SELECT key, backend, model, sample_index, request, completion, created "
            "FROM calls LIMIT 0"
        )
    except sqlite3.DatabaseError as exc:
        raise InputFileError(
            path,
            f"is not a rolecall LLM cache ({exc})",
            fix="point --cache (or ROLECALL_CACHE) at the cache file",
        ) from None
    return db


def record(row: tuple) -> dict:
    """One cache row as a full record: id, time, backend, model, sample, request, output."""
    key, backend, model, sample_index, request, completion, created = row
    request, completion = json.loads(request), json.loads(completion)
    return {
        "id": key,
        "time": datetime.fromtimestamp(created, timezone.utc).isoformat(timespec="seconds"),
        "backend": backend,
        "model": model,
        "sample_index": sample_index,
        "prompt": request.get("prompt"),
        "messages": request.get("messages"),
        "score_text": request.get("score_text"),
        "params": request.get("params", {}),
        "output": completion.get("text", ""),
        **{k: v for k, v in completion.items() if k != "text"},
    }


def prompt_text(call: dict) -> str:
    """The prompt as one text: the plain prompt, or the messages as ``role: content``."""
    if call["prompt"] is not None:
        return call["prompt"]
    return "\n".join(f"{m['role']}: {m['content']}" for m in call["messages"] or [])


def _matches(call: dict, query: str) -> bool:
    texts = (prompt_text(call), call["score_text"] or "", call["output"])
    return any(query.casefold() in text.casefold() for text in texts)


def _like(text: str) -> str:
    """A LIKE pattern for ``text`` inside a JSON string: escaped as JSON, then for LIKE."""
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    return "%" + escaped.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _execute(db, sql: str, values=()):
    """``db.execute`` with sqlite3's ``?`` placeholders, also on a psycopg connection."""
    if not isinstance(db, sqlite3.Connection):
        sql = sql.replace("?", "%s")  # subtle: the SQL itself holds no other ? or %
    return db.execute(sql, values)


def read_calls(
    db, count: int = 10, model: str | None = None, query: str | None = None
) -> list[dict]:
    """The newest ``count`` calls (0 = all) whose ``backend:model`` contains ``model`` and
    whose prompt, messages, scored text or output contain ``query`` (case-insensitive)."""
    where, values = [], []
    if model:
        where.append("(backend || ':' || model) LIKE ? ESCAPE '\\'")
        values.append(_like(model))
    if query:
        # subtle: a cheap pre-filter on the stored JSON (it also matches parameter names);
        # _matches then looks at the texts themselves
        where.append("(request LIKE ? ESCAPE '\\' OR completion LIKE ? ESCAPE '\\')")
        values += [_like(query)] * 2
    sql = (
        "SELECT key, backend, model, sample_index, request, completion, created FROM calls"
        + (" WHERE " + " AND ".join(where) if where else "")
        # PostgreSQL has no rowid; there the key breaks a tie of the same microsecond
        + (
            " ORDER BY created DESC, rowid DESC"
            if isinstance(db, sqlite3.Connection)
            else " ORDER BY created DESC, key DESC"
        )
    )
    calls = []
    for row in _execute(db, sql, values):
        call = record(row)
        if query and not _matches(call, query):
            continue
        calls.append(call)
        if count and len(calls) == count:
            break
    return calls


def find_call(db, call_id: str) -> dict:
    """The one call whose id starts with ``call_id``; RolecallError when none or several."""
    prefix = call_id.strip().lower()
    if not prefix or any(c not in "0123456789abcdef" for c in prefix):
        raise RolecallError(
            f"{call_id!r} is not a call id", fix="ids are hexadecimal; 'rolecall logs' lists them"
        )
    rows = _execute(
        db,
        "SELECT key, backend, model, sample_index, request, completion, created "
        "FROM calls WHERE key LIKE ? LIMIT 2",
        (prefix + "%",),
    ).fetchall()
    if not rows:
        raise RolecallError(
            f"no call with id {prefix} in this cache",
            fix="'rolecall logs' lists the ids (check --cache too)",
        )
    if len(rows) > 1:
        raise RolecallError(
            f"more than one call has an id starting with {prefix}",
            fix="give more characters of the id",
        )
    return record(rows[0])


def excerpt(text: str, length: int = EXCERPT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= length else flat[: length - 1] + "…"


def _header(call: dict) -> str:
    when = call["time"].replace("T", " ").replace("+00:00", " UTC")
    return (
        f"{call['id'][:ID_LENGTH]}  {when}  {call['backend']}:{call['model']}"
        f"  sample {call['sample_index']}"
    )


def _print(text: str = "") -> None:
    out.print(text, markup=False, highlight=False)


def print_list(calls: list[dict]) -> None:
    for call in calls:
        _print(_header(call))
        _print(f"  prompt: {excerpt(prompt_text(call))}")
        if call["score_text"] is not None:
            _print(f"  scored: {excerpt(call['score_text'])}")
        else:
            _print(f"  output: {excerpt(call['output'])}")


def print_whole(call: dict) -> None:
    _print(_header(call))
    params = {k: v for k, v in call["params"].items() if v not in (None, [], ())}
    _print("params: " + json.dumps(params, ensure_ascii=False))
    _print(
        f"tokens in {call.get('tokens_in', 0)}, out {call.get('tokens_out', 0)}; "
        f"finish reason {call.get('finish_reason')}"
    )
    if call["messages"] is not None:
        for message in call["messages"]:
            _print(f"\n## {message['role']}\n{message['content']}")
    else:
        _print(f"\n## prompt\n{call['prompt']}")
    if call["score_text"] is not None:
        _print(f"\n## scored text\n{call['score_text']}")
    else:
        _print(f"\n## output\n{call['output']}")


def logs_command(
    call_id: Optional[str] = typer.Argument(
        None, help="show this call whole (its id from the list; the first characters are enough)"
    ),
    count: int = typer.Option(
        10, "--count", "-n", min=0, help="how many calls, newest first (0 = all)"
    ),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="only calls whose 'backend:model' contains this"
    ),
    query: Optional[str] = typer.Option(
        None, "--query", "-q", help="only calls whose prompt or output contains this text"
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="full records as JSON: prompt or messages, parameters, output, tokens, logprobs, time",
    ),
    cache: Optional[str] = typer.Option(
        None,
        "--cache",
        help="the cache file or postgresql:// URL "
        "(default: ROLECALL_CACHE or ROLECALL_HOME/llm-cache.sqlite)",
    ),
    path: bool = typer.Option(False, "--path", help="print the cache file's path and stop"),
):
    """Browse the LLM call cache: what each model was asked and answered, and when."""
    cache = cache or config.cache_path()
    cache_name = shown(cache)  # never print a URL's password
    if path:
        _print(cache_name)
        return
    db = open_cache(cache)
    try:
        if call_id is not None:
            call = find_call(db, call_id)
            if as_json:
                out.print_json(json.dumps(call, ensure_ascii=False))
            else:
                print_whole(call)
            return
        calls = read_calls(db, count, model, query)
        total = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    finally:
        db.close()
    if as_json:
        out.print_json(json.dumps(calls, ensure_ascii=False))
        return
    print_list(calls)
    err.print(
        f"[dim]{len(calls)} of {total} cached calls in {escape(cache_name)}[/dim]", highlight=False
    )
