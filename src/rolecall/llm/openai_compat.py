"""The ``openai:`` backend: any OpenAI-compatible HTTP server, through the ``openai`` SDK.

This covers vLLM, SGLang, Ollama, llama.cpp's server (``python -m llama_cpp.server``), TGI
and hosted APIs. Model string::

    openai:http://localhost:8000/v1?model=NAME&timeout=60&chat=false
    openai:http://node1:8000/v1,http://node2:8000/v1?model=NAME

Several comma-separated base URLs make a pool of servers that serve the same model (one
vLLM per GPU node): each call goes to the least busy one, and one that just failed as if it
were down is skipped for a while (see ``server_pool.py``).

Options (all optional):

- ``model``: the served model's name. Left out, the server is asked (``GET /models``) once
  when the backend is built; that works when it serves exactly one model (vLLM, SGLang,
  llama.cpp server) and otherwise fails with the list of names to choose from.
- ``api_key_env``: the environment variable holding the API key (``OPENAI_API_KEY``); if it
  is unset the key ``EMPTY`` is sent, which local servers accept.
- ``timeout``: seconds per call (120). ``max_concurrency``: concurrent calls per server
  (16); a pool of N servers takes N times as many. ``cooldown``: seconds a pool skips a
  server whose last call found it down (15).
- ``chat`` / ``completion``: whether the server serves chat messages (the model has a chat
  template) / plain-prompt completions (hosted chat models do not). ``logprobs``: whether it
  returns token logprobs. ``json_schema``: whether it honours ``response_format`` with a
  JSON schema. Each defaults to true; turning one off makes rolecall refuse such requests
  up front instead of failing per call. llama-cpp-python's own server
  (``python -m llama_cpp.server``) rejects ``json_schema`` response formats: give it
  ``json_schema=false``.

Not supported: log-likelihood scoring of given text (the chat API cannot score a given
continuation and servers disagree on ``echo``), GBNF grammars, and JSON schemas on plain
completions (no portable parameter: vLLM, SGLang and llama.cpp each spell it differently).

Retries belong to ``LLM`` (see ``client.py``), so the SDK's own are turned off and its
errors become ``BackendError`` with ``transient`` set for timeouts, 408/409/429 and 5xx.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rolecall.errors import BackendError, BadModelString, UnsupportedCapability
from rolecall.llm.base import (
    Backend,
    Completion,
    Request,
    TokenLogprob,
    TopLogprob,
    sample_seed,
)
from rolecall.llm.registry import BackendEntry, register_backend
from rolecall.llm.server_pool import ServerPool, Ticket, split_base_urls

DUMMY_KEY = "EMPTY"
# Servers send -inf (or an overflowed number) for impossible alternatives; JSON (and so the
# cache) cannot hold infinities, so they are clamped to vLLM's own stand-in value.
LOGPROB_FLOOR = -9999.0
_TRANSIENT_STATUS = {408, 409, 429}


class OpenAIOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = Field(None, min_length=1)
    api_key_env: str = Field("OPENAI_API_KEY", min_length=1)
    timeout: float = Field(120.0, gt=0)
    chat: bool = True
    completion: bool = True
    logprobs: bool = True
    json_schema: bool = True
    max_concurrency: int = Field(16, ge=1, le=1024)
    cooldown: float = Field(15.0, ge=0)


class OpenAIBackend(Backend):
    """One model on one OpenAI-compatible server, or on a pool of them. One SDK client per
    server, shared by every thread (its ``httpx`` connection pool is thread-safe)."""

    scheme = "openai"
    supports_completion = True
    supports_chat = True
    supports_logprobs = True
    supports_json_schema = True
    supports_seed = True
    supports_loglikelihood = False
    supports_grammar = False
    max_concurrency = 16

    def __init__(self, base_url: str, options: OpenAIOptions):
        # The SDK is imported here, not at module level: the registry imports this module
        # before checking ``requires``, so a missing package is then reported cleanly.
        import openai

        self.base_urls = split_base_urls(base_url)
        self.base_url = ",".join(self.base_urls)  # one server: its URL, as before pools
        self.options = options
        self.max_concurrency = options.max_concurrency * len(self.base_urls)
        self._key_was_set = bool(os.environ.get(options.api_key_env))
        self._clients = [
            openai.OpenAI(
                base_url=url,
                api_key=os.environ.get(options.api_key_env) or DUMMY_KEY,
                timeout=options.timeout,
                max_retries=0,  # LLM retries with back-off and counts them; no double retrying
            )
            for url in self.base_urls
        ]
        self.pool = ServerPool(len(self.base_urls), options.max_concurrency, options.cooldown)
        self.model = options.model  # set first: error messages name it
        if self.model is None:
            self.model = self._discover_model()
        # part of every cache key: one server's stays f"{url}#{model}", so old caches hold
        self.model_id = f"{self.base_url}#{self.model}"
        # what this backend can do depends on the server, so the options narrow the flags
        self.supports_chat = options.chat
        self.supports_completion = options.completion
        self.supports_logprobs = options.logprobs
        self.supports_json_schema = options.json_schema

    def check_request(self, request: Request) -> None:
        if request.kind == "completion" and request.params.json_schema is not None:
            raise UnsupportedCapability(
                f"'openai:' ({self.base_url}) cannot constrain a plain-prompt completion to a "
                "JSON schema: OpenAI-compatible servers have no common parameter for it",
                fix="send the request as chat messages (response_format is used then), or "
                "use 'llamacpp:' for schema-constrained plain prompts",
            )

    def complete(self, request: Request, sample_index: int = 0) -> Completion:
        self.check_request(request)  # also here: a server would silently ignore the schema
        args = self._common_args(request, sample_index)
        ticket: Ticket = self.pool.acquire()
        client, down = self._clients[ticket.server], False
        try:
            if request.kind == "chat":
                return _chat_completion(
                    client.chat.completions.create(
                        messages=[m.model_dump() for m in request.messages or ()], **args
                    )
                )
            return _text_completion(client.completions.create(prompt=request.prompt, **args))
        except Exception as exc:
            down = _server_seems_down(exc)
            raise self._backend_error(exc, self.base_urls[ticket.server]) from exc
        finally:
            self.pool.release(ticket, down=down)

    def close(self) -> None:
        for client in self._clients:
            client.close()
        super().close()

    def _common_args(self, request: Request, sample_index: int) -> dict[str, Any]:
        params = request.params
        args: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
        }
        if params.stop:
            args["stop"] = list(params.stop)
        for penalty in ("presence_penalty", "frequency_penalty"):
            if getattr(params, penalty):
                args[penalty] = getattr(params, penalty)
        seed = sample_seed(params.seed, sample_index)
        if seed is not None:
            args["seed"] = seed
        if params.logprobs is not None:
            if request.kind == "chat":
                args.update(logprobs=True, top_logprobs=params.logprobs)
            else:
                args["logprobs"] = params.logprobs
        if params.json_schema is not None:  # chat only: check_request refuses the rest
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": params.json_schema, "strict": True},
            }
        return args

    def _discover_model(self) -> str:
        """The one model the first answering server serves, checked to be served by every
        other answering server of a pool (one that does not answer is left to the calls)."""
        served: dict[str, list[str]] = {}
        failures: list[tuple[BackendError, Exception]] = []
        for url, client in zip(self.base_urls, self._clients, strict=True):
            try:
                served[url] = [m.id for m in client.models.list()]
            except Exception as exc:
                failures.append((self._backend_error(exc, url), exc))
        if not served:
            error, exc = failures[0]
            raise BackendError(
                f"no model named in the model string, and listing the models failed: "
                f"{error.message}",
                fix=f"name the model: openai:{self.base_url}?model=NAME; or {error.fix}",
            ) from exc
        first, names = next(iter(served.items()))
        if len(names) != 1:
            raise BadModelString(
                f"the model string names no model and the server at {first} serves "
                f"{len(names)} models ({_listed(names)}), so rolecall cannot pick one",
                fix=f"add ?model=NAME to openai:{self.base_url}",
            )
        for url, others in served.items():
            if names[0] not in others:
                raise BadModelString(
                    f"the server {url} does not serve '{names[0]}', which {first} serves "
                    f"(it serves {_listed(others)}); a pool's servers must serve one model",
                    fix=f"serve '{names[0]}' on {url} too, or leave {url} out of the pool",
                )
        return names[0]

    def _backend_error(self, exc: Exception, url: str) -> BackendError:
        """Translate an SDK exception from the server at ``url``: transient ones are
        retried by ``LLM``."""
        import openai

        where = f"OpenAI-compatible server {url} (model {self.model or '?'})"
        if isinstance(exc, BackendError):  # raised by the response parsing here
            return BackendError(f"{where}: {exc.message}", exc.fix, exc.transient)
        if isinstance(exc, openai.APITimeoutError):
            return BackendError(
                f"{where}: no answer within {self.options.timeout:g}s",
                fix="raise ?timeout=SECONDS or lower max_tokens/concurrency",
                transient=True,
            )
        if isinstance(exc, openai.APIConnectionError):
            return BackendError(
                f"{where}: cannot connect ({_cause(exc)})",
                fix="start the server, or check the host and port in the URL",
                transient=True,
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            # the SDK's message repeats the status ("Error code: 500 - {...}"): drop that
            message = re.sub(r"^Error code: \d+ - ", "", exc.message)
            detail = f"{where}: HTTP {status}: {_short(message)}"
            if status >= 500 and _is_request_validation_error(message):
                return BackendError(detail, fix=self._status_fix(400, url, message))
            if status >= 500 or status in _TRANSIENT_STATUS:
                return BackendError(
                    detail, fix="wait for the server, or lower the concurrency", transient=True
                )
            return BackendError(detail, fix=self._status_fix(status, url, message))
        if isinstance(exc, openai.OpenAIError):  # e.g. a response that is not the API's JSON
            return BackendError(
                f"{where}: {_short(str(exc))}",
                fix="check that the URL points at an OpenAI-compatible API",
            )
        return BackendError(f"{where}: {type(exc).__name__}: {_short(str(exc))}")

    def _status_fix(self, status: int, url: str, message: str = "") -> str:
        env = self.options.api_key_env
        if status == 401:
            state = "is set but was refused" if self._key_was_set else "is not set"
            return (
                f"set the environment variable {env} to a valid API key ({env} {state}); "
                "or name another variable with ?api_key_env=NAME"
            )
        if status == 403:
            return f"the key in {env} has no access to model '{self.model}'; use another key"
        if status == 404:
            return (
                f"check the model name (?model={self.model}; GET {url}/models "
                "lists them) and that the base URL ends with /v1; for a chat-only "
                "server add ?completion=false, for a model without chat template "
                "?chat=false"
            )
        if "response_format" in message:
            return (
                "this server does not take response_format with a JSON schema: add "
                "?json_schema=false to the model string so that such requests are "
                "refused up front, or serve the model with vLLM, SGLang or llama-server"
            )
        return (
            "the server refused the request's parameters; if it cannot do logprobs, "
            "json_schema or chat, say so in the model string (?logprobs=false, "
            "?json_schema=false, ?chat=false)"
        )


def _server_seems_down(exc: Exception) -> bool:
    """Whether a failed call says more about the server than about the request: no
    connection, no answer in time, or a 5xx that is not a refused request body."""
    import openai

    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is one too
        return True
    return (
        isinstance(exc, openai.APIStatusError)
        and exc.status_code >= 500
        and not _is_request_validation_error(exc.message)
    )


def _listed(names: list[str]) -> str:
    return ", ".join(names[:20]) + (", ..." if len(names) > 20 else "") or "none"


def _is_request_validation_error(message: str) -> bool:
    # subtle: llama-cpp-python's server answers a request it cannot parse (for example
    # response_format type json_schema) with HTTP 500 and a pydantic error located in the
    # body; that is the request's fault, and retrying it only wastes the retries.
    return "validation error" in message and "'body'" in message


def _text_completion(response: Any) -> Completion:
    """Legacy ``/completions`` response: ``logprobs.tokens/token_logprobs/top_logprobs``."""
    choice = _first_choice(response)
    tokens = None
    raw = getattr(choice, "logprobs", None)
    if raw is not None and raw.tokens is not None:
        tokens = []
        tops = raw.top_logprobs or []
        pairs = zip(raw.tokens, raw.token_logprobs or (), strict=False)  # lax servers
        for i, (token, logprob) in enumerate(pairs):
            if logprob is None:  # subtle: only an echoed first prompt token has none
                continue
            top = tops[i] if i < len(tops) and tops[i] else {}
            alts = sorted(
                (TopLogprob(token=t, logprob=_finite(lp)) for t, lp in top.items()),
                key=lambda a: -a.logprob,
            )
            tokens.append(TokenLogprob(token=token, logprob=_finite(logprob), top=alts))
    return _completion(response, choice.text or "", choice.finish_reason, tokens)


def _chat_completion(response: Any) -> Completion:
    """Chat response: ``choices[0].logprobs.content[i]`` with its ``top_logprobs``."""
    choice = _first_choice(response)
    tokens = None
    raw = getattr(choice, "logprobs", None)
    if raw is not None and raw.content is not None:
        tokens = [
            TokenLogprob(
                token=item.token,
                logprob=_finite(item.logprob),
                top=sorted(
                    (
                        TopLogprob(token=alt.token, logprob=_finite(alt.logprob))
                        for alt in item.top_logprobs or ()
                    ),
                    key=lambda a: -a.logprob,
                ),
            )
            for item in raw.content
        ]
    return _completion(response, choice.message.content or "", choice.finish_reason, tokens)


def _completion(
    response: Any, text: str, finish: str | None, tokens: list[TokenLogprob] | None
) -> Completion:
    usage = getattr(response, "usage", None)
    tokens_out = (usage.completion_tokens if usage else 0) or len(tokens or ())
    return Completion(
        text=text,
        finish_reason=finish,
        logprobs=tokens,
        tokens_in=(usage.prompt_tokens if usage else 0) or 0,
        tokens_out=tokens_out or 0,
    )


def _first_choice(response: Any) -> Any:
    if not getattr(response, "choices", None):
        raise BackendError(
            "the server answered with no choices",
            fix="check that the URL points at an OpenAI-compatible API",
        )
    return response.choices[0]


def _finite(value: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else LOGPROB_FLOOR


def _cause(exc: BaseException) -> str:
    root = exc.__cause__ or exc.__context__
    return _short(str(root or exc) or type(root or exc).__name__)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


register_backend(
    "openai",
    BackendEntry(
        factory=OpenAIBackend,
        options=OpenAIOptions,
        summary="any OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp server, hosted)",
        requires=("openai",),
    ),
)
