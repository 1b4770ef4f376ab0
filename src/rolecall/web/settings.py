"""A project's settings (``projects.settings`` JSON): role spec, bot, labelling options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rolecall.errors import ConfigError, describe_validation
from rolecall.records import RoleSpec


class BotConfig(BaseModel):
    """Which bot a project chats with.

    ``llm``: any model rolecall can call (``model`` as on the command line, e.g.
    ``embedded`` or ``openai:http://host:8000/v1?model=NAME``) prompted with the role spec;
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
        return self


class ProjectSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    spec: RoleSpec
    bot: BotConfig = BotConfig()
    show_judge: bool = Field(False, description="show annotators the LLM judge's verdict")

    @property
    def error_categories(self) -> list[str]:
        return self.spec.error_categories


def parse_settings(raw: dict) -> ProjectSettings:
    try:
        return ProjectSettings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(
            f"bad project settings: {describe_validation(exc)}",
            fix="see 'Project settings' in docs/web.md",
        ) from None
