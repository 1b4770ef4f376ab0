"""The web app's one message catalogue (web/i18n.py): every marked string has a Korean
translation with the same fields, no template shows English outside the catalogue, the
pages are Korean by default and format dates and numbers per locale."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from rolecall.web.i18n import LANGUAGES, TEMPLATES, catalogue_path, environment, translate
from tests.paths import REPO

# the pybabel command of docs/web.md ("Languages") names the same keywords
KEYWORDS = {**DEFAULT_KEYWORDS, "Refused": (2,), "tr": (2,)}
UPDATE = (
    "update the catalogue (docs/web.md, 'Languages'): .venv/bin/pybabel extract -F babel.cfg "
    "-k Refused:2 -k tr:2 --add-location=file --sort-by-file -o "
    "src/rolecall/web/locale/messages.pot . && .venv/bin/pybabel update -i "
    "src/rolecall/web/locale/messages.pot -d src/rolecall/web/locale --ignore-obsolete, "
    "then translate the new entries of ko/LC_MESSAGES/messages.po"
)


def extracted() -> set[str]:
    """Every string the web app marks, as pybabel extracts it with babel.cfg."""
    with (REPO / "babel.cfg").open() as config:
        method_map, options_map = parse_mapping_cfg(config)
    web = REPO / "src" / "rolecall" / "web"
    found = extract_from_dir(
        REPO,
        method_map,
        options_map,
        keywords=KEYWORDS,
        directory_filter=lambda d: web.is_relative_to(Path(d)) or Path(d).is_relative_to(web),
    )
    return {message if isinstance(message, str) else message[0] for *_, message, _, _ in found}


def catalogue(language: str):
    with catalogue_path(language).open("rb") as source:
        return read_po(source, locale=language)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_catalogue_holds_every_marked_string_and_korean_translates_them(language):
    marked = extracted()
    assert len(marked) > 150  # templates and Python both extracted
    held = {m.id if isinstance(m.id, str) else m.id[0]: m for m in catalogue(language) if m.id}
    missing, stale = sorted(marked - set(held)), sorted(set(held) - marked)
    assert not missing and not stale, f"missing {missing}, stale {stale}: {UPDATE}"
    if language != "ko":
        return  # English is the source language: its entries stay empty
    untranslated = [i for i, m in held.items() if not all(_strings(m)) or m.fuzzy]
    assert not untranslated, f"translate these in ko/LC_MESSAGES/messages.po: {untranslated}"


FIELDS = re.compile(r"\{\w+\}|%\(\w+\)s|%%")


def _strings(message) -> list[str]:
    return list(message.string) if isinstance(message.string, tuple) else [message.string]


def test_korean_keeps_every_field_of_its_source():
    for message in catalogue("ko"):
        if not message.id:
            continue
        source = message.id if isinstance(message.id, str) else message.id[0]
        for text in _strings(message):
            assert sorted(FIELDS.findall(text)) == sorted(FIELDS.findall(source)), source


class _Visible(HTMLParser):
    """The text a person reads: text nodes and the attributes browsers show."""

    SKIPPED = {"style", "script", "kbd", "code"}  # CSS, scripts, key names, commands
    SHOWN = {"title", "placeholder", "aria-label", "alt"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.inside: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIPPED:
            self.inside.append(tag)
        named = dict(attrs)
        for name, value in attrs:
            button = tag == "button" or named.get("type") in ("submit", "button", "reset")
            if name in self.SHOWN or (name == "value" and button):
                self.text.append(value or "")

    def handle_endtag(self, tag):
        if self.inside and self.inside[-1] == tag:
            self.inside.pop()

    def handle_data(self, data):
        if not self.inside:
            self.text.append(data)


LATIN = re.compile(r"[A-Za-z]+")
NAMES = {"rolecall"}  # the product's name is not translated


def english_outside_catalogue(source: str) -> list[str]:
    """The runs of Latin letters a template shows that the catalogue does not translate:
    its text with every Jinja expression, statement, comment and ``{% trans %}`` block
    taken out, then the HTML's text nodes and shown attributes."""
    tokens = [t for t in environment("en").lex(source) if t[1] != "whitespace"]
    plain, in_trans = [], False
    for number, (_line, kind, value) in enumerate(tokens):
        if kind == "block_begin":
            name = tokens[number + 1][2]
            in_trans = name == "trans" or (in_trans and name != "endtrans")
        if kind == "data" and not in_trans:
            plain.append(value)
        elif kind.endswith("_end"):
            plain.append(" ")  # where the expression was
    visible = _Visible()
    visible.feed("".join(plain))
    visible.close()
    return [word for text in visible.text for word in LATIN.findall(text) if word not in NAMES]


def test_the_english_check_finds_what_it_should():
    assert english_outside_catalogue('<p>{{ _("hello") }} world</p>') == ["world"]
    assert english_outside_catalogue('<button title="Save">{{ x }}</button>') == ["Save"]
    assert english_outside_catalogue('<input type="submit" value="go">') == ["go"]
    assert english_outside_catalogue("<p>{% trans n=1 %}{{ n }} item{% endtrans %}</p>") == []
    assert english_outside_catalogue('<input type="hidden" name="mask" value="on">') == []
    assert english_outside_catalogue("<kbd>Enter</kbd><style>p { color: red }</style>") == []
    assert english_outside_catalogue('<a href="/x" placeholder="{{ _(\'name\') }}">·</a>') == []
    assert english_outside_catalogue("{# a comment #}{% if me %}<p>{{ me }}</p>{% endif %}") == []
    assert english_outside_catalogue("<title>rolecall · {{ _('admin') }}</title>") == []


@pytest.mark.parametrize("name", sorted(p.name for p in TEMPLATES.glob("*.html")))
def test_no_template_shows_english_outside_the_catalogue(name):
    words = english_outside_catalogue((TEMPLATES / name).read_text(encoding="utf-8"))
    assert not words, (
        f"{name} shows {words} outside the catalogue: wrap the text in {{{{ _('...') }}}} or "
        f"{{% trans %}}...{{% endtrans %}}, then {UPDATE}"
    )


def test_numbers_dates_and_python_messages_per_locale():
    when = datetime(2026, 11, 27, 15, 4, 5, tzinfo=UTC)
    ko, en = environment("ko").filters, environment("en").filters
    # written in the page's zone (a project's, KST by default), its offset said
    assert ko["datetime"](when, ZoneInfo("Asia/Seoul")) == (
        '<time datetime="2026-11-28T00:04:05+09:00">2026. 11. 28. 오전 12:04:05 (UTC+09:00)</time>'
    )
    shown = en["datetime"](when, ZoneInfo("UTC")).striptags()  # a narrow space before PM
    assert shown.startswith("Nov 27, 2026, 3:04:05") and shown.endswith("PM (UTC+00:00)")
    assert (ko["number"](1234567), en["number"](1234.5, 1)) == ("1,234,567", "1,234.5")
    assert (ko["percent"](0.5), en["percent"](None)) == ("50.0%", "-")
    message = "the file is over {limit} bytes: split it"
    assert translate("ko", message, {"limit": "900,000"}) == (
        "파일이 900,000바이트를 넘습니다. 나누어 올리세요"
    )
    assert (
        translate("en", message, {"limit": "900,000"}) == "the file is over 900,000 bytes: split it"
    )
    assert translate("fr", message, {"limit": "1"}).startswith("파일이")  # unknown: Korean


def test_answers_made_before_a_login_follow_the_language_cookie(page_site):
    from fastapi.testclient import TestClient

    from rolecall.web import create_app

    engine, _ = page_site
    client = TestClient(create_app(engine, max_body=100), follow_redirects=False)
    body = {"username": "x" * 200}
    assert client.post("/login", data=body).text == "413: 요청 본문이 100바이트를 넘습니다"
    assert client.get("/nowhere").text == "<p>404: 여기에 없습니다</p>"
    client.cookies.set("rolecall_lang", "en")
    assert client.post("/login", data=body).text == "413: the request body is over 100 bytes"
    assert client.get("/nowhere").text == "<p>404: not here</p>"
    assert '<html lang="en">' in client.get("/login").text
