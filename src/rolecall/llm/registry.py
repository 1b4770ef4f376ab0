"""Model strings and the backend registry.

A model string is ``SCHEME:LOCATION[?KEY=VALUE&...]``:

- ``llamacpp:embedded``  the embedded Gemma 3 270M GGUF (the default)
- ``llamacpp:/models/x.gguf?n_ctx=4096``
- ``openai:http://localhost:8000/v1?model=NAME``  any OpenAI-compatible server
  (vLLM, SGLang, Ollama, llama.cpp server, hosted APIs); key from ``api_key_env``
- ``hf:/path/to/model``  or  ``hf:embedded``  (transformers; the GGUF via ``gguf_file``)

Each backend declares its options as a pydantic model; unknown keys and bad values are
errors that list what is accepted. Tests and plugins add schemes with ``register_backend``
(modules named in ``ROLECALL_PLUGINS`` are imported first, so subprocesses see them too).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from pydantic import BaseModel, ValidationError

from rolecall.errors import BackendNotInstalled, BadModelString, describe_validation
from rolecall.llm.base import Backend

DEFAULT_MODEL = "llamacpp:embedded"
EXAMPLES = (
    "llamacpp:embedded, llamacpp:/path/model.gguf, "
    "openai:http://localhost:8000/v1?model=NAME, hf:/path/to/model, hf:embedded"
)


@dataclass(frozen=True)
class ModelSpec:
    scheme: str
    location: str
    options: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        query = "&".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.scheme}:{self.location}" + (f"?{query}" if query else "")


@dataclass(frozen=True)
class BackendEntry:
    """How to build one scheme's backend: ``factory(location, options)``."""

    factory: Callable[[str, BaseModel], Backend]
    options: type[BaseModel]
    summary: str
    requires: tuple[str, ...] = ()  # importable modules the backend needs


_REGISTRY: dict[str, BackendEntry] = {}
_BUILTINS = {
    "llamacpp": "rolecall.llm.llamacpp",
    "openai": "rolecall.llm.openai_compat",
    "hf": "rolecall.llm.hf",
}
_plugins_loaded = False


def register_backend(scheme: str, entry: BackendEntry) -> None:
    _REGISTRY[scheme] = entry


def known_schemes() -> list[str]:
    _load_plugins()
    return sorted(set(_BUILTINS) | set(_REGISTRY))


def default_model() -> str:
    return os.environ.get("ROLECALL_MODEL") or DEFAULT_MODEL


def _local_model_name(text: str) -> bool:
    """``embedded`` or a GGUF path written without its scheme."""
    return not any(c in text for c in ":?") and (text == "embedded" or text.endswith(".gguf"))


def parse_model_string(text: str | None) -> ModelSpec:
    """Split and sanity-check a model string (options are checked by ``load_backend``)."""
    text = (text or default_model()).strip()
    scheme, sep, rest = text.partition(":")
    if not sep or not scheme or not rest:
        raise BadModelString(
            f"'{text}' is not a model string (expected SCHEME:LOCATION)",
            fix=f"did you mean llamacpp:{text}?"
            if _local_model_name(text)
            else f"write one of: {EXAMPLES}",
        )
    if scheme not in known_schemes():
        raise BadModelString(
            f"unknown backend '{scheme}' in '{text}'; known: {', '.join(known_schemes())}",
            fix=f"write one of: {EXAMPLES}",
        )
    location, _, query = rest.partition("?")
    options: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key in options:
            raise BadModelString(
                f"option '{key}' given twice in '{text}'", fix=f"keep one '{key}=...'"
            )
        options[key] = value
    if query and not options:
        raise BadModelString(
            f"cannot read the options '?{query}' in '{text}'",
            fix="write options as ?key=value&key2=value2",
        )
    if not location:
        raise BadModelString(
            f"'{text}' has no location after '{scheme}:'", fix=f"write one of: {EXAMPLES}"
        )
    return ModelSpec(scheme, location, options)


def backend_entry(scheme: str) -> BackendEntry:
    _load_plugins()
    if scheme not in _REGISTRY and scheme in _BUILTINS:
        importlib.import_module(_BUILTINS[scheme])  # registers itself on import
    return _REGISTRY[scheme]


def missing_requirements(entry: BackendEntry) -> list[str]:
    missing = []
    for module in entry.requires:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return missing


def load_backend(model: str | None = None) -> Backend:
    """Build the backend a model string names (``None``: the default model)."""
    spec = parse_model_string(model)
    entry = backend_entry(spec.scheme)
    missing = missing_requirements(entry)
    if missing:
        raise BackendNotInstalled(
            f"backend '{spec.scheme}' needs the Python package(s) {', '.join(missing)}",
            fix="install them (the README's set-up commands install every backend)",
        )
    try:
        options = entry.options(**spec.options)
    except ValidationError as exc:
        problems = describe_validation(exc, whole="options")
        accepted = ", ".join(entry.options.model_fields) or "none"
        raise BadModelString(
            f"bad options in '{spec}': {problems}",
            fix=f"options accepted by '{spec.scheme}': {accepted}",
        ) from None
    return entry.factory(spec.location, options)


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for name in filter(None, os.environ.get("ROLECALL_PLUGINS", "").split(",")):
        importlib.import_module(name.strip())
