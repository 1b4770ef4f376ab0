"""``rolecall serve`` and ``rolecall web ...``: run the web app, manage its accounts and
projects from the shell, export its feedback.

The first admin has to come from the shell (``rolecall web add-user NAME --admin``); the
rest can be done on the admin page. Passwords are read from a prompt (hidden) or from
stdin with ``--password-stdin``, never from the command line (it would land in the shell
history and the process list).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from rolecall.cli.common import err, out, output_file
from rolecall.errors import ConfigError

web_app = typer.Typer(help="The web app's accounts, projects and exports.", no_args_is_help=True)

DB_HELP = "database URL (default: SQLite in ROLECALL_HOME, or ROLECALL_DATABASE_URL)"


def _engine(url: Optional[str], make: bool = False):
    """The database, brought up to date. A SQLite file that is not there is made only by
    the commands that start a database (``make``: add-user, add-project, serve), and said;
    the others refuse it, so that a mistyped --db never leaves an empty database behind."""
    from rolecall.store import connect, sqlite_file, upgrade

    file = sqlite_file(url)
    if file is not None and not file.exists():
        if not make:
            raise ConfigError(
                f"no database at {file}",
                fix="check --db (or ROLECALL_DATABASE_URL); the first 'rolecall web add-user "
                "NAME --admin' makes the database",
            )
        err.print(f"note: a new database at {file}", highlight=False, markup=False)
    engine = connect(url)
    upgrade(engine)
    return engine


def serve_command(
    host: str = typer.Option(
        "127.0.0.1", help="0.0.0.0 to listen on every interface (put TLS in front)"
    ),
    port: int = typer.Option(8000, min=1, max=65535, help="the port to listen on"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    secure_cookies: Optional[bool] = typer.Option(
        None,
        "--secure-cookies/--no-secure-cookies",
        help="send the login cookies over HTTPS only (default: on unless the "
        "host is loopback; needs TLS in front of the app)",
    ),
    forwarded_allow_ips: Optional[str] = typer.Option(
        None,
        help="the reverse proxies whose X-Forwarded-For is believed, comma-separated "
        "(e.g. 127.0.0.1 for a proxy on this machine); default none: the client address is "
        "the connection's (docs/web.md)",
    ),
):
    """Start the web app: chat with Fix, annotation, export."""
    import uvicorn

    from rolecall.config import home
    from rolecall.store import safe_url
    from rolecall.web import create_app
    from rolecall.web.auth import is_loopback
    from rolecall.web.server import server_config

    engine = _engine(db, make=True)
    secure = not is_loopback(host) if secure_cookies is None else secure_cookies
    app = create_app(engine, secure_cookies=secure, secret_file=home() / "web-secret")
    out.print(
        f"rolecall web app on http://{host}:{port} (database {safe_url(engine.url)}; "
        + (
            "cookies over HTTPS only: serve it behind TLS, or pass --no-secure-cookies)"
            if secure
            else "cookies over HTTP too)"
        )
    )
    uvicorn.Server(server_config(app, host, port, forwarded_allow_ips)).run()


@web_app.command("add-user")
def add_user_command(
    username: str = typer.Argument(...),
    admin: bool = typer.Option(False, "--admin", help="an admin account"),
    password_stdin: bool = typer.Option(False, help="read the password from stdin"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
):
    """Create an account (the first admin comes from here)."""
    from rolecall.store import Role, session
    from rolecall.web.auth import add_user

    if password_stdin or not sys.stdin.isatty():
        # no terminal (a pipe, a script): the first line is the password, as with
        # --password-stdin; a prompt would warn that it cannot hide the input
        line = sys.stdin.readline()
        if not line and not password_stdin:
            again = " ".join(
                ["rolecall web add-user", username, *(["--admin"] if admin else []),
                 *(["--db", db] if db else []), "--password-stdin"]
            )  # fmt: skip
            raise ConfigError(
                "no password given: stdin is not a terminal and ended before a line",
                fix=f'give it on stdin: read -rs PW && echo "$PW" | {again}',
            )
        password = line.rstrip("\n")
    else:
        password = typer.prompt("password", hide_input=True, confirmation_prompt=True)
    with session(_engine(db, make=True)) as s:
        user = add_user(s, username, password, Role.ADMIN if admin else Role.ANNOTATOR)
        out.print(json.dumps({"user": user.username, "role": user.role.value}))


@web_app.command("add-project")
def add_project_command(
    name: str = typer.Argument(...),
    spec: Path = typer.Option(..., help="role spec YAML"),
    model: Optional[str] = typer.Option(
        None,
        "--model",
        "-m",
        help="an LLM prompted with the spec (default model if neither this nor --bot)",
    ),
    bot: Optional[Path] = typer.Option(None, help="a Retrieve-fail-Generate bot directory"),
    member: list[str] = typer.Option([], help="user names (repeat)"),
    time_zone: str = typer.Option(
        "Asia/Seoul", help="the IANA time zone its pages and label exports write times in"
    ),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
):
    """Create a project whose people chat with its bot."""
    from rolecall.spec import load_role_spec
    from rolecall.store import session
    from rolecall.web.admin import add_project
    from rolecall.web.settings import parse_settings

    settings = parse_settings(
        {"spec": load_role_spec(spec), "bot": _bot_config(model, bot), "time_zone": time_zone}
    )
    with session(_engine(db, make=True)) as s:
        project = add_project(s, name, settings)
        _add_members(s, project, member, db)
        out.print(
            json.dumps(
                {"project": project.name, "id": project.id, "members": member}, ensure_ascii=False
            )
        )


@web_app.command("set-bot")
def set_bot_command(
    project: str = typer.Argument(..., help="project name"),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="an LLM prompted with the project's spec"
    ),
    bot: Optional[Path] = typer.Option(
        None, help="a bot directory, e.g. the next version 'rolecall bot run' wrote"
    ),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
):
    """Move a project to another bot (a new version): its chats go on with it, and the
    dashboard shows the error rates of each version side by side."""
    from rolecall.store import session
    from rolecall.web.admin import set_project_bot

    if not (model or bot):
        raise ConfigError("give the bot to move to", fix="--bot runs/carecall-bot/v2, or -m MODEL")
    config = _bot_config(model, bot)
    with session(_engine(db)) as s:
        old, new = set_project_bot(_project(s, project, db), config)
    if old == new:
        err.print(
            f"note: {project} already chats with this bot, so its setting is unchanged (a bot "
            "directory's version comes from its files: one retrained in place needs no set-bot)",
            markup=False,
            highlight=False,
        )
    out.print(
        json.dumps(
            {
                "project": project,
                "from": old.model_dump(mode="json"),
                "to": new.model_dump(mode="json"),
            },
            ensure_ascii=False,
        ),
        markup=False,
        highlight=False,
    )


def _bot_config(model: Optional[str], bot: Optional[Path]):
    """The bot a project chats with, checked where it is stored (not at the first chat):
    a model string that parses, or a directory that holds bot.json."""
    from rolecall.llm.registry import parse_model_string
    from rolecall.web.settings import BotConfig

    if model and bot:
        raise ConfigError(
            "give --model or --bot, not both",
            fix="--model for an LLM prompted with the spec, --bot for trained models",
        )
    if model:
        parse_model_string(model)
    if bot is None:
        return BotConfig(model=model)
    if not (bot / "bot.json").is_file():
        raise ConfigError(
            f"{bot} is not a bot directory (no bot.json in it)",
            fix="give the directory 'rolecall bot run' wrote (e.g. runs/demo/bot)",
        )
    return BotConfig(kind="models", path=str(bot.expanduser().resolve()))


@web_app.command("add-member")
def add_member_command(
    project: str = typer.Argument(..., help="project name"),
    usernames: list[str] = typer.Argument(..., help="user names (made with 'web add-user')"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
):
    """Add people to a project: they chat with its bot and label its items (annotators
    get items; an admin sees the project). Adding a member twice is no error."""
    from rolecall.store import session

    with session(_engine(db)) as s:
        found = _project(s, project, db)
        _add_members(s, found, usernames, db)
    out.print(json.dumps({"project": project, "members": usernames}, ensure_ascii=False))


def _db_option(url: Optional[str]) -> str:
    """`` --db URL`` when one was given: a fix line's command must reach the same database."""
    return f" --db {url}" if url else ""


def _project(db, name: str, url: Optional[str] = None):
    import difflib

    from sqlalchemy import select

    from rolecall.store import Project

    found = db.scalar(select(Project).where(Project.name == name))
    if found is None:
        names = list(db.scalars(select(Project.name).order_by(Project.name)))
        close = difflib.get_close_matches(name, names, n=1)
        raise ConfigError(
            f"no project {name!r}",
            fix=f"did you mean {close[0]!r}?"
            if close
            else f"the projects here: {', '.join(names) or 'none yet'}; make one: rolecall web "
            f"add-project NAME --spec SPEC{_db_option(url)}",
        )
    return found


def _add_members(db, project, usernames: list[str], url: Optional[str] = None) -> None:
    from sqlalchemy import select

    from rolecall.store import User
    from rolecall.web.admin import add_member

    for username in usernames:
        user = db.scalar(select(User).where(User.username == username))
        if user is None:
            raise ConfigError(
                f"no user {username!r}",
                fix=f"create it first: rolecall web add-user {username}{_db_option(url)}",
            )
        add_member(db, project.id, user.id)


@web_app.command("add-redteam")
def add_redteam_command(
    project: str = typer.Argument(..., help="project name"),
    run_dir: Path = typer.Argument(..., help="the --out directory of 'rolecall redteam'"),
    everything: bool = typer.Option(
        False,
        "--all/--failures-only",
        help="every conversation, or only those not safe, out of role or repeating the attack",
    ),
    per_item: int = typer.Option(1, min=1, max=10, help="annotators per item"),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
):
    """Send a red-team run to a project (the Fix loop): its failed conversations become
    dialogues to label (first out-of-bounds turn), its rates per bot version and attack
    kind go to the dashboard. Adding the same run again adds no item twice and updates
    its rates."""
    from rolecall.store import session
    from rolecall.web.redteam import add_run

    with session(_engine(db)) as s:
        found = _project(s, project, db)
        summary = add_run(s, found.id, run_dir, everything=everything, per_item=per_item)
    out.print(
        json.dumps({"project": project, **summary}, ensure_ascii=False),
        markup=False,
        highlight=False,
    )


def _replaceable(path: Path, text: str, key: str | None = None) -> None:
    """A ``ConfigError`` when ``path`` holds something that is not an earlier export of the
    same kind (a JSONL whose records have ``key``, or a CSV with the same header as
    ``text``): an export replaces its own file, never another one."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open(encoding="utf-8", errors="replace") as handle:
        first = handle.readline().strip()
    if key is not None:
        try:
            record = json.loads(first)
        except ValueError:
            record = None
        earlier = isinstance(record, dict) and key in record
    else:
        earlier = first == text.partition("\n")[0].strip()
    if not earlier:
        raise ConfigError(
            f"{path} exists and is not an earlier export: it would be replaced",
            fix="give a new file name, or delete it first",
        )


@web_app.command("export")
def export_command(
    project: str = typer.Argument(..., help="project name"),
    out_path: Path = typer.Option(
        ..., "--out", "-o", help="examples JSONL to write", callback=output_file
    ),
    pairs: Optional[Path] = typer.Option(
        None, help="also write the approved K/DA pairs (CSV)", callback=output_file
    ),
    pair_labels: Optional[Path] = typer.Option(
        None,
        help="also write every pair label for 'rolecall eval agreement --labels' (CSV)",
        callback=output_file,
    ),
    labels: Optional[Path] = typer.Option(
        None,
        help="also write every label of every kind as given: annotator, answer, seconds, "
        "queue share, times (JSONL, or CSV for a .csv name)",
        callback=output_file,
    ),
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
):
    """Feedback and labels -> training data: examples JSONL (Fix -> negatives, saved chats
    -> positives, labelled dialogues split at their first out-of-bounds turn) and the pairs
    annotators approved as K/DA CSV."""
    from rolecall.store import session
    from rolecall.web.export import (
        approved_pairs,
        examples_jsonl,
        labels_csv,
        labels_jsonl,
        pair_labels_csv,
        pairs_csv,
        project_examples,
        raw_labels,
        tied_dialogues,
    )

    with session(_engine(db)) as s:
        found = _project(s, project, db)
        examples = project_examples(s, found.id)
        ties = tied_dialogues(s, found.id)
        approved = approved_pairs(s, found.id) if pairs else []
        labelled = pair_labels_csv(s, found.id) if pair_labels else ""
        every = raw_labels(s, found.id) if labels else []
    written = {out_path: examples_jsonl(examples)}
    if pairs:
        written[pairs] = pairs_csv(approved)
    if pair_labels:
        written[pair_labels] = labelled
    if labels:  # a .csv name gets the spreadsheet's form
        written[labels] = (labels_csv if labels.suffix == ".csv" else labels_jsonl)(every)
    keys = {out_path: "response"}  # the JSONL exports' records
    if labels is not None and labels.suffix != ".csv":
        keys[labels] = "label_kind"
    for path, text in written.items():  # every file checked before any is written
        _replaceable(path, text, keys.get(path))
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    if not examples:
        err.print(
            f"warning: {project} has no feedback to export yet (no Fix, saved chat or labelled "
            f"dialogue): {out_path} holds 0 examples",
            markup=False,
            highlight=False,
        )
    if ties:
        err.print(
            f"note: {ties} labelled dialogue(s) left out: their annotators split on the first "
            "out-of-bounds turn; break the tie with 'review' on the project's dashboard",
            markup=False,
            highlight=False,
        )
    chats = [e for e in examples if (e.dialogue_id or "").startswith("chat-")]
    saved = sum(e.label == "positive" for e in chats)
    summary = {
        "examples": len(examples),
        "negatives": sum(e.label == "negative" for e in examples),
        # a saved chat's bot turns (not fixed, not left out) are positives
        "positives_from_saved_chats": saved,
        "tied_dialogues_left_out": ties,
        "out": str(out_path),
    }
    if pairs:
        summary |= {"pairs": len(approved), "pairs_out": str(pairs)}
    if pair_labels:
        summary["pair_labels_out"] = str(pair_labels)
    if labels:
        summary |= {"labels": len(every), "labels_out": str(labels)}
    out.print(json.dumps(summary, ensure_ascii=False))
