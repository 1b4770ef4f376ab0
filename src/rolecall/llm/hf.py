"""The ``hf:`` backend: Hugging Face transformers, in-process.

Its model strings (local directories, GGUF files, ``hf:embedded``) and the loading of
their weights are in ``hf_loading.py``; nothing is ever downloaded.

This backend exists for what the others cannot do: scoring text (log-likelihood and
perplexity over one forward pass) and sharing the exact weights that training (LoRA) uses
(``load_hf_model`` loads for both).

Logprobs of generated tokens are the log-softmax of the model's *raw* logits at each step
(the unprocessed distribution: before temperature, top-p and any other logits processor),
so they are comparable with scoring requests and with other backends, and do not depend
on the sampling settings.
"""

from __future__ import annotations

import threading
from typing import Any

from rolecall.errors import BackendError
from rolecall.llm.base import (
    Backend,
    Completion,
    Request,
    SamplingParams,
    TokenLogprob,
    TopLogprob,
    check_capabilities,
    common_prefix,
    first_stop,
    sample_seed,
)
from rolecall.llm.hf_loading import (  # their home before hf_loading.py: re-exported
    HFOptions,
    ResolvedModel,
    embedded_snapshot,
    fingerprint,
    hf_model_id,
    load_hf_model,
    resolve_location,
)
from rolecall.llm.registry import BackendEntry, register_backend

__all__ = [
    "HFBackend",
    "HFOptions",
    "ResolvedModel",
    "embedded_snapshot",
    "fingerprint",
    "load_hf_model",
    "resolve_location",
]

# One lock for every hf model in the process: torch's global RNG (seeded per call) is
# shared by all of them, and the models themselves are not safe to call concurrently.
_LOCK = threading.Lock()


class _Penalties:
    """OpenAI's presence/frequency penalties over the tokens generated so far (a logits
    processor; the reported logprobs stay those of the raw distribution)."""

    def __init__(self, prompt_length: int, presence: float, frequency: float):
        self.start, self.presence, self.frequency = prompt_length, presence, frequency
        self.active = bool(presence or frequency)

    def __call__(self, input_ids, scores):
        import torch

        for row in range(input_ids.shape[0]):
            counts = torch.bincount(input_ids[row, self.start :], minlength=scores.shape[-1])
            counts = counts[: scores.shape[-1]].to(scores.dtype)
            scores[row] -= self.frequency * counts + self.presence * (counts > 0).to(scores.dtype)
        return scores


class HFBackend(Backend):
    """One transformers causal LM. Calls are serialized (``max_concurrency = 1``)."""

    scheme = "hf"
    supports_completion = True
    supports_logprobs = True
    supports_loglikelihood = True
    supports_json_schema = False
    supports_grammar = False
    supports_seed = True
    max_concurrency = 1

    def __init__(self, location: str, options: HFOptions | None = None):
        self.options = options or HFOptions()
        self.resolved = resolve_location(location, self.options.gguf_file)
        self.model, self.tokenizer = load_hf_model(location, self.options, self.resolved)
        self.device = self.model.device
        self.model_id = hf_model_id(self.resolved, str(self.model.dtype))

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    @property
    def supports_chat(self) -> bool:  # per model: needs a chat template (and ?chat=true)
        return self.options.chat and self.has_chat_template

    def complete(self, request: Request, sample_index: int = 0) -> Completion:
        check_capabilities(self, request)  # direct callers get the same refusal as LLM's
        with _LOCK:
            if request.kind == "score":
                return self._score(
                    request.prompt or "", request.score_text or "", request.params.logprobs
                )
            ids = self._prompt_ids(request)
            return self._generate(ids, request.params, sample_index)

    def close(self) -> None:
        self.model = None
        self.tokenizer = None
        super().close()

    def _start_token(self) -> int:
        """The token that starts a document: BOS, else EOS (GPT-2's "<|endoftext|>")."""
        start = self.tokenizer.bos_token_id
        start = self.tokenizer.eos_token_id if start is None else start
        if start is None:
            raise BackendError(
                f"{self.model_id}: an empty prompt needs a BOS or EOS token "
                "and this tokenizer has neither",
                fix="give a non-empty prompt",
            )
        return start

    def _prompt_ids(self, request: Request) -> list[int]:
        if request.kind == "completion":
            # a tokenizer without BOS turns "" into no tokens, and generate needs one
            return self.tokenizer(request.prompt)["input_ids"] or [self._start_token()]
        messages = [m.model_dump() for m in request.messages or ()]
        try:
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        except Exception as exc:  # jinja errors, e.g. a template that refuses "system"
            raise BackendError(
                f"the chat template of {self.model_id} failed: {exc}",
                fix="check the message roles this model's template accepts",
            ) from exc
        # The template writes the special tokens (BOS) itself; adding them again would
        # double them.
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _generate(self, ids: list[int], params: SamplingParams, index: int) -> Completion:
        import torch

        seed = sample_seed(params.seed, index)
        if seed is not None:
            torch.manual_seed(seed)
        input_ids = torch.tensor([ids], device=self.device)
        stopper = _StopStrings(self.tokenizer, params.stop, len(ids))
        penalties = _Penalties(len(ids), params.presence_penalty, params.frequency_penalty)
        with torch.inference_mode():
            out = self.model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                generation_config=self._generation_config(params),
                stopping_criteria=[stopper] if params.stop else None,
                logits_processor=[penalties] if penalties.active else None,
            )
        generated = out.sequences[0, len(ids) :].tolist()
        eos = _eos_ids(self.model.generation_config)
        ended_by_eos = bool(generated) and generated[-1] in eos
        kept = generated[:-1] if ended_by_eos else generated
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        finish = "stop" if ended_by_eos else "length"
        cut = first_stop(text, params.stop)
        if cut is not None:
            text, finish = text[:cut], "stop"
            kept = kept[: self._tokens_covering(kept, text)]
        logprobs = None
        if params.logprobs is not None:
            logits = torch.stack(out.logits[: len(kept)], dim=1)[0] if kept else None
            logprobs = self._token_logprobs(logits, kept, params.logprobs)
        return Completion(
            text=text,
            finish_reason=finish,
            tokens_in=len(ids),
            tokens_out=len(generated),
            logprobs=logprobs,
        )

    def _generation_config(self, params: SamplingParams) -> Any:
        """The request's sampling settings, every one set explicitly.

        subtle: transformers fills each *unset* (None) field from the model's shipped
        generation config (Gemma ships top_k=64, top_p=0.95), so leaving a field out would
        let the model's defaults change what the request asked for.
        """
        from transformers import GenerationConfig

        shipped = self.model.generation_config
        # greedy decoding ignores the sampling knobs (and warns when they are set)
        knobs = (
            {"temperature": params.temperature, "top_p": params.top_p, "top_k": 0, "min_p": 0.0}
            if params.temperature > 0
            else {}
        )
        return GenerationConfig(
            max_new_tokens=params.max_tokens,
            do_sample=bool(knobs),
            num_beams=1,
            repetition_penalty=1.0,
            output_logits=True,
            return_dict_in_generate=True,
            eos_token_id=shipped.eos_token_id,
            bos_token_id=shipped.bos_token_id,
            pad_token_id=self.tokenizer.pad_token_id
            if shipped.pad_token_id is None
            else shipped.pad_token_id,
            **knobs,
        )

    def _tokens_covering(self, tokens: list[int], text: str) -> int:
        """How many of ``tokens`` it takes to spell ``text`` (the part before a stop)."""
        for count in range(len(tokens) + 1):
            if self.tokenizer.decode(tokens[:count], skip_special_tokens=True).startswith(text):
                return count
        return len(tokens)

    def _token_logprobs(self, logits: Any, tokens: list[int], k: int) -> list[TokenLogprob]:
        """Chosen-token log-prob and top-``k`` alternatives for each row of ``logits``."""
        import torch

        if not tokens:
            return []
        logp = torch.log_softmax(logits.float(), dim=-1)
        chosen = logp.gather(1, torch.tensor(tokens, device=logp.device)[:, None])[:, 0]
        top_v, top_i = logp.topk(k, dim=-1) if k > 0 else (None, None)
        result = []
        for row, token in enumerate(tokens):
            top = (
                []
                if top_i is None
                else [
                    TopLogprob(token=self._piece(int(i)), logprob=float(v))
                    for v, i in zip(top_v[row].tolist(), top_i[row].tolist(), strict=True)
                ]
            )
            result.append(
                TokenLogprob(token=self._piece(token), logprob=float(chosen[row]), top=top)
            )
        return result

    def _piece(self, token: int) -> str:
        # decode, not convert_ids_to_tokens: callers compare pieces with label words, and
        # raw vocabulary entries carry "▁"/"Ġ" markers (a lone byte of a Korean syllable
        # still decodes to "\ufffd"; such tokens only make sense in sequence).
        return self.tokenizer.decode([token])

    def _score(self, prompt: str, continuation: str, top_k: int | None) -> Completion:
        """Log-likelihood of ``continuation`` after ``prompt``, in one forward pass."""
        import torch

        full = self.tokenizer(prompt + continuation)["input_ids"]
        # subtle: tokens can merge across the boundary (see common_prefix)
        context = common_prefix(self.tokenizer(prompt)["input_ids"], full)
        if context == 0:
            # subtle: with no BOS token and an empty prompt, nothing predicts the first
            # token; condition on a document-start token, like lm-eval-harness does.
            full, context = [self._start_token(), *full], 1
        if context >= len(full):
            raise BackendError(
                f"{self.model_id}: score_text {continuation!r} adds no tokens",
                fix="score a non-empty continuation",
            )
        with torch.inference_mode():
            logits = self.model(torch.tensor([full], device=self.device)).logits[0]
        # logits at position i predict token i+1
        logprobs = self._token_logprobs(logits[context - 1 : -1], full[context:], top_k or 0)
        return Completion(
            text=continuation,
            finish_reason="stop",
            tokens_in=len(full),
            tokens_out=0,
            logprobs=logprobs,
        )


def _eos_ids(generation_config: Any) -> set[int]:
    eos = generation_config.eos_token_id
    if eos is None:
        return set()
    return set(eos) if isinstance(eos, list | tuple) else {eos}


class _StopStrings:
    """A stopping criterion: ends generation once a stop string shows in the new text.

    It decodes only a window of the last tokens (enough for the longest stop string even
    at one byte per token), so a long generation costs no quadratic decoding.
    """

    def __init__(self, tokenizer: Any, stops: tuple[str, ...], prompt_length: int):
        self.tokenizer = tokenizer
        self.stops = tuple(s for s in stops if s)
        self.prompt_length = prompt_length
        longest = max((len(s.encode()) for s in self.stops), default=0)
        self.window = longest + 8

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        tail = input_ids[0, self.prompt_length :][-self.window :].tolist()
        text = self.tokenizer.decode(tail, skip_special_tokens=True)
        done = any(s in text for s in self.stops)
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


register_backend(
    "hf",
    BackendEntry(
        factory=HFBackend,
        options=HFOptions,
        summary="Hugging Face transformers in-process: local model dirs and GGUF files; "
        "log-likelihood scoring and logprobs (needs torch and transformers)",
        requires=("torch", "transformers"),
    ),
)
