"""The ``llamacpp:`` backend: a GGUF model in-process through llama-cpp-python.

``llamacpp:embedded`` is the default model of every command (Gemma 3 270M, see
``embedded.py``); ``llamacpp:/path/model.gguf`` opens any other GGUF file.

Three paths, one model instance (opened with ``logits_all=False``, which keeps memory
small: Gemma's vocabulary has 262k entries):

- plain generation goes through ``Llama.create_completion`` unchanged;
- generation with logprobs runs ``Llama.generate`` token by token and reads each step's
  logits itself (llama-cpp-python's own logprobs need ``logits_all=True`` and sort the
  whole vocabulary in Python for every token, about 0.3 s a token here);
- scoring (log-likelihood of a given continuation) evaluates prompt + continuation once
  with logits requested for the continuation positions only.

Logprobs are those of the model's raw distribution (log-softmax of the logits, before
temperature, top-p or grammar), which is what perplexity and G-Eval weighting need.
Sampling uses only temperature and top-p (llama.cpp's top-k and min-p are switched off), so
the parameters mean what they mean on an OpenAI-compatible server. Presence and frequency
penalties count the last ``last_n_tokens_size`` tokens (llama.cpp's window, set to n_ctx
here), prompt included, where OpenAI counts the completion only.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rolecall.errors import ConfigError, InputFileError, UnsupportedCapability
from rolecall.llm.base import (
    Backend,
    Completion,
    Request,
    SamplingParams,
    TokenLogprob,
    TopLogprob,
    common_prefix,
    first_stop,
)
from rolecall.llm.embedded import MODEL_NAME, embedded_model_path
from rolecall.llm.registry import BackendEntry, register_backend


class LlamaCppOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n_ctx: int = Field(4096, ge=128, le=131072)
    n_threads: int | None = Field(None, ge=1)
    n_batch: int = Field(512, ge=8)
    n_gpu_layers: int = 0
    # Reusing the KV cache of a shared prompt prefix is faster, but the suffix is then
    # evaluated in a different batch shape, which changes logits in the last bits and can
    # flip a sampled token: off by default so that a call gives the same text every time.
    prefix_cache: bool = False


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits.astype(np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


class LlamaCppBackend(Backend):
    scheme = "llamacpp"
    supports_chat = True  # when the GGUF carries a chat template; checked per request
    supports_logprobs = True
    supports_loglikelihood = True
    supports_json_schema = True
    supports_grammar = True
    supports_seed = True
    max_concurrency = 1

    def __init__(self, location: str, options: LlamaCppOptions):
        if location == "embedded":
            path = embedded_model_path()
            self.model_id = f"embedded/{MODEL_NAME}"
        else:
            path = Path(location).expanduser()
            if not path.is_file():
                raise InputFileError(
                    path,
                    "GGUF model file not found",
                    fix="give the path of a .gguf file, or use "
                    "'llamacpp:embedded' for the built-in model",
                )
            stat = path.stat()
            self.model_id = f"{path.resolve()}@{stat.st_size}-{int(stat.st_mtime)}"
        self.path = path
        self.options = options
        self._lock = threading.Lock()
        self._llm = self._open(path, options)
        self._vocab_size = self._llm.n_vocab()
        self._chat_template = self._llm.metadata.get("tokenizer.chat_template")
        self.supports_chat = bool(self._chat_template)  # a base model may have none
        self._kv_prefix: list[int] | None = None  # tokens whose KV the scorer has kept

    @staticmethod
    def _open(path: Path, options: LlamaCppOptions):
        from llama_cpp import Llama

        route_llama_logs()

        try:
            return Llama(
                model_path=str(path),
                n_ctx=options.n_ctx,
                n_batch=options.n_batch,
                n_threads=options.n_threads or max(1, (os.cpu_count() or 2)),
                n_gpu_layers=options.n_gpu_layers,
                logits_all=False,
                last_n_tokens_size=options.n_ctx,
                verbose=False,
            )
        except ValueError as exc:
            raise InputFileError(
                path,
                f"llama.cpp cannot open this model ({exc})",
                fix="check that it is a complete GGUF file",
            ) from None

    # -- the one method -------------------------------------------------------------
    def complete(self, request: Request, sample_index: int = 0) -> Completion:
        params = request.params
        with self._lock:
            prompt_tokens = self._prompt_tokens(request)
            self._check_context(prompt_tokens, 0 if request.score_text else params.max_tokens)
            if request.kind == "score":
                return self._score(
                    prompt_tokens, request.prompt, request.score_text, params.logprobs or 0
                )
            self._kv_prefix = None  # generation rewrites the KV cache
            seed = (params.seed or 0) + sample_index
            if not self.options.prefix_cache:
                self._llm.reset()
            grammar = self._grammar(params)
            if params.logprobs is None:
                return self._generate_fast(prompt_tokens, params, seed, grammar)
            return self._generate_with_logprobs(prompt_tokens, params, seed, grammar)

    # -- prompts --------------------------------------------------------------------
    def _prompt_tokens(self, request: Request) -> list[int]:
        if request.kind != "chat":
            return self._llm.tokenize(request.prompt.encode("utf-8"), add_bos=True, special=False)
        if not self._chat_template:
            raise UnsupportedCapability(
                f"the model {self.model_id} has no chat template, so it cannot take messages",
                fix="send a plain prompt (few-shot completion), or use a chat model",
            )
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        formatter = Jinja2ChatFormatter(
            self._chat_template,
            eos_token=self._token_text(self._llm.token_eos()),
            bos_token=self._token_text(self._llm.token_bos()),
            add_generation_prompt=True,
        )
        rendered = formatter(messages=[m.model_dump() for m in request.messages]).prompt
        # subtle: the rendered template already holds the BOS text, so no second BOS.
        return self._llm.tokenize(rendered.encode("utf-8"), add_bos=False, special=True)

    def _token_text(self, token: int) -> str:
        return self._llm._model.token_get_text(token)

    def _check_context(self, prompt_tokens: list[int], max_tokens: int) -> None:
        if len(prompt_tokens) + max_tokens > self.options.n_ctx:
            raise ConfigError(
                f"prompt ({len(prompt_tokens)} tokens) + max_tokens ({max_tokens}) exceeds "
                f"the context window ({self.options.n_ctx})",
                fix="shorten the prompt, lower max_tokens, or add ?n_ctx=N to the model string",
            )

    @staticmethod
    def _grammar(params: SamplingParams):
        if params.json_schema is None and params.grammar is None:
            return None
        from llama_cpp import LlamaGrammar

        try:
            if params.json_schema is not None:
                return LlamaGrammar.from_json_schema(json.dumps(params.json_schema), verbose=False)
            return LlamaGrammar.from_string(params.grammar, verbose=False)
        except Exception as exc:
            raise ConfigError(
                f"llama.cpp cannot compile the output constraint ({exc})",
                fix="check the JSON schema / GBNF grammar",
            ) from None

    # -- generation -----------------------------------------------------------------
    def _generate_fast(self, tokens, params: SamplingParams, seed: int, grammar) -> Completion:
        out = self._llm.create_completion(
            tokens,
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=0,
            min_p=0.0,
            repeat_penalty=1.0,
            presence_penalty=params.presence_penalty,
            frequency_penalty=params.frequency_penalty,
            stop=list(params.stop) or None,
            seed=seed,
            grammar=grammar,
        )
        choice = out["choices"][0]
        return Completion(
            text=choice["text"],
            finish_reason=choice["finish_reason"],
            tokens_in=out["usage"]["prompt_tokens"],
            tokens_out=out["usage"]["completion_tokens"],
        )

    def _generate_with_logprobs(
        self, tokens, params: SamplingParams, seed: int, grammar
    ) -> Completion:
        import llama_cpp

        llm, k = self._llm, params.logprobs
        llm.set_seed(seed)
        out: list[int] = []
        steps: list[TokenLogprob] = []
        text, finish = "", "length"
        stream = llm.generate(
            tokens,
            top_k=0,
            top_p=params.top_p,
            min_p=0.0,
            temp=params.temperature,
            repeat_penalty=1.0,
            grammar=grammar,
            presence_penalty=params.presence_penalty,
            frequency_penalty=params.frequency_penalty,
            reset=True,
        )
        for token in stream:
            if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                finish = "stop"
                break
            # the logits this token was sampled from are the context's last output row
            row = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(self._vocab_size,))
            steps.append(self._token_logprob(log_softmax(row), token, k, out))
            out.append(token)
            text = llm.detokenize(out).decode("utf-8", errors="ignore")
            cut = first_stop(text, params.stop)
            if cut is not None:
                text, finish = text[:cut], "stop"
                break
            if len(out) >= params.max_tokens:
                break
        stream.close()
        return Completion(
            text=text,
            finish_reason=finish,
            tokens_in=len(tokens),
            tokens_out=len(out),
            logprobs=steps,
        )

    def _token_logprob(
        self, logprobs: np.ndarray, token: int, k: int, previous: list[int]
    ) -> TokenLogprob:
        top: list[TopLogprob] = []
        if k:
            best = np.argpartition(-logprobs, k)[:k]
            best = best[np.argsort(-logprobs[best])]
            top = [
                TopLogprob(token=self._piece(int(i), previous), logprob=float(logprobs[i]))
                for i in best
            ]
        return TokenLogprob(
            token=self._piece(token, previous), logprob=float(logprobs[token]), top=top
        )

    def _piece(self, token: int, previous: list[int]) -> str:
        return self._llm.detokenize([token], prev_tokens=previous).decode("utf-8", errors="replace")

    # -- scoring --------------------------------------------------------------------
    def _score(
        self, prompt_tokens: list[int], prompt: str, continuation: str, k: int
    ) -> Completion:
        llm = self._llm
        full = llm.tokenize((prompt + continuation).encode("utf-8"), add_bos=True, special=False)
        # subtle: tokens can merge across the prompt/continuation boundary; the scored
        # tokens are those after the longest common prefix of the two tokenisations.
        start = common_prefix(prompt_tokens, full)
        start = max(start, 1)  # the first token (BOS) has no prediction to score
        self._check_context(full, 0)
        logits = self._logits_from(full, start - 1)
        steps = []
        for j in range(start, len(full)):
            lp = log_softmax(logits[j - start])
            steps.append(self._token_logprob(lp, full[j], k, full[:j]))
        return Completion(
            text=continuation,
            finish_reason="score",
            tokens_in=len(full),
            tokens_out=0,
            logprobs=steps,
        )

    def _logits_from(self, tokens: list[int], first: int) -> np.ndarray:
        """Logits predicting tokens[first + 1:], one row per position ``first..len-2``.

        The prefix ``tokens[:first]`` is evaluated in fixed chunks from position 0 and its
        KV cache is kept, so scoring several continuations of one prompt (a judge's label
        words) evaluates the prompt once. subtle: the prefix is always computed the same
        way, from scratch, so a reused cache gives the very numbers a fresh one would; the
        results never depend on what was scored before.
        """
        llm = self._llm
        llm.reset()  # n_tokens = 0: generation afterwards re-evaluates from scratch
        prefix = tokens[:first]
        if self._kv_prefix != prefix:
            self._kv_prefix = None
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
            for begin in range(0, len(prefix), llm.n_batch):
                self._decode(prefix[begin : begin + llm.n_batch], begin, logits=False)
            self._kv_prefix = prefix
        else:
            llm._ctx.kv_cache_seq_rm(-1, first, -1)  # drop the previous continuation
        rows = []
        for begin in range(first, len(tokens) - 1, llm.n_batch):
            chunk = tokens[begin : min(len(tokens) - 1, begin + llm.n_batch)]
            self._decode(chunk, begin, logits=True)
            flat = np.ctypeslib.as_array(
                llm._ctx.get_logits(), shape=(len(chunk) * self._vocab_size,)
            )
            rows.append(flat.reshape(len(chunk), self._vocab_size).copy())
        return np.concatenate(rows)

    def _decode(self, chunk: list[int], n_past: int, logits: bool) -> None:
        self._llm._batch.set_batch(batch=chunk, n_past=n_past, logits_all=logits)
        self._llm._ctx.decode(self._llm._batch)


_log_callback = None


def route_llama_logs() -> None:
    """Send llama.cpp's own log lines to Python logging (debug) instead of stderr."""
    global _log_callback
    if _log_callback is not None:
        return
    import ctypes
    import logging

    import llama_cpp

    logger = logging.getLogger("rolecall.llamacpp")

    @llama_cpp.llama_log_callback
    def forward(level, text, user_data):
        logger.debug(text.decode("utf-8", errors="replace").rstrip())

    _log_callback = forward  # keep a reference: ctypes callbacks must outlive their use
    llama_cpp.llama_log_set(forward, ctypes.c_void_p(0))


register_backend(
    "llamacpp",
    BackendEntry(
        factory=LlamaCppBackend,
        options=LlamaCppOptions,
        requires=("llama_cpp",),
        summary="GGUF in-process via llama-cpp-python; 'embedded' = Gemma 3 270M",
    ),
)
