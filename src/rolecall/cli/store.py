"""``rolecall db``, ``records``, ``spec``: the database and the files a run reads."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional, get_args

import typer

from rolecall.cli.common import EMPTY_FIX, out

db_app = typer.Typer(help="The feedback and annotation database.", no_args_is_help=True)
records_app = typer.Typer(help="Check record files (JSONL).", no_args_is_help=True)
spec_app = typer.Typer(help="Role specifications (YAML).", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(
    url: Optional[str] = typer.Option(
        None,
        "--db",
        "--url",
        help="database URL (default: SQLite in ROLECALL_HOME, or ROLECALL_DATABASE_URL)",
    ),
):
    """Create or migrate the database to the latest schema."""
    from rolecall.store.db import db_upgrade_command

    out.print(db_upgrade_command(url))


RecordType = Literal["example", "dialogue", "pair", "verdict", "turn"]


def reads_as(path: Path, line: int, kind: str) -> str | None:
    """The record type (other than ``kind``) that line ``line`` of ``path`` is valid as."""
    import json

    from pydantic import ValidationError

    from rolecall import records

    try:
        text = path.read_text(encoding="utf-8-sig").splitlines()[line - 1]
        data = json.loads(text)
    except (OSError, ValueError, IndexError):
        return None
    for other in get_args(RecordType):
        if other == kind:
            continue
        try:
            getattr(records, other.capitalize()).model_validate(data)
        except ValidationError:
            continue
        return other
    return None


@records_app.command("check")
def records_check(
    path: Path,
    kind: RecordType = typer.Option(..., "--as", help="the record type every line must be"),
):
    """Validate every line of a JSONL file as one record type."""
    from rolecall import records
    from rolecall.errors import InputFileError
    from rolecall.jsonl import read_jsonl

    model = getattr(records, kind.capitalize())
    try:
        if kind == "dialogue" and path.suffix == ".json":  # a CareCall file, as stats reads it
            from rolecall.pipelines.dialogues import read_dialogues

            count = len(read_dialogues(path))
        else:
            count = sum(1 for _ in read_jsonl(path, model))
    except InputFileError as exc:
        other = reads_as(path, exc.line, kind) if exc.line else None
        if other is None:
            raise
        exc.fix = f"the line is a valid {other} record: --as {other}"
        raise
    if not count:  # an empty file is no data set, whatever its lines would have been
        raise InputFileError(path, "holds no record (it is empty)", fix=EMPTY_FIX)
    out.print(f"{path}: {count} valid {model.__name__} records")


@spec_app.command("check")
def spec_check(path: Path):
    """Validate a role specification and summarise it."""
    from rolecall.spec import load_role_spec

    spec = load_role_spec(path)
    out.print(
        f"{path}: role '{spec.name}' ({spec.language}), {len(spec.categories)} "
        f"categories -> error categories: {', '.join(spec.error_categories)}"
    )
    if spec.user_checks:
        kinds: dict[str, list[str]] = {}
        for check in spec.user_checks:
            kinds.setdefault(check.kind, []).append(check.name)
        out.print(
            f"{len(spec.user_checks)} user-turn checks: "
            + "; ".join(f"{kind} {', '.join(names)}" for kind, names in kinds.items())
            + f"; help lines {', '.join(spec.help_lines) or 'none'}",
            highlight=False,
        )
    else:
        out.print(
            "no user_checks: the bot will not read the user's turn for a crisis, abuse or "
            "an off-role request (docs/safety.md)",
            highlight=False,
        )
