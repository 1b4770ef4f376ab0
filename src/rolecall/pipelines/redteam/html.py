"""The HTML pages of red-teaming: ``report.html`` of one run (``report.py``) and
``compare.html`` of several bot versions (``compare.py``), built from their JSON.

Why plain string building and not a Jinja template: the pages are a chart, a table and a
list, the package ships only ``web/templates`` as data, and every value goes through one
``escape`` here. Escaping is not optional: the attacks and the replies that repeat them
are offensive text that simulated users (an LLM, or a pairs file anyone can write) chose,
so a reply holding ``<script>`` must show as text. The page is self-contained (inline CSS
and SVG, no script, no font or image to fetch) so that it opens from a run directory, an
e-mail or a CI artifact, offline; its Content-Security-Policy refuses anything else.

The chart: one horizontal bar per rate (not safe, out of role) and per row (an attack
kind, or a bot version within a kind), 0-100%, the 95% Wilson interval drawn as a whisker
and the count ``k/n`` beside it, so that a 0/2 and a 0/200 do not look the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

SERIES = {"not_safe": ("not safe", "#c0392b"), "out_of_role": ("out of role", "#e08a1e")}
WARNING = (
    "경고: 이 페이지에는 공격적인 표현이 그대로 들어 있습니다. "
    "Warning: this page quotes offensive text (the attacks and the replies that repeat "
    "them) on purpose; do not show it to people without this warning."
)
CSS = """
body { font-family: "Noto Sans CJK KR", "NanumGothic", "Malgun Gothic", "Apple SD Gothic Neo",
  sans-serif; margin: 2em auto; max-width: 62em; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
.warning { background: #fff3cd; border: 1px solid #e0b000; padding: .6em .9em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .92em; }
th, td { border: 1px solid #ccc; padding: .3em .55em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; white-space: nowrap; }
svg { max-width: 100%; height: auto; font-family: inherit; }
svg .grid { stroke: #ddd; } svg .whisker { stroke: #222; stroke-width: 1.5; }
svg text { font-size: 12px; fill: #222; } svg text.group { font-weight: bold; }
.case { border-left: 4px solid #c0392b; margin: .8em 0; padding: .2em .8em; background: #fafafa; }
.case p { margin: .3em 0; } .said { white-space: pre-wrap; }
code { background: #f2f2f2; padding: 0 .2em; }
"""
# no script, no fetch: styles inline, images only as data: (none are used today)
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@dataclass(frozen=True)
class Bar:
    """One bar of the chart: ``rate`` as ``report.py`` writes it (``k``, ``rate``,
    ``ci95``) over ``n`` conversations; ``series`` is a key of ``SERIES``."""

    label: str
    series: str
    rate: dict[str, Any]
    n: int


def percent(rate: dict[str, Any]) -> str:
    """``12.5% [3.5, 36.0] (2)``: the rate, its 95% interval, the count; ``-`` for none."""
    if rate["rate"] is None:
        return "-"
    low, high = rate["ci95"]
    return f"{100 * rate['rate']:.1f}% [{100 * low:.1f}, {100 * high:.1f}] ({rate['k']})"


def share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def signed(difference: dict[str, Any] | None) -> str:
    """``+12.5 points [-3.1, 30.2]``: a difference of rates and its 95% interval; ``-``
    for none (the first run)."""
    if difference is None:
        return "-"
    low, high = difference["ci95"]
    return f"{100 * difference['difference']:+.1f} points [{100 * low:+.1f}, {100 * high:+.1f}]"


def counts(counter: dict[str, int] | None) -> str:
    """``fallback 2, retrieved 1``; ``-`` when empty."""
    return ", ".join(f"{key} {value}" for key, value in (counter or {}).items()) or "-"


def page(title: str, body: str) -> str:
    """A whole HTML document: UTF-8, Korean, the offensive-text warning first."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="ko">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f'<p class="warning" id="offensive-warning" role="alert">{escape(WARNING)}</p>\n'
        f"<h1>{escape(title)}</h1>\n{body}\n</body>\n</html>\n"
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric=()) -> str:
    """A table of escaped cells; the columns named in ``numeric`` align right."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            ('<td class="num">' if h in numeric else "<td>") + f"{escape(str(c))}</td>"
            for h, c in zip(headers, row, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody>\n</table>"
    )


# chart geometry, in SVG user units (the SVG scales to the page's width)
WIDTH, LABEL_W, PLOT_W, ROW_H, GROUP_H, AXIS_H = 760, 220, 430, 20, 24, 22
MAX_LABEL = 34


def _short(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _x(value: float) -> float:
    return round(LABEL_W + PLOT_W * value, 1)


def _bar(bar: Bar, y: float, group: str) -> list[str]:
    name, colour = SERIES[bar.series]
    rate = bar.rate
    title = escape(f"{group} · {bar.label} · {name}: {percent(rate)} of {bar.n}")
    out = (
        [
            f'<text x="{LABEL_W - 8}" y="{y + 14}" text-anchor="end"><title>{escape(bar.label)}'
            f"</title>{escape(_short(bar.label))}</text>"
        ]
        if bar.label
        else []
    )
    if rate["rate"] is None:
        out.append(f'<text x="{LABEL_W + 4}" y="{y + 14}">no conversations</text>')
        return out
    out.append(
        f'<rect class="bar {bar.series.replace("_", "-")}" data-group="{escape(group)}" '
        f'data-k="{rate["k"]}" data-n="{bar.n}" x="{LABEL_W}" y="{y + 3}" '
        f'width="{_x(rate["rate"]) - LABEL_W:.1f}" height="{ROW_H - 6}" fill="{colour}">'
        f"<title>{title}</title></rect>"
    )
    low, high = (_x(v) for v in rate["ci95"])
    middle = y + ROW_H / 2
    out += [
        f'<line class="whisker" x1="{low}" x2="{high}" y1="{middle}" y2="{middle}"/>',
        f'<line class="whisker" x1="{low}" x2="{low}" y1="{middle - 5}" y2="{middle + 5}"/>',
        f'<line class="whisker" x1="{high}" x2="{high}" y1="{middle - 5}" y2="{middle + 5}"/>',
        f'<text class="count" x="{LABEL_W + PLOT_W + 10}" y="{y + 14}">{rate["k"]}/{bar.n}</text>',
    ]
    return out


def rate_chart(groups: Sequence[tuple[str, Sequence[Bar]]], caption: str) -> str:
    """An SVG of horizontal bars: per group (an attack kind) a title and its bars."""
    parts, y = [], AXIS_H
    for group, bars in groups:
        parts.append(f'<text class="group" x="4" y="{y + 17}">{escape(group)}</text>')
        y += GROUP_H
        for bar in bars:
            parts += _bar(bar, y, group)
            y += ROW_H
    height = y + 30
    axis = []
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = _x(tick)
        axis += [
            f'<line class="grid" x1="{x}" x2="{x}" y1="{AXIS_H - 4}" y2="{y}"/>',
            f'<text x="{x}" y="{AXIS_H - 8}" text-anchor="middle">{int(100 * tick)}%</text>',
        ]
    legend, lx = [], LABEL_W
    for name, colour in SERIES.values():
        legend += [
            f'<rect x="{lx}" y="{y + 12}" width="12" height="12" fill="{colour}"/>',
            f'<text x="{lx + 17}" y="{y + 22}">{escape(name)}</text>',
        ]
        lx += 110
    legend.append(f'<text x="{lx}" y="{y + 22}">whisker: 95% Wilson interval</text>')
    return (
        f'<figure>\n<svg id="rate-chart" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{escape(caption)}">\n'
        + "\n".join(axis + parts + legend)
        + f"\n</svg>\n<figcaption>{escape(caption)}</figcaption>\n</figure>"
    )


def kind_bars(row: dict[str, Any], label: str | None = None) -> list[Bar]:
    """The two bars (not safe, out of role) of one row (an attack kind, or a run within
    one): labelled by their series, or ``label`` on the first (the colours tell them
    apart)."""
    if label is None:
        return [Bar(SERIES[s][0], s, row[s], row["n"]) for s in SERIES]
    return [Bar(label if i == 0 else "", s, row[s], row["n"]) for i, s in enumerate(SERIES)]


def _case(case: dict[str, Any]) -> str:
    verdict = case["verdict"]
    why = verdict.get("category") or verdict["label"]
    if verdict.get("rule"):
        why += f", rule {verdict['rule']}"
    repeated = ", ".join(case.get("repeated") or [])
    facts = f"{case['id']} · path {case.get('path')} · {why}"
    if repeated:
        facts += f" · repeats {repeated}"
    return (
        f'<div class="case">\n<p><strong>{escape(facts)}</strong></p>\n'
        f'<p>user: <span class="said">{escape(case.get("attack") or "")}</span></p>\n'
        f'<p>bot: <span class="said">{escape(case.get("reply") or "")}</span></p>\n</div>'
    )


def report_page(report: dict[str, Any]) -> str:
    """``report.html`` of one run: settings, the chart, the table, the worst cases."""
    settings = report["settings"]
    versions = ", ".join(report.get("bot_versions") or {}) or "unknown"
    judges = ", ".join(j["model"] for j in report["judges"])
    intro = (
        f"Bot {settings['bot']} (version {versions}); {report['conversations']} conversations "
        f"of {settings['turns']} user turns, the attack at turn {settings['attack_turn']}; "
        f"judges: {judges}. Rates are per conversation, with 95% Wilson intervals."
    )
    kinds = report["kinds"]
    chart = rate_chart(
        [(kind, kind_bars(row)) for kind, row in kinds.items()],
        "Not-safe and out-of-role rate per attack kind (95% Wilson interval, k/n)",
    )
    headers = [
        "attack",
        "n",
        "not safe",
        "out of role",
        "fallback (replies)",
        "repeats offence",
        "judged replies by path",
        "flagged replies by path",
        "flagged categories",
    ]
    rows = [
        [
            kind,
            row["n"],
            percent(row["not_safe"]),
            percent(row["out_of_role"]),
            share(row["fallback_share"]),
            share(row["repeat_share"]),
            counts(row.get("paths")),
            counts(row.get("flagged_paths")),
            counts(row.get("categories")),
        ]
        for kind, row in kinds.items()
    ]
    worst = [_case(case) for case in report["worst"]] or [
        "<p>No reply was flagged or repeated an attack.</p>"
    ]
    body = [
        f"<p>{escape(intro)}</p>",
        chart,
        table(headers, rows, numeric={"n", "not safe", "out of role"}),
        '<h2 id="worst">Worst cases</h2>',
        *worst,
    ]
    return page("Red-team report", "\n".join(body))


def compare_page(comparison: dict[str, Any]) -> str:
    """``compare.html``: any not-paired warning, the runs, the chart (per attack kind, a
    pair of bars per run), the table with each run's difference from run 1."""
    body = [
        f'<p class="warning not-paired">Not paired: {escape(warning)}.</p>'
        for warning in comparison["warnings"]
    ]
    body.append(
        table(
            ["run", "bot version", "directory", "conversations"],
            [
                [run["run"], run["label"], run["dir"], run["conversations"]]
                for run in comparison["runs"]
            ],
            numeric={"run", "conversations"},
        )
    )
    kinds = comparison["kinds"]
    groups = [
        (kind, [b for row in rows for b in kind_bars(row, f"{row['run']}. {row['label']}")])
        for kind, rows in kinds.items()
    ]
    body.append(rate_chart(groups, "Not-safe and out-of-role rate per attack kind and bot version"))
    body.append(
        "<p>Rates per conversation with 95% Wilson intervals (the count in parentheses); "
        "the difference from run 1 in percentage points with Newcombe's 95% interval "
        "(an interval that holds 0 does not tell the versions apart).</p>"
    )
    headers = ["attack", "run", "bot version", "n", "not safe", "out of role"]
    headers += ["not safe vs run 1", "out of role vs run 1"]
    rows = [
        [
            kind,
            row["run"],
            row["label"],
            row["n"],
            percent(row["not_safe"]),
            percent(row["out_of_role"]),
            signed(row["not_safe_vs_first"]),
            signed(row["out_of_role_vs_first"]),
        ]
        for kind, kind_rows in kinds.items()
        for row in kind_rows
    ]
    body.append(table(headers, rows, numeric=set(headers) - {"attack", "bot version"}))
    return page("Red-team comparison of bot versions", "\n".join(body))
