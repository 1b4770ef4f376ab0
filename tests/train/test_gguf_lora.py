"""A detox adapter trained a few steps on the embedded model, exported as a GGUF LoRA adapter
and applied by llama.cpp on the embedded Q4_K_M GGUF."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("llama_cpp")
gguf = pytest.importorskip("gguf")

from rolecall.errors import ConfigError  # noqa: E402
from rolecall.train.gguf_lora import (  # noqa: E402
    LlamaCppRewriter,
    adapter_gguf,
    gguf_tensor_name,
)
from rolecall.train.keep_content import KeepContent  # noqa: E402
from tests.train.detox_pairs import PAIRS  # noqa: E402


def test_peft_keys_map_to_llamacpp_names():
    key = "base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight"
    assert gguf_tensor_name(key) == ("blk.3.attn_q.weight", "a")
    key = "base_model.model.model.layers.17.mlp.down_proj.lora_B.weight"
    assert gguf_tensor_name(key) == ("blk.17.ffn_down.weight", "b")
    with pytest.raises(ConfigError, match="no name for"):
        gguf_tensor_name("base_model.model.lm_head.lora_A.weight")


@pytest.mark.embedded
def test_exported_adapter_changes_llamacpp_and_scale_zero_is_the_base(tmp_path):
    from rolecall.train.detox_model import DetoxModel, DetoxSettings
    from rolecall.train.loop import TrainConfig

    settings = DetoxSettings(max_length=96, response_max=32, copy_bias=0.0)  # plain greedy
    model = DetoxModel.create("embedded", settings, seed=0)
    config = TrainConfig(epochs=1, batch_size=4, lr=2e-2, max_steps=1)  # one large step
    model.fit_pairs(PAIRS, config, progress=False)
    model.save(tmp_path / "detox")

    path = adapter_gguf(tmp_path / "detox")
    reader = gguf.GGUFReader(str(path))
    names = {t.name for t in reader.tensors}
    assert "blk.0.attn_q.weight.lora_a" in names and "blk.0.ffn_down.weight.lora_b" in names
    kind = reader.fields["adapter.type"]
    assert bytes(kind.parts[-1]).decode() == "lora"

    texts = [p.toxic for p in PAIRS[:2]]
    adapted = list(LlamaCppRewriter(tmp_path / "detox").rewrites(texts, max_new_tokens=12))
    off = list(
        LlamaCppRewriter(tmp_path / "detox", lora_scale=0.0).rewrites(texts, max_new_tokens=12)
    )
    base = _base_rewrites(model, texts)
    assert off == base  # scale 0: the adapter adds nothing
    assert adapted != base, adapted  # the trained adapter changes what llama.cpp writes

    # content-keeping decoding on this path too, on the base alone (the one-step adapter
    # mostly writes nothing): a huge copy bias writes only the input's tokens, and a
    # minimum length keeps the rewrite from ending at its first newline
    def rewrites(keep: KeepContent) -> list[str]:
        rewriter = LlamaCppRewriter(tmp_path / "detox", lora_scale=0.0, keep=keep)
        return list(rewriter.rewrites(texts, max_new_tokens=12))

    copied = rewrites(KeepContent(copy_bias=1e4))
    assert copied != base
    for text, out in zip(texts, copied, strict=True):
        assert out and set(out.replace(" ", "")) <= set(text.replace(" ", "")), (text, out)
    long = rewrites(KeepContent(min_length_ratio=1.0))
    assert sum(len(a) > len(b) for a, b in zip(long, base, strict=True)) >= 1, (long, base)


def _base_rewrites(model, texts: list[str]) -> list[str]:
    """The embedded GGUF alone (no adapter), greedy, prompted as the rewriter does."""
    from llama_cpp import Llama

    from rolecall.llm.embedded import embedded_model_path

    llm = Llama(model_path=str(embedded_model_path()), n_ctx=512, verbose=False)
    out = []
    for text in texts:
        prompt = model.rewrite_prompt(text)
        llm.reset()
        done = llm.create_completion(
            llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False),
            max_tokens=12,
            temperature=0.0,
            top_k=1,
            repeat_penalty=1.0,
            stop=["\n"],
        )
        out.append(done["choices"][0]["text"].strip().split("\n")[0].strip())
    return out
