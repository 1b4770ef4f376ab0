"""The web app in Korean (the default) and English, from one message catalogue.

The catalogue is gettext's, kept as ``locale/<language>/LC_MESSAGES/messages.po`` (source
strings in English; ``en`` leaves them as they are). The ``.po`` files are what is loaded:
Babel compiles each in memory the first time it is needed, so a fresh clone needs no
build step. ``docs/web.md`` has the commands that extract new strings (``babel.cfg``) and
update the catalogues; ``tests/web/test_i18n.py`` fails when a marked string has no
Korean translation or a template shows English outside the catalogue.

- Templates mark what people read: ``{% trans %}...{% endtrans %}`` or ``{{ _("...") }}``
  (Jinja2's i18n extension, new-style: ``%(name)s`` fields, ``%%`` for a percent sign).
  One environment per language (:func:`environment`), with filters that format numbers
  (``number``, ``percent``) and times (``datetime``) for its locale.
- Python marks its messages where it writes them, with ``{name}`` fields filled after
  translation: ``Refused(status, "message", name=value)`` (translated when its page is
  rendered), :func:`tr` (at once), :func:`N_` (a constant, translated later).
- A request's language (:func:`language_of`): the person's setting (``users.language``)
  once logged in; before that, the ``rolecall_lang`` cookie (set at login and by the
  language switch), else Korean.
"""

from __future__ import annotations

import functools
import io
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from babel import Locale
from babel.dates import format_datetime
from babel.numbers import format_decimal, format_percent
from babel.support import Translations
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

LANGUAGES = ("ko", "en")  # the catalogues; the first is the default
DEFAULT = LANGUAGES[0]
COOKIE = "rolecall_lang"
LOCALE = Path(__file__).with_name("locale")
TEMPLATES = Path(__file__).with_name("templates")


def N_(message: str) -> str:  # gettext's name for "mark now, translate later"
    """Marks ``message`` for the catalogue; it is translated where it is shown."""
    return message


def catalogue_path(language: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / "messages.po"


@functools.cache
def translations(language: str) -> Translations:
    """The language's catalogue, compiled from its ``.po`` file in memory."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with catalogue_path(language).open("rb") as source:
        catalog = read_po(source, locale=language)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return Translations(compiled)


def chosen(language: str | None) -> str:
    """``language`` if there is a catalogue for it, else the default."""
    return language if language in LANGUAGES else DEFAULT


def language_of(request) -> str:
    """The language a request's pages and messages are in."""
    viewer = getattr(request.state, "viewer", None)
    if viewer is not None:
        return chosen(viewer.language)
    return chosen(request.cookies.get(COOKIE))


def translate(language: str, message: str, values: dict | None = None) -> str:
    """``message`` from ``language``'s catalogue, its ``{name}`` fields filled."""
    text = translations(chosen(language)).gettext(message)
    return text.format(**values) if values else text


def tr(request, message: str, **values) -> str:
    """``message`` in the request's language, its ``{name}`` fields filled."""
    return translate(language_of(request), message, values)


def remember(response, language: str, secure: bool) -> None:
    """Keep ``language`` in the browser: the pages before a login (the login page, after
    logging out) are in it."""
    response.set_cookie(
        COOKIE, language, max_age=365 * 24 * 3600, httponly=True, samesite="lax", secure=secure
    )


def language_names() -> dict[str, str]:
    """Each language in its own words: {"ko": "한국어", "en": "English"}."""
    return {code: Locale.parse(code).get_display_name(code) for code in LANGUAGES}


def _number(language: str):
    def number(value, digits: int = 0) -> str:
        if value is None:
            return "-"
        pattern = "#,##0" + ("." + "0" * digits if digits else "")
        return format_decimal(value, pattern, locale=language)

    return number


def _percent(language: str):
    def percent(value) -> str:  # a share as a percent with one decimal
        return "-" if value is None else format_percent(value, "#,##0.0%", locale=language)

    return percent


def _datetime(language: str):
    def when(value: datetime | None, zone: tzinfo | None = None) -> Markup | str:
        """Stored in UTC, written in ``zone`` (the page's: its project's time zone, KST
        by default) with its offset said, in a ``<time>`` that holds the moment."""
        if value is None:
            return "-"
        moment = value.astimezone(zone or UTC)
        shown = format_datetime(moment, "medium", tzinfo=moment.tzinfo, locale=language)
        offset = format_datetime(moment, "xxx", tzinfo=moment.tzinfo, locale=language)
        return Markup('<time datetime="{}">{} (UTC{})</time>').format(
            moment.isoformat(), shown, offset
        )

    return when


@functools.cache
def environment(language: str) -> Environment:
    """The templates in ``language``: gettext from its catalogue, its number and time
    formats. The caller adds the app's own filters and globals."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_translations(translations(language), newstyle=True)
    env.filters.update(
        number=_number(language), percent=_percent(language), datetime=_datetime(language)
    )
    env.globals.update(language=language, languages=language_names())
    return env
