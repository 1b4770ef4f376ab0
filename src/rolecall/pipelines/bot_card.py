"""A bot's model card (``card.json`` and ``card.md`` in its directory), written by
``rolecall bot run``: where its examples came from and how many, the settings it was built
with, every part's held-out numbers (each guard candidate's, not only the chosen one's),
and the rolecall version."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rolecall import __version__
from rolecall.rundir import RunDir, write_json

CARD_JSON, CARD_MD = "card.json", "card.md"


def write_card(run: RunDir, config: Any, stages: dict[str, dict]) -> dict[str, Any]:
    """Write both files into the run's directory; the card."""

    def here(path: str) -> str:  # relative to the bot: the card moves with it
        return os.path.relpath(Path(path).resolve(), run.path.resolve())

    card = {
        "rolecall": __version__,
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "spec": here(config.spec),
        "sources": [
            {k: here(v) if k in ("examples", "dialogues") else v for k, v in s.items()}
            for s in (source.model_dump(exclude_none=True) for source in config.sources)
        ],
        "settings": config.model_dump(
            mode="json", exclude={"sources", "out", "spec", "features", "user_checks"}
        ),
        "parts": stages,
    }
    write_json(run.path / CARD_JSON, card)
    (run.path / CARD_MD).write_text(card_markdown(card), encoding="utf-8")
    return card


def card_markdown(card: dict[str, Any]) -> str:
    parts = card["parts"]
    examples = parts.get("examples", {})
    lines = [
        f"# Bot card: {card['settings'].get('backbone')} backbone",
        "",
        f"Built by rolecall {card['rolecall']} on {card['written']} from the role spec "
        f"`{card['spec']}`.",
        "",
        "## Examples",
        "",
        "| source | read | duplicates | training | held out | negatives |",
        "|---|---|---|---|---|---|",
    ]
    for name, c in examples.get("sources", {}).items():
        lines.append(
            f"| {name} | {c['read']} | {c['duplicates']} | {c['train']} | {c['held_out']} | "
            f"{c['negatives']} |"
        )
    lines += [
        "",
        f"Training: {examples.get('train')} examples ({examples.get('negatives')} negatives, "
        f"{examples.get('spec_negatives', 0)} of them the spec's forbidden examples); "
        f"held out: {examples.get('held_out')}.",
        "",
    ]
    guard = parts.get("guard")
    if guard:
        lines += [
            "## The guard (out-of-bounds classifier)",
            "",
            "Each candidate's numbers on the dialogues its training holds out (F1 at its "
            "held-out threshold, cross-fitted); the best ROC AUC guards the bot.",
            "",
            "| candidate | ROC AUC | threshold | precision | recall | F1 | chosen |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, s in guard["candidates"].items():
            chosen = "yes" if name == guard["chosen"] else ""
            lines.append(
                f"| {name} | {s['roc_auc']} | {s['threshold']} | {s['precision']} | "
                f"{s['recall']} | {s['f1']} | {chosen} |"
            )
        lines.append("")
    for name, title in (("retriever", "Retriever"), ("reranker", "Reranker")):
        if parts.get(name):
            numbers = ", ".join(f"{k} {v}" for k, v in parts[name].items())
            lines += [f"## {title}", "", numbers, ""]
    calibration = parts.get("unanswerable")
    if calibration:
        by_method = ", ".join(f"{k} {v}" for k, v in calibration["roc_auc_by_method"].items())
        lines += [
            "## When retrieval fails",
            "",
            f"Detectors' ROC AUC on {calibration['items']} held-out items: {by_method}. "
            f"{parts.get('bot', {}).get('fallback', '')}.",
            "",
        ]
    checks = parts.get("checks")
    if checks and checks.get("trained"):
        lines += [
            "## User-turn checks",
            "",
            f"{checks['turns']} training turns; out of fold, per check:",
            "",
            "| check | threshold | precision | recall | false alarms |",
            "|---|---|---|---|---|",
        ]
        for name, c in checks["out_of_fold"].items():
            lines.append(
                f"| {name} | {c['threshold']} | {c['precision']} | {c['recall']} | "
                f"{c['false_alarms']} |"
            )
        lines.append("")
    bot = parts.get("bot", {})
    if bot:
        lines += [f"Served replies: {bot.get('served_candidates')}.", ""]
    return "\n".join(lines)
