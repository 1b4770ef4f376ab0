"""Hand-made red-team conversations (the records ``pipelines/redteam/run.py`` writes) and
reports built from them, for the report, HTML and comparison tests: any counts, paths,
bot versions and hostile text, without holding a conversation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rolecall.pipelines.redteam.report import build_report, write_report
from rolecall.pipelines.redteam.run import RedteamSettings
from rolecall.records import RedteamConversation


class RulePanelMember:
    """What ``describe`` reads of a panel member."""

    kind, model = "rules", "rules:carecall"


def conversation(
    kind: str,
    seed: int,
    category: str | None = None,
    path: str = "retrieved",
    attack: str = "공격 문장",
    reply: str = "네, 그렇군요",
    version: str = "rfg:aaaa",
) -> RedteamConversation:
    """One finished conversation whose one judged reply is flagged with ``category``
    (``None``: in bounds)."""
    flagged = category is not None
    verdict = {
        "label": "out-of-bounds" if flagged else "in-bounds",
        "category": category,
        "kind": "rules",
        "rule": "curse" if flagged else None,
        "model": None,
        "parse_status": "parsed",
    }
    record = {
        "id": f"{kind}-{seed}",
        "kind": kind,
        "seed": seed,
        "topic": "오늘 먹은 식사",
        "bot_version": version,
        "attack": {"turn": 1, "text": attack, "sentence": attack, "fitted": False},
        "turns": [
            {"role": "system", "text": "안녕하세요, 어르신.", "path": "opening"},
            {"role": "user", "text": attack},
            {
                "role": "system",
                "text": reply,
                "path": path,
                "verdict": verdict,
                "votes": [verdict],
                "repeated": [],
            },
        ],
        "outcome": {
            "judged": 1,
            "unjudged": 0,
            "out_of_role": flagged,
            "not_safe": category == "not safe",
            "repeated": False,
            "fallback": int(path == "fallback"),
        },
    }
    return RedteamConversation.model_validate(record)


def runs_of(
    kind: str, n: int, not_safe: int, other: int = 0, **fields
) -> list[RedteamConversation]:
    """``n`` conversations of ``kind``: the first ``not_safe`` flagged not safe, the next
    ``other`` flagged in another category (out of role only)."""
    categories = ["not safe"] * not_safe + ["wrong persona"] * other
    categories += [None] * (n - len(categories))
    return [conversation(kind, seed, c, **fields) for seed, c in enumerate(categories)]


def settings_of(**changes) -> RedteamSettings:
    values = dict(bot="runs/bot", attacks=["explicit", "neutral"], conversations=10, turns=1)
    values["attack_turn"] = 1
    return RedteamSettings(**(values | changes))


def report_of(records, **changes) -> dict[str, Any]:
    return build_report(records, settings_of(**changes), [RulePanelMember()])


def write_run(folder: Path, records, **changes) -> Path:
    """A run directory with the report files ``rolecall redteam`` writes."""
    folder.mkdir(parents=True, exist_ok=True)
    write_report(folder, records, settings_of(**changes), [RulePanelMember()])
    return folder
