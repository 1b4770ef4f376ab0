"""A red-team run into a web-app project (issue #19, the Fix loop): its failures become
dialogues to label, its rates per bot version the dashboard's red-team table.

``rolecall redteam`` judges bot replies with rules or LLM judges; people decide. So each
failed conversation (a reply judged not safe or out of role, or one that repeated the
attack) becomes a ``dialogue`` item: annotators mark its first out-of-bounds system turn
and category, and ``rolecall web export`` splits it there (``examples.py``) into
positives and one negative, as for any labelled dialogue. The judges' verdicts ride along
in the dialogue's turns (shown to annotators only when the project's ``show_judge`` is on,
as for any judged dialogue; never pre-filled as the answer) and, with the votes, the
attack and the outcome, in ``metadata["redteam"]``.

Adding a run twice adds nothing twice: an item's ``source`` is ``RUN_DIR:CONVERSATION_ID``
(the directory made absolute), and a conversation whose source the project holds is
skipped; the run's counts per (bot version, attack kind) replace the ones stored for it,
so that a run resumed with more conversations can be added again.

The run is read from its files, not through ``pipelines/redteam/run.py`` (the web app sits
on the same floor as the pipelines and imports none of them); the record types below
check what this module reads and name the line of a record that lacks it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.errors import ConfigError
from rolecall.jsonl import read_json_object, read_jsonl
from rolecall.judge.out_of_bounds import OUT_OF_BOUNDS
from rolecall.records import Dialogue, RedteamConversation, RedteamTurn, Turn, tally
from rolecall.rundir import MANIFEST, Files
from rolecall.store import Item, ItemKind, RedteamRate
from rolecall.web.items import add_items

CONVERSATIONS, REPORT_JSON = Files.CONVERSATIONS, Files.REPORT_JSON  # rolecall redteam --out
UNKNOWN_VERSION = "unknown"  # the report's and the dashboard's name for a bot without one
RUN_FIX = "give the --out directory of a finished 'rolecall redteam' run"


def read_run(run_dir: str | Path) -> tuple[Path, list[RedteamConversation], dict[str, Any]]:
    """(the directory made absolute, its conversations, its report or {}), or a
    ConfigError / InputFileError that says what the directory is instead."""
    path = Path(run_dir).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"no red-team run at {path}: not a directory", fix=RUN_FIX)
    manifest = _json(path / MANIFEST)
    command = manifest.get("command")
    if command not in (None, "redteam"):
        raise ConfigError(
            f"{path} is the run directory of 'rolecall {command}', not of 'rolecall redteam'",
            fix=RUN_FIX,
        )
    if not (path / CONVERSATIONS).is_file():
        raise ConfigError(
            f"{path} holds no {CONVERSATIONS}: not a red-team run, or one that held no "
            "conversation yet",
            fix=RUN_FIX,
        )
    if command == "redteam" and not (path / REPORT_JSON).is_file():
        raise ConfigError(
            f"{path} is an unfinished red-team run: it holds no {REPORT_JSON} yet",
            fix="run the same 'rolecall redteam' command again (it resumes and writes the "
            "report), then add it",
        )
    conversations = list(read_jsonl(path / CONVERSATIONS, RedteamConversation))
    if not conversations:
        raise ConfigError(f"{path / CONVERSATIONS} holds no conversation", fix=RUN_FIX)
    return path, conversations, _json(path / REPORT_JSON)


def _json(path: Path) -> dict[str, Any]:
    """A JSON object file, or {} when it does not exist."""
    return read_json_object(path, RUN_FIX) if path.is_file() else {}


def failed(conversation: RedteamConversation) -> bool:
    """Not safe, out of role, or the offence repeated: worth a person's look. The neutral
    control has no offence to repeat: its repeat share is the baseline the attacks' are
    read against (docs/redteam.md), and a reply that picks up the user's words is no
    failure."""
    outcome = conversation.outcome
    repeated = outcome.repeated and conversation.kind != "neutral"
    return outcome.not_safe or outcome.out_of_role or repeated


def _judged_turn(turn: RedteamTurn) -> Turn:
    """A dialogue turn with the judges' majority as its (shown-if-allowed) judgement: out of
    bounds with its category, in bounds, or None where no judge answered."""
    label = turn.verdict.label if turn.verdict else None
    out = None if label is None or turn.role != "system" else label == OUT_OF_BOUNDS
    return Turn(
        role=turn.role,
        text=turn.text,
        out_of_bounds=out,
        category=turn.verdict.category if out else None,
    )


def dialogue_row(path: Path, conversation: RedteamConversation) -> tuple[dict, str]:
    """(item payload, source) of one conversation: the whole conversation as a
    ``Dialogue``, the red-team record (attack, outcome, every judged turn's verdict and
    votes) in ``metadata["redteam"]`` for reference."""
    judged = [
        {
            "turn": index,
            **turn.model_dump(mode="json", exclude={"role", "text", "stages"}, exclude_unset=True),
        }
        for index, turn in enumerate(conversation.turns)
        if turn.verdict is not None
    ]
    dialogue = Dialogue(
        id=f"redteam:{path.name}:{conversation.id}",
        turns=[_judged_turn(turn) for turn in conversation.turns],
        metadata={
            "redteam": {
                "run": str(path),
                "conversation": conversation.id,
                "kind": conversation.kind,
                "bot_version": conversation.bot_version,
                "seed": conversation.seed,
                "topic": conversation.topic,
                "attack": conversation.attack,
                "outcome": conversation.outcome.model_dump(),
                "judged": judged,
            }
        },
    )
    return dialogue.model_dump(mode="json"), f"{path}:{conversation.id}"


def rate_counts(conversations: list[RedteamConversation]) -> list[dict[str, Any]]:
    """Per (bot version, attack kind): conversations ``n`` and how many were not safe,
    out of role, repeated the attack. Grouped by version here, not per kind as in
    ``report.json``: a resumed run may hold several versions of the bot."""
    groups: dict[tuple[str, str], list] = {}
    for conversation in conversations:
        key = (conversation.bot_version or UNKNOWN_VERSION, conversation.kind)
        groups.setdefault(key, []).append(conversation.outcome)
    return [
        {"bot_version": version, "attack": attack, **tally(outcomes)}
        for (version, attack), outcomes in sorted(groups.items())
    ]


def _judges(report: dict[str, Any]) -> str | None:
    judges = report.get("judges") or []
    names = [j.get("model") for j in judges if isinstance(j, dict) and j.get("model")]
    return ", ".join(names) or None


def store_rates(
    db: Session, project_id: int, source: str, counts: list[dict[str, Any]], judges: str | None
) -> None:
    """Insert or update the run's row per (bot version, attack kind)."""
    stored = {
        (row.bot_version, row.attack): row
        for row in db.scalars(
            select(RedteamRate).where(
                RedteamRate.project_id == project_id, RedteamRate.source == source
            )
        )
    }
    for count in counts:
        row = stored.get((count["bot_version"], count["attack"]))
        if row is None:
            db.add(RedteamRate(project_id=project_id, source=source, judges=judges, **count))
            continue
        for name in ("n", "not_safe", "out_of_role", "repeated"):
            setattr(row, name, count[name])
        row.judges = judges


def add_run(
    db: Session, project_id: int, run_dir: str | Path, everything: bool = False, per_item: int = 1
) -> dict[str, Any]:
    """Add a red-team run to a project: its failed conversations (every one with
    ``everything``) as dialogue items, each assigned to ``per_item`` annotators, unless the
    project holds them already; its counts per bot version and attack kind. Returns what
    was done, for the command to print."""
    path, conversations, report = read_run(run_dir)
    chosen = [c for c in conversations if everything or failed(c)]
    rows = [dialogue_row(path, c) for c in chosen]
    held = set(
        db.scalars(
            select(Item.source).where(
                Item.project_id == project_id,
                Item.kind == ItemKind.DIALOGUE,
                Item.source.in_([source for _, source in rows]),
            )
        )
    )
    new = [row for row in rows if row[1] not in held]
    if new:
        add_items(db, project_id, ItemKind.DIALOGUE, new, per_item)
    counts = rate_counts(conversations)
    store_rates(db, project_id, str(path), counts, _judges(report))
    return {
        "run": str(path),
        "conversations": len(conversations),
        "failures": sum(failed(c) for c in conversations),
        "items_added": len(new),
        "items_already_there": len(rows) - len(new),
        "rates": counts,
    }
