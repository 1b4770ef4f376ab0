"""A fake LLM backend for unit tests, registered through the real registry.

``fake:NAME?delay=0.05&calls_file=/tmp/calls&fail_first=2`` answers deterministically from
(prompt, seed, sample index). ``calls_file`` gets one line per real call, so a test can
count the calls a subprocess made; ``fail_first`` makes the first k calls fail transiently,
``fail_after`` every call after the first k fail for good (a server that died mid-run);
``crash=true`` kills the process with SIGSEGV on the first call.
Import this module (or set ``ROLECALL_PLUGINS=tests.fakes``) to register the scheme.

A test module's own scripted backend is registered per test, not at import time:
``use_backend(monkeypatch, SCHEME, ENTRY)`` in an autouse fixture, undone after the test.
"""

from __future__ import annotations

import hashlib
import os
import signal
import threading
import time

from pydantic import BaseModel, ConfigDict

from rolecall.errors import BackendError
from rolecall.llm import registry
from rolecall.llm.base import Backend, Completion, Request, TokenLogprob, TopLogprob, sample_seed
from rolecall.llm.registry import BackendEntry, register_backend

WORDS = ["안녕하세요", "오늘", "날씨가", "좋네요", "식사는", "하셨어요", "어르신", "산책"]


class FakeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delay: float = 0.0
    calls_file: str | None = None
    fail_first: int = 0
    fail_after: int | None = None
    permanent: bool = False
    crash: bool = False  # die by SIGSEGV on the first call, as a broken native build does


class FakeBackend(Backend):
    scheme = "fake"
    supports_chat = True
    supports_logprobs = True
    supports_loglikelihood = True
    supports_json_schema = False
    supports_seed = True
    max_concurrency = 8

    def __init__(self, name: str, options: FakeOptions):
        self.model_id = f"fake-{name}"
        self.options = options
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request: Request, sample_index: int = 0) -> Completion:
        with self._lock:
            self.calls += 1
            number = self.calls
            if self.options.calls_file:
                with open(self.options.calls_file, "a", encoding="utf-8") as handle:
                    handle.write(f"{number}\n")
        if self.options.crash:
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.options.delay:
            time.sleep(self.options.delay)
        if number <= self.options.fail_first or self.options.permanent:
            raise BackendError(f"fake failure {number}", transient=not self.options.permanent)
        if self.options.fail_after is not None and number > self.options.fail_after:
            raise BackendError(f"fake failure {number}: the server died", transient=False)
        prompt = request.prompt or " ".join(m.content for m in request.messages)
        if request.score_text is not None:
            tokens = request.score_text.split()
            lps = [TokenLogprob(token=t, logprob=-1.0 - i * 0.1) for i, t in enumerate(tokens)]
            return Completion(text=request.score_text, logprobs=lps, tokens_in=len(tokens))
        seed = sample_seed(request.params.seed, sample_index)
        digest = hashlib.sha256(f"{prompt}|{seed}".encode()).digest()
        count = min(request.params.max_tokens, 3 + digest[0] % 4)
        words = [WORDS[digest[i + 1] % len(WORDS)] for i in range(count)]
        logprobs = None
        if request.params.logprobs is not None:
            top = [TopLogprob(token=w, logprob=-0.5) for w in WORDS[: request.params.logprobs]]
            logprobs = [TokenLogprob(token=w, logprob=-0.5, top=top) for w in words]
        return Completion(
            text=" ".join(words),
            finish_reason="stop",
            tokens_in=len(prompt.split()),
            tokens_out=count,
            logprobs=logprobs,
        )


register_backend(
    "fake",
    BackendEntry(factory=FakeBackend, options=FakeOptions, summary="deterministic fake for tests"),
)


def use_backend(monkeypatch, scheme: str, entry: BackendEntry) -> None:
    """Register ``scheme`` for one test (``monkeypatch`` removes it afterwards)."""
    monkeypatch.setitem(registry._REGISTRY, scheme, entry)
