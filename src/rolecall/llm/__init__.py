"""LLM access: one interface, three backends, a persistent cache (see base.py)."""

from rolecall.llm.base import Backend, Completion, Message, Request, SamplingParams
from rolecall.llm.cache import Cache
from rolecall.llm.client import LLM, RunStats, Sample
from rolecall.llm.registry import load_backend, parse_model_string, register_backend

__all__ = [
    "LLM",
    "Backend",
    "Cache",
    "Completion",
    "Message",
    "Request",
    "RunStats",
    "Sample",
    "SamplingParams",
    "load_backend",
    "parse_model_string",
    "register_backend",
]
