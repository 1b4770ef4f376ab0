"""The local engine (``llm/local_engine.py``: it lives with the LLM client, which
``llm batch`` runs on without an engine package): here under the engines' name."""

from rolecall.llm.local_engine import LocalEngine

__all__ = ["LocalEngine"]
