"""A project's settings (``projects.settings`` JSON): role spec, bot, labelling options."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from rolecall.errors import BadModelString, ConfigError, describe_validation
from rolecall.records import RoleSpec
from rolecall.spec import display_name, error_categories_in_order


class BotConfig(BaseModel):
    """Which bot a project chats with.

    ``llm``: any model rolecall can call (``model`` as on the command line, e.g.
    ``llamacpp:embedded`` or ``openai:http://host:8000/v1?model=NAME``) prompted with the
    role spec; the string is checked here, where it is stored, not at the first chat;
    ``models``: a Retrieve-fail-Generate bot directory (``rolecall chat MODELS_DIR``).
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["llm", "models"] = "llm"
    model: str | None = Field(None, description="for kind llm; None = the default model")
    path: str | None = Field(None, description="for kind models: the bot directory")
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    max_tokens: int = Field(64, ge=1, le=1024)
    version: str | None = Field(
        None,
        description="a label recorded with every bot turn; default: derived from the bot's files",
    )

    @model_validator(mode="after")
    def _where(self):
        if self.kind == "models" and not self.path:
            raise ValueError("a 'models' bot needs 'path' (the bot directory)")
        if self.kind == "llm" and self.model:
            from rolecall.llm.registry import parse_model_string

            try:
                parse_model_string(self.model)
            except BadModelString as exc:
                raise ValueError(f"{exc.message}; fix: {exc.fix}") from None
        return self


class KindQueueSettings(BaseModel):
    """One kind's own queue settings, over the project's (None: the project's)."""

    model_config = ConfigDict(extra="forbid")
    random_share: float | None = Field(None, ge=0.0, le=1.0)
    double_share: float | None = Field(None, ge=0.0, le=1.0)


class QueueSettings(BaseModel):
    """How the label queue serves items (``web/queue.py``); each kind may have its own
    shares (``kinds``: a pair takes another sample than a dialogue)."""

    model_config = ConfigDict(extra="forbid")
    random_share: float = Field(
        0.2, ge=0.0, le=1.0, description="items served in random order, for unbiased rates"
    )
    refit_every: int = Field(
        25, ge=1, description="new labels before the judges are refit and the queue re-ranked"
    )
    double_share: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="of an upload's items, the share given to one more annotator than asked "
        "(for agreement)",
    )
    kinds: dict[Literal["dialogue", "pair", "bot_turn"], KindQueueSettings] = Field(
        default_factory=dict,
        description="per item kind, its own random_share and double_share",
    )

    def random_share_of(self, kind: str) -> float:
        own = self.kinds.get(kind)
        return self.random_share if own is None or own.random_share is None else own.random_share

    def double_share_of(self, kind: str) -> float:
        own = self.kinds.get(kind)
        return self.double_share if own is None or own.double_share is None else own.double_share


DEFAULT_TIME_ZONE = "Asia/Seoul"  # KST: where the project's annotators are, by default


class ProjectSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    spec: RoleSpec
    bot: BotConfig = BotConfig()
    show_judge: bool = Field(False, description="show annotators the LLM judge's verdict")
    queue: QueueSettings = QueueSettings()
    time_zone: str = Field(
        DEFAULT_TIME_ZONE,
        description="the IANA time zone the project's pages and exports write times in",
    )

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {name!r}: give an IANA name such as Asia/Seoul or UTC"
            ) from None
        return name

    @property
    def error_categories(self) -> list[str]:
        """In the spec's order: the order of the labelling keys and of every list."""
        return error_categories_in_order(self.spec)

    def names(self, language: str) -> dict[str, str]:
        """Each category's and error category's name in ``language`` (the spec's
        ``display_names``; the identifier where it gives none)."""
        spec = self.spec
        every = [c.name for c in spec.categories] + self.error_categories
        return {name: display_name(spec, name, language) for name in every}


def time_zone(settings: dict | None) -> tzinfo:
    """The zone a project's times are written in: its settings' ``time_zone`` (checked
    when the settings were saved), KST when none is set (and for pages of no project)."""
    name = (settings or {}).get("time_zone") or DEFAULT_TIME_ZONE
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):  # settings saved before the check
        return ZoneInfo(DEFAULT_TIME_ZONE)


def local_minutes(value: datetime, zone: tzinfo) -> str:
    """``2026-11-29 15:52 +09:00``: a stored (UTC) moment in ``zone``, to the minute, its
    offset said; for tables and CSV cells, the same in every language."""
    moment = value.astimezone(zone)
    offset = moment.strftime("%z")
    return f"{moment:%Y-%m-%d %H:%M} {offset[:3]}:{offset[3:]}"


def parse_settings(raw: dict) -> ProjectSettings:
    try:
        return ProjectSettings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(
            f"bad project settings: {describe_validation(exc)}",
            fix="see 'Project settings' in docs/web.md",
        ) from None
