"""Imported through ROLECALL_PLUGINS by the CLI subprocesses of the dialogue pipeline tests."""

from rolecall.llm.registry import register_backend
from tests.pipelines.dialogue_script import ENTRY

register_backend("dialogue-script", ENTRY)
