"""The one LLM interface every backend implements.

A ``Request`` is one of three kinds, told apart by its fields:

- completion: ``prompt`` is set;
- chat: ``messages`` is set;
- scoring: ``prompt`` and ``score_text`` are set: the backend returns the log-likelihood of
  ``score_text`` as a continuation of ``prompt`` (for perplexity and label-word judges),
  without generating anything.

A backend implements one method, ``complete(request, sample_index)``, returning one
``Completion``. ``n`` samples are ``n`` calls with sample indices 0..n-1 (each cached
separately, see ``cache.py``); a backend derives the sample's seed from the request's seed
and the index so that samples differ but re-runs repeat. Capabilities are class attributes;
``check_capabilities`` refuses a request a backend cannot serve instead of falling back.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rolecall.errors import UnsupportedCapability


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "user", "assistant"]
    content: str


class SamplingParams(BaseModel):
    """Sampling options. ``logprobs``: None = off, k >= 0 = chosen token plus top-k."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(256, ge=1, le=32768)
    stop: tuple[str, ...] = ()
    seed: int | None = None
    # OpenAI semantics: subtract presence (once) and frequency (per occurrence) from the
    # logits of tokens already generated; small base models loop without them.
    presence_penalty: float = Field(0.0, ge=-2.0, le=2.0)
    frequency_penalty: float = Field(0.0, ge=-2.0, le=2.0)
    logprobs: int | None = Field(None, ge=0, le=20)
    json_schema: dict[str, Any] | None = None
    grammar: str | None = None  # GBNF (llama.cpp grammar syntax)

    @model_validator(mode="after")
    def _one_constraint(self):
        if self.json_schema is not None and self.grammar is not None:
            raise ValueError("give either json_schema or grammar, not both")
        return self


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    prompt: str | None = None
    messages: tuple[Message, ...] | None = None
    score_text: str | None = None
    params: SamplingParams = SamplingParams()

    @model_validator(mode="after")
    def _one_kind(self):
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("a request needs exactly one of prompt or messages")
        if self.score_text is not None and self.prompt is None:
            raise ValueError("score_text (log-likelihood) needs a plain prompt, not messages")
        if self.score_text == "":
            raise ValueError("score_text must not be empty")
        return self

    @property
    def kind(self) -> Literal["completion", "chat", "score"]:
        if self.score_text is not None:
            return "score"
        return "chat" if self.messages is not None else "completion"


class TopLogprob(BaseModel):
    token: str
    logprob: float


class TokenLogprob(BaseModel):
    token: str
    logprob: float
    top: list[TopLogprob] = []


class Completion(BaseModel):
    """One sample. For scoring requests ``text`` is the scored text and ``logprobs`` its tokens."""

    text: str
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    logprobs: list[TokenLogprob] | None = None

    @property
    def loglikelihood(self) -> float:
        if self.logprobs is None:
            raise ValueError("this completion has no logprobs")
        return sum(t.logprob for t in self.logprobs)

    @property
    def perplexity(self) -> float:
        if not self.logprobs:
            raise ValueError("this completion has no logprobs")
        return math.exp(-self.loglikelihood / len(self.logprobs))


class Backend(ABC):
    """Base class of every backend. Subclasses set the capability flags and ``complete``.

    ``model_id`` names the exact model for cache keys and manifests (a path plus a file
    hash, or the server's model name). ``max_concurrency`` bounds concurrent calls: 1 for
    in-process backends, whose libraries are not thread-safe.
    """

    scheme: ClassVar[str]
    supports_completion: ClassVar[bool] = True
    supports_chat: ClassVar[bool] = False
    supports_logprobs: ClassVar[bool] = False
    supports_loglikelihood: ClassVar[bool] = False
    supports_json_schema: ClassVar[bool] = False
    supports_grammar: ClassVar[bool] = False
    supports_seed: ClassVar[bool] = False
    max_concurrency: ClassVar[int] = 1

    model_id: str

    @abstractmethod
    def complete(self, request: Request, sample_index: int = 0) -> Completion:
        """Run one request and return sample number ``sample_index``."""

    def check_request(self, request: Request) -> None:  # noqa: B027 - optional hook
        """Raise ``UnsupportedCapability`` for a combination the flags cannot express
        (e.g. a JSON schema on a plain-prompt completion); called before any call."""

    def executor(self) -> ThreadPoolExecutor:
        """The threads that run this backend's calls, made on first use.

        subtle: in-process backends (``max_concurrency = 1``) always run on the same one
        thread: llama.cpp's OpenMP thread team belongs to the calling thread, and calling
        from a new thread each time leaves the old team spinning (measured: ~25% slower on
        2 cores). Shared by every ``LLM`` on this backend, so the bound holds across them.
        """
        if getattr(self, "_executor", None) is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self.max_concurrency, thread_name_prefix=f"rolecall-{self.scheme}"
            )
        return self._executor

    def close(self) -> None:
        """Release resources (threads, files, connections); subclasses call super()."""
        if getattr(self, "_executor", None) is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    def capabilities(self) -> dict[str, bool]:
        """The backend's capabilities; an instance may narrow its class's (e.g. no chat
        template in this model file), so ask the instance, not the class."""
        return {
            name.removeprefix("supports_"): bool(getattr(self, name))
            for name in dir(self)
            if name.startswith("supports_")
        }


def sample_seed(seed: int | None, sample_index: int) -> int | None:
    """The seed for one sample: distinct per index, repeatable across runs."""
    if seed is None:
        return None if sample_index == 0 else sample_index
    return seed + sample_index


def first_stop(text: str, stops: tuple[str, ...]) -> int | None:
    """Where the earliest of ``stops`` begins in ``text`` (empty stops ignored), or None."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(hits) if hits else None


def common_prefix(prompt_ids: list[int], full_ids: list[int]) -> int:
    """How many leading tokens of ``prompt + continuation`` belong to the prompt alone.

    subtle: tokenizing the joined text can merge characters across the boundary (a prompt
    ending in "오늘" and a continuation "은" may become one token "오늘은"). Then the prompt's
    tokens are not a prefix of the joined tokens, and a scorer starts from the first token
    where they differ: the scored tokens cover the whole continuation plus a few prompt
    characters, never less than the continuation. Without a merge this is exactly the
    prompt's token count.
    """
    common = 0
    for a, b in zip(prompt_ids, full_ids, strict=False):
        if a != b:
            break
        common += 1
    return common


def check_capabilities(backend: Backend, request: Request) -> None:
    """Raise ``UnsupportedCapability`` if ``backend`` cannot serve ``request`` as asked."""
    needs: list[tuple[str, bool]] = [
        ("completion", request.kind == "completion"),
        ("chat", request.kind == "chat"),
        ("loglikelihood", request.kind == "score"),
        ("logprobs", request.params.logprobs is not None),
        ("json_schema", request.params.json_schema is not None),
        ("grammar", request.params.grammar is not None),
    ]
    caps = backend.capabilities()
    for cap, needed in needs:
        if needed and not caps.get(cap, False):
            have = ", ".join(k for k, v in caps.items() if v) or "nothing"
            raise UnsupportedCapability(
                f"backend '{backend.scheme}' ({backend.model_id}) does not support {cap}; "
                f"it supports: {have}",
                fix=_CAPABILITY_FIX.get(cap, "choose a backend that supports it"),
            )
    backend.check_request(request)


_CAPABILITY_FIX = {
    "chat": "use a plain prompt (completion), or a backend/model with a chat template",
    "loglikelihood": "use 'llamacpp:' or 'hf:' for perplexity and label-word scoring",
    "logprobs": "use 'llamacpp:', 'hf:' or an OpenAI-compatible server that returns logprobs",
    "json_schema": "use 'llamacpp:' or an OpenAI-compatible server with response_format",
    "grammar": "use 'llamacpp:' (GBNF grammars) or switch to json_schema",
}
