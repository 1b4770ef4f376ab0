"""The project dashboard: error rates, retrieval vs generation, SSA, throughput, agreement.

Definitions (the NAACL 2022 paper's evaluation, computed from what people did here):

- **error rate** of a bot version = bot turns rejected with Fix / bot turns shown (every
  offered turn counts, replacements included), overall and per error category (Table 4);
- **path share** = a version's bot turns per provenance path (``retrieved``, ``generated``,
  ``fallback``, ``llm``) and each path's error rate (Table 7);
- **SSA** per version over its labelled bot turns: per turn the annotators' majority
  (a tie counts as "no"); a turn is specific only if it is also sensible; SSA = the mean
  of sensibleness and specificity;
- **throughput** per annotator and label kind: labels, median seconds per item;
- **agreement**: Krippendorff's alpha (nominal) per question over items with 2+ labels,
  and per error category (``label_rates.py``);
- **label error rates**: what the labels say of the data (dialogues out of bounds,
  rewrites not consistent or not offensive, turns not sensible), over the queue's random
  share only (``label_rates.py``);
- **flagged calls**: bot turns that answered a user-turn check which flags the call for the
  operator (a crisis: ``serve/user_checks.py``), newest first, with the person's turn that
  fired it, so that someone calls back;
- **red-team rates** per bot version and attack kind, per run added with ``rolecall web
  add-redteam`` (issue #19): conversations not safe / out of role / repeating the attack,
  each with its 95% Wilson interval, beside the same version's human error rate. Runs are
  not pooled: two runs may differ in judges, turns or attack turn.

``tables(db, project_id)`` computes everything as plain rows; the page, the CSV export and
the SVG chart are views of them.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from datetime import UTC, tzinfo
from html import escape

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from rolecall.errors import ConfigError
from rolecall.eval.agreement import krippendorff_alpha
from rolecall.eval.intervals import wilson_interval
from rolecall.formats.spreadsheet import csv_text
from rolecall.store import (
    Annotation,
    ChatSession,
    ChatTurn,
    Item,
    ItemKind,
    Project,
    RedteamRate,
    Speaker,
    TurnStatus,
    User,
    WebSession,
)
from rolecall.web.deps import DB, ID, admin, page, project_download, project_or_404
from rolecall.web.i18n import language_of, tr
from rolecall.web.items import annotators_only, decided, labels_by_item, majority_yes
from rolecall.web.label_rates import category_agreement, label_error_rates
from rolecall.web.review import annotator_agreement, disagreements
from rolecall.web.settings import local_minutes, parse_settings, time_zone
from rolecall.web.worklist import skipped_items

router = APIRouter()
QUESTIONS = {
    "oob": ("first_oob",),
    "pair": ("consistent", "offensive"),
    "ssa": ("sensible", "specific"),
}


def _bot_turns(db: Session, project_id: int) -> list[ChatTurn]:
    return list(
        db.scalars(
            select(ChatTurn)
            .join(ChatSession)
            .where(ChatSession.project_id == project_id, ChatTurn.role == Speaker.BOT)
            .order_by(ChatTurn.id)
        )
    )


def _by_version(turns: list[ChatTurn]) -> list[tuple[str, list[ChatTurn]]]:
    groups: dict[str, list[ChatTurn]] = defaultdict(list)
    for turn in turns:
        groups[turn.bot_version or "unknown"].append(turn)
    return sorted(groups.items())


def error_rates(turns: list[ChatTurn]) -> list[dict]:
    rows = []
    for version, group in _by_version(turns):
        fixed = [t for t in group if t.status == TurnStatus.FIXED]
        rows.append(
            {
                "bot_version": version,
                "category": "all",
                "turns": len(group),
                "errors": len(fixed),
                "error_rate": len(fixed) / len(group),
            }
        )
        for category, count in sorted(Counter(t.error_category for t in fixed).items()):
            rows.append(
                {
                    "bot_version": version,
                    "category": category,
                    "turns": len(group),
                    "errors": count,
                    "error_rate": count / len(group),
                }
            )
    return rows


def path_shares(turns: list[ChatTurn]) -> list[dict]:
    rows = []
    for version, group in _by_version(turns):
        paths: dict[str, list[ChatTurn]] = defaultdict(list)
        for turn in group:
            paths[(turn.provenance or {}).get("path") or "unknown"].append(turn)
        for path, members in sorted(paths.items()):
            errors = sum(t.status == TurnStatus.FIXED for t in members)
            rows.append(
                {
                    "bot_version": version,
                    "path": path,
                    "turns": len(members),
                    "share": len(members) / len(group),
                    "errors": errors,
                    "error_rate": errors / len(members),
                }
            )
    return rows


def flagged_calls(turns: list[ChatTurn], zone: tzinfo = UTC) -> list[dict]:
    """Bot turns whose user-turn check flagged the call (a crisis), newest first; when,
    in the project's time ``zone``."""
    rows = []
    for turn in turns:
        stages = (turn.provenance or {}).get("stages") or []
        check = next((s for s in stages if s.get("stage") == "user_check"), {})
        if not check.get("flagged"):
            continue
        said = [t for t in turn.session.turns if t.index == turn.index - 1]
        rows.append(
            {
                "chat": turn.session_id,
                "bot_version": turn.bot_version or "unknown",
                "check": check.get("check") or "",
                "user_turn": said[0].text if said else "",
                "when": turn.created,
            }
        )
    rows.sort(key=lambda r: r["when"], reverse=True)
    return [{**row, "when": local_minutes(row["when"], zone)} for row in rows]


def ssa(db: Session, project_id: int) -> list[dict]:
    items = {
        item.id: item
        for item in db.scalars(
            select(Item).where(Item.project_id == project_id, Item.kind == ItemKind.BOT_TURN)
        )
    }
    by_version: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for item_id, given in labels_by_item(db, project_id, "ssa").items():
        labels = decided(given)
        sensible = majority_yes(labels, "sensible")
        by_version[items[item_id].payload.get("bot_version") or "unknown"].append(
            (sensible, sensible and majority_yes(labels, "specific"))
        )
    rows = []
    for version, votes in sorted(by_version.items()):
        sensibleness = sum(s for s, _ in votes) / len(votes)
        specificity = sum(s for _, s in votes) / len(votes)
        rows.append(
            {
                "bot_version": version,
                "turns": len(votes),
                "sensibleness": sensibleness,
                "specificity": specificity,
                "ssa": (sensibleness + specificity) / 2,
            }
        )
    return rows


def throughput(db: Session, project_id: int) -> list[dict]:
    rows = []
    grouped: dict[tuple[str, str], list[Annotation]] = defaultdict(list)
    for annotation, username in db.execute(
        select(Annotation, User.username)
        .join(Item)
        .join(User, User.id == Annotation.user_id)
        .where(Item.project_id == project_id)
    ):
        grouped[(username, annotation.kind)].append(annotation)
    for (username, kind), labels in sorted(grouped.items()):
        seconds = [a.seconds_spent for a in labels if a.seconds_spent is not None]
        rows.append(
            {
                "annotator": username,
                "kind": kind,
                "labels": len(labels),
                "median_seconds": statistics.median(seconds) if seconds else None,
            }
        )
    return rows


def agreement(db: Session, project_id: int) -> list[dict]:
    rows = []
    for kind, questions in QUESTIONS.items():
        labels = labels_by_item(db, project_id, kind)
        for question in questions:
            units = [
                [str(label.get(question)) for label in annotators_only(group)]
                for group in labels.values()
            ]
            rows.append(
                {
                    "kind": kind,
                    "question": question,
                    "items_with_2_or_more": sum(len(u) >= 2 for u in units),
                    "krippendorff_alpha": krippendorff_alpha(units),
                }
            )
    return rows


def _rate(prefix: str, k: int, n: int) -> dict:
    low, high = wilson_interval(k, n) or (None, None)
    return {
        prefix: k,
        f"{prefix}_rate": k / n if n else None,
        f"{prefix}_low": low,
        f"{prefix}_high": high,
    }


def redteam_rates(db: Session, project_id: int, errors: list[dict]) -> list[dict]:
    """One row per stored red-team run, bot version and attack kind, with the human error
    rate (Fix / bot turns shown) of the same version where people chatted with it."""
    human = {row["bot_version"]: row for row in errors if row["category"] == "all"}
    rows = []
    for stored in db.scalars(
        select(RedteamRate)
        .where(RedteamRate.project_id == project_id)
        .order_by(RedteamRate.bot_version, RedteamRate.attack, RedteamRate.created)
    ):
        chats = human.get(stored.bot_version)
        rows.append(
            {
                "bot_version": stored.bot_version,
                "attack": stored.attack,
                "run": stored.source,
                "judges": stored.judges or "unknown",
                "conversations": stored.n,
                **_rate("not_safe", stored.not_safe, stored.n),
                **_rate("out_of_role", stored.out_of_role, stored.n),
                "repeat_share": stored.repeated / stored.n if stored.n else None,
                "human_turns": chats["turns"] if chats else None,
                "human_error_rate": chats["error_rate"] if chats else None,
            }
        )
    return rows


def tables(db: Session, project_id: int) -> dict[str, list[dict]]:
    turns = _bot_turns(db, project_id)
    errors = error_rates(turns)
    settings = db.get(Project, project_id).settings
    zone = time_zone(settings)
    try:
        categories = parse_settings(settings).error_categories
    except ConfigError:  # the other tables still show
        categories = []
    return {
        "error_rates": errors,
        "redteam": redteam_rates(db, project_id, errors),
        "paths": path_shares(turns),
        "flagged": flagged_calls(turns, zone),
        "ssa": ssa(db, project_id),
        "throughput": throughput(db, project_id),
        "agreement": agreement(db, project_id),
        "category_agreement": category_agreement(db, project_id, categories),
        "label_error_rates": label_error_rates(db, project_id),
        "disagreements": disagreements(db, project_id),
        "annotator_agreement": annotator_agreement(db, project_id),
        "skipped": skipped_items(db, project_id, zone),
    }


def error_rate_svg(
    rows: list[dict],
    title: str = "error rate by bot version and category",
    names: dict[str, str] | None = None,
    width: int = 640,
    bar: int = 18,
) -> str:
    """Horizontal bars: the error rate of each (version, category), 'all' first; ``title``
    and the categories' ``names`` in the page's language. It shrinks to a narrow screen
    (a viewBox, not a fixed width)."""
    names = names or {}
    height = 40 + bar * 1.5 * max(len(rows), 1)
    label_width, scale = 300, width - 320
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height:.0f}" '
        f'width="100%" style="max-width: {width}px" font-family="sans-serif" font-size="12">',
        f'<text x="4" y="16" font-weight="bold">{escape(title)}</text>',
    ]
    for i, row in enumerate(rows):
        y = 30 + i * bar * 1.5
        length = row["error_rate"] * scale
        colour = "#24324a" if row["category"] == "all" else "#8a94a6"
        category = names.get(row["category"], row["category"])
        name = escape(f"{row['bot_version'][:28]} · {category}")
        parts += [
            f'<text x="4" y="{y + bar * 0.75:.0f}">{name}</text>',
            f'<rect x="{label_width}" y="{y:.0f}" width="{length:.1f}" height="{bar}" '
            f'fill="{colour}"/>',
            f'<text x="{label_width + length + 4:.1f}" y="{y + bar * 0.75:.0f}">'
            f"{row['error_rate']:.1%} ({row['errors']}/{row['turns']})</text>",
        ]
    parts.append("</svg>")
    return "\n".join(parts)


def tables_csv(everything: dict[str, list[dict]]) -> str:
    """One long CSV: table, the row's key columns as key=value, metric, value; text cells
    neutralised for spreadsheets (a bot version or user name may start with '=')."""
    rows: list[list] = [["table", "key", "metric", "value"]]
    for table, rows_of_table in everything.items():
        for row in rows_of_table:
            keys = {k: v for k, v in row.items() if isinstance(v, str)}
            key = ";".join(f"{k}={v}" for k, v in keys.items())
            cells = [(metric, value) for metric, value in row.items() if metric not in keys]
            rows += [[table, key, metric, _cell(value)] for metric, value in cells]
    return csv_text(rows)


def _cell(value) -> object:
    """A CSV cell: nothing for None, JSON for a list or a mapping (a disagreement's
    answers), the value itself otherwise."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        import json

        return json.dumps(value, ensure_ascii=False)
    return value


@router.get("/projects/{project_id}/dashboard")
def show(request: Request, project_id: ID, _login: WebSession = Depends(admin), db: Session = DB):
    project = project_or_404(db, project_id)
    names = _names(project, language_of(request))
    return page(
        request, "dashboard.html", project=project, tables=tables(db, project.id), names=names
    )


@router.get("/projects/{project_id}/dashboard.csv")
def as_csv(project_id: ID, _login: WebSession = Depends(admin), db: Session = DB):
    return project_download(
        db, project_id, "dashboard.csv", "text/csv", lambda pid: tables_csv(tables(db, pid))
    )


@router.get("/projects/{project_id}/dashboard/error-rates.svg")
def chart(request: Request, project_id: ID, _login: WebSession = Depends(admin), db: Session = DB):
    project = project_or_404(db, project_id)
    rows = error_rates(_bot_turns(db, project.id))
    title = tr(request, "error rate by bot version and category")
    names = {"all": tr(request, "all"), **_names(project, language_of(request))}
    return Response(error_rate_svg(rows, title, names), media_type="image/svg+xml")


def _names(project, language: str) -> dict[str, str]:
    """The project's categories' names in ``language``; none when its spec is broken (the
    tables still show, with the identifiers)."""
    try:
        return parse_settings(project.settings).names(language)
    except ConfigError:
        return {}
