"""A trained LoRA adapter as a GGUF LoRA file, and greedy detox rewriting through llama.cpp.

Rewriting through transformers on a CPU is slow (one greedy batch at a time over a
dequantized snapshot); llama.cpp runs the embedded Q4_K_M GGUF itself and applies a LoRA
adapter at run time (``Llama(model_path=..., lora_path=...)``), so a detox model trained on
the embedded base rewrites several times faster there.

The file is written the way llama.cpp's ``convert_lora_to_gguf.py`` writes one:
``general.type = "adapter"``, ``adapter.type = "lora"``, ``adapter.lora.alpha``, and for each
adapted linear layer two F32 tensors named after the base tensor, ``blk.N.attn_q.weight.lora_a``
(PEFT's ``lora_A``, ``[r, in]``) and ``.lora_b`` (``lora_B``, ``[out, r]``); numpy's row-major
shapes become GGUF's reversed ``ne``, so ``lora_a`` shares ``ne[0]`` (the input width) with the
base weight and ``lora_b`` its ``ne[1]`` (the output width), which llama.cpp checks. llama.cpp
scales by ``alpha / r``, as PEFT does. Every name is checked against the base GGUF's tensors
(``gguf.GGUFReader``) before anything is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rolecall.errors import ConfigError, InputFileError
from rolecall.train.keep_content import KeepContent, llama_processor, source

ADAPTER_FILE = "adapter.gguf"
# PEFT's key of a LoRA matrix of a transformers decoder layer
_PEFT_KEY = re.compile(
    r"^base_model\.model\.(?:model\.)?layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_([AB])\.weight$"
)
# transformers module -> llama.cpp tensor (gguf's tensor map, spelled out: Gemma 3 and Llama)
_GGUF_NAMES = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "o_proj": "attn_output",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "down_proj": "ffn_down",
}


def gguf_tensor_name(peft_key: str) -> tuple[str, str]:
    """(base tensor name, "a" or "b") of a PEFT adapter key, e.g.
    ``base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight`` ->
    ``("blk.3.attn_q.weight", "a")``."""
    found = _PEFT_KEY.match(peft_key)
    if not found or found.group(3) not in _GGUF_NAMES:
        raise ConfigError(
            f"the adapter holds a tensor llama.cpp has no name for: {peft_key}",
            fix="train with LoRA on the attention and MLP projections only "
            "(the default 'all-linear'), or rewrite with --engine transformers",
        )
    layer, _, module, which = found.groups()
    return f"blk.{layer}.{_GGUF_NAMES[module]}.weight", which.lower()


def write_gguf_lora(adapter_dir: Path, base_gguf: Path, out: Path) -> Path:
    """Write PEFT's adapter in ``adapter_dir`` as a GGUF LoRA adapter for ``base_gguf``."""
    import gguf
    from safetensors.numpy import load_file

    config_path, weights_path = (
        adapter_dir / "adapter_config.json",
        adapter_dir / "adapter_model.safetensors",
    )
    for path in (config_path, weights_path):
        if not path.is_file():
            raise InputFileError(path, "not found", fix="train the model again")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if config.get("use_rslora") or config.get("use_dora") or config.get("alpha_pattern"):
        raise ConfigError(
            "llama.cpp applies plain LoRA only (no rsLoRA, DoRA or per-module alpha)",
            fix="rewrite with --engine transformers",
        )
    base = gguf.GGUFReader(str(base_gguf))
    arch = bytes(base.fields["general.architecture"].parts[-1]).decode("utf-8")
    shapes = {t.name: [int(n) for n in t.shape] for t in base.tensors}  # ne order
    tensors: dict[str, Any] = {}
    for key, value in load_file(str(weights_path)).items():
        name, which = gguf_tensor_name(key)
        tensors[f"{name}.lora_{which}"] = value.astype("float32")
    _check_shapes(tensors, shapes, base_gguf)

    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    writer = gguf.GGUFWriter(str(partial), arch)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(config["lora_alpha"]))
    for name in sorted(tensors):
        writer.add_tensor(name, tensors[name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(out)
    return out


def _check_shapes(tensors: dict[str, Any], shapes: dict[str, list[int]], base: Path) -> None:
    for name, value in tensors.items():
        weight, which = name.rsplit(".lora_", 1)
        if weight not in shapes:
            raise ConfigError(
                f"the adapter's {weight} is not a tensor of {base.name}",
                fix="the adapter was trained on another base: rewrite with --engine transformers",
            )
        partner = tensors.get(f"{weight}.lora_{'b' if which == 'a' else 'a'}")
        ne_in, ne_out = shapes[weight][0], shapes[weight][1]
        rows, cols = value.shape
        fits = cols == ne_in if which == "a" else rows == ne_out
        if not fits or partner is None:
            raise ConfigError(
                f"the adapter's {name} {list(value.shape)} does not fit "
                f"{weight} (ne {shapes[weight]}) of {base.name}",
                fix="the adapter was trained on another base: rewrite with --engine transformers",
            )


def adapter_gguf(model_dir: Path) -> Path:
    """The model directory's GGUF adapter for the embedded GGUF, written on first use (and
    again when the PEFT adapter is newer)."""
    from rolecall.llm.embedded import embedded_model_path
    from rolecall.train.backbones.base import EMBEDDED
    from rolecall.train.generator import ADAPTER_DIR, read_model_settings
    from rolecall.train.settings import DetoxSettings

    settings = read_model_settings(model_dir, "detox", "rolecall detox train", DetoxSettings)
    if settings.base != EMBEDDED:
        raise ConfigError(
            f"llama.cpp rewrites only models trained on the embedded base, not {settings.base}",
            fix="rewrite with --engine transformers",
        )
    out = model_dir / ADAPTER_FILE
    weights = model_dir / ADAPTER_DIR / "adapter_model.safetensors"
    if out.is_file() and weights.is_file() and out.stat().st_mtime >= weights.stat().st_mtime:
        return out
    return write_gguf_lora(model_dir / ADAPTER_DIR, embedded_model_path(), out)


class LlamaCppRewriter:
    """Greedy rewrites by the embedded GGUF with a detox model's adapter (``lora_scale`` 0:
    the base alone); ``keep``: the content-keeping decoding (``keep_content.py``), the
    model's own by default."""

    def __init__(
        self,
        model_dir: Path,
        lora_scale: float = 1.0,
        n_threads: int | None = None,
        n_ctx: int = 512,
        keep: KeepContent | None = None,
    ):
        import os

        from llama_cpp import Llama

        from rolecall.llm.embedded import embedded_model_path
        from rolecall.llm.llamacpp import route_llama_logs
        from rolecall.prompts import load_template
        from rolecall.train.generator import read_model_settings
        from rolecall.train.settings import DetoxSettings

        self.settings = read_model_settings(
            model_dir, "detox", "rolecall detox train", DetoxSettings
        )
        self.template = load_template("detoxify", self.settings.language)
        self.keep = keep or KeepContent.of(self.settings)
        self._stops: list[int] | None = None
        lora = adapter_gguf(model_dir)
        route_llama_logs()  # llama.cpp's adapter notes to logging, not the terminal
        try:
            self.llm = Llama(
                model_path=str(embedded_model_path()),
                lora_path=str(lora),
                lora_scale=lora_scale,
                n_ctx=n_ctx,
                n_threads=n_threads or os.cpu_count() or 2,
                logits_all=False,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise InputFileError(
                lora,
                f"llama.cpp cannot apply this adapter ({exc})",
                fix="delete it to write it again, or rewrite with --engine transformers",
            ) from None

    def rewrite_one(self, text: str, max_new_tokens: int = 64) -> str:
        prompt = self.template.render(toxic=text.strip())
        tokens = self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
        room = max(self.settings.max_length - max_new_tokens - 1, 1)
        tokens = tokens[:1] + tokens[1:][-room:]  # the prompt cut from the left, as in training
        self.llm.reset()
        out = self.llm.create_completion(
            tokens,
            max_tokens=max_new_tokens,
            temperature=0.0,
            top_k=1,
            repeat_penalty=1.0,
            stop=["\n"],
            logits_processor=self._keep_processor(text, len(tokens)),
        )
        return out["choices"][0]["text"].strip().split("\n")[0].strip()

    def _keep_processor(self, text: str, prompt_len: int):
        if not self.keep.active():
            return None
        from llama_cpp import LogitsProcessorList

        if self._stops is None:  # the tokens that end a rewrite, looked up once
            self._stops = sorted({*self._tokenize("\n"), *self._tokenize("\n\n")})
            self._stops.append(self.llm.token_eos())
        src = source(text, self._tokenize, self.keep)
        return LogitsProcessorList([llama_processor(src, self.keep, self._stops, prompt_len)])

    def _tokenize(self, piece: str) -> list[int]:
        return self.llm.tokenize(piece.encode("utf-8"), add_bos=False, special=False)

    def rewrites(
        self, texts: Sequence[str], max_new_tokens: int = 64, progress: bool = False
    ) -> Iterator[str]:
        from rolecall.progress import progress_bar

        with progress_bar(len(texts), "rewriting (llama.cpp)", enabled=progress) as advance:
            for text in texts:
                yield self.rewrite_one(text, max_new_tokens)
                advance()
