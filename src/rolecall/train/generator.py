"""The generator (NAACL 2022, section 4.4): a causal LM fine-tuned with LoRA on the judged
examples, MLE on the in-bounds responses and unlikelihood on the out-of-bounds ones.

The base is the embedded Gemma 3 270M (through transformers, ``llm/hf.py``), any local
transformers causal LM, or a (model, tokenizer) built in code (base ``IN_CODE``). Only
LoRA adapters train (PEFT); the loss is ``losses/unlikelihood.py``. The prompt is the
dialogue as an LM reads it (``perplexity.lm_prompt``: ``role: text`` lines, then
``system:``), the target the response
after one space, then a newline: the turn ends where the next ``user:`` line would begin,
and generation stops there.

Memory: with a 262k vocabulary the logits of a whole batch ([B, T, V] floats) would take
gigabytes, so the LM head runs only on the positions that predict a counted response token
(``next_token_targets``), with the model's final logit soft-capping when it has one.

A model directory holds ``model.json`` (kind, settings, metrics), ``adapter/`` (PEFT's
``adapter_config.json`` + weights) and, only for a base that is no file of its own (built
in code), ``base/``. ``export`` writes merged weights (any transformers or vLLM
loader reads them) or the adapter with its base named.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rolecall import __version__
from rolecall.errors import ConfigError, InputFileError, describe_validation
from rolecall.progress import progress_bar
from rolecall.records import Example, Turn
from rolecall.rundir import write_json
from rolecall.train.backbones.base import EMBEDDED, IN_CODE, torch_module
from rolecall.train.checkpoints import Checkpoints
from rolecall.train.loop import MODEL_FILE, TrainConfig, fit, read_info
from rolecall.train.losses import MleUnlikelihoodLoss
from rolecall.train.losses.unlikelihood import IGNORE, next_token_targets
from rolecall.train.perplexity import lm_prompt
from rolecall.train.settings import GENERATOR_TRAINING
from rolecall.train.settings import GeneratorSettings as GeneratorSettings  # re-exported

KIND = "generator"
ADAPTER_DIR, BASE_DIR = "adapter", "base"


def load_base(name: str) -> tuple[Any, Any]:
    """(causal LM, tokenizer) for ``"embedded"`` or a local model directory."""
    if name == IN_CODE:
        raise ConfigError(
            "a model built in code is not loaded by name",
            fix="pass the (model, tokenizer) itself, or name a real base",
        )
    from rolecall.llm.hf import load_hf_model

    return load_hf_model(name)


class Generator:
    """A LoRA-wrapped causal LM, its tokenizer and settings: trains, scores, generates."""

    KIND = KIND
    COMMAND = "rolecall train generator"
    SETTINGS: type[GeneratorSettings] = GeneratorSettings

    def __init__(self, model: Any, tokenizer: Any, settings: GeneratorSettings):
        self.model, self.tokenizer, self.settings = model, tokenizer, settings
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.loss_fn = MleUnlikelihoodLoss(settings.alpha)

    @classmethod
    def create(
        cls,
        base: str | tuple[Any, Any] = EMBEDDED,
        settings: GeneratorSettings | None = None,
        seed: int = 0,
    ) -> Generator:
        """New LoRA adapters (seeded) on ``base``: a name for ``load_base`` or a loaded
        ``(model, tokenizer)``, which ``settings.base`` must then name (``IN_CODE`` for a
        model built in code: it is saved with the adapters)."""
        torch = torch_module()
        from peft import LoraConfig, get_peft_model

        settings = settings or GeneratorSettings()
        model, tokenizer = load_base(base) if isinstance(base, str) else base
        targets = settings.target_modules
        config = LoraConfig(
            task_type="CAUSAL_LM",
            r=settings.lora_r,
            lora_alpha=settings.lora_alpha,
            lora_dropout=settings.lora_dropout,
            target_modules=targets
            if targets == "all-linear"
            else [t.strip() for t in targets.split(",") if t.strip()],
        )
        torch.manual_seed(seed)
        try:
            wrapped = get_peft_model(model, config)
        except ValueError as exc:
            raise ConfigError(
                f"LoRA cannot wrap this model: {exc}",
                fix="name modules the model has with --target-modules, or use all-linear",
            ) from None
        return cls(wrapped, tokenizer, settings)

    # ---- tokens ------------------------------------------------------------------------

    def prompt(self, history: Sequence[Turn] | str) -> str:
        if isinstance(history, str):
            return lm_prompt(history)
        turns = list(history)
        if self.settings.max_turns:
            turns = turns[-self.settings.max_turns :]
        return lm_prompt(turns)

    def _prompt_ids(self, prompt: str, room: int) -> list[int]:
        """BOS + the prompt's last ``room`` tokens (the history is cut from the left)."""
        tok = self.tokenizer
        ids = tok(prompt, add_special_tokens=False)["input_ids"][-max(room, 1) :]
        return ([tok.bos_token_id] if tok.bos_token_id is not None else []) + ids

    def _row(self, prompt: str, response: str) -> tuple[list[int], int]:
        """(ids, prompt length): the prompt, then ' response\\n' + EOS cut to
        ``response_max``."""
        s, tok = self.settings, self.tokenizer
        answer = tok(" " + response.strip() + "\n", add_special_tokens=False)["input_ids"]
        answer = answer[: s.response_max - 1] + [tok.eos_token_id]
        prompt_ids = self._prompt_ids(prompt, s.max_length - len(answer) - 1)
        return prompt_ids + answer, len(prompt_ids)

    def batch(self, examples: Sequence[Example]) -> dict[str, Any]:
        """Right-padded ``input_ids``, ``attention_mask``, ``labels`` (-100 on prompt and
        padding) and ``negative`` [B] flags."""
        return self._batch_rows(
            [(self.prompt(e.history), e.response, e.label == "negative") for e in examples]
        )

    def _batch_rows(self, items: Sequence[tuple[str, str, bool]]) -> dict[str, Any]:
        """``batch`` from (prompt, response, negative) triples."""
        torch = torch_module()
        rows = [self._row(prompt, response) for prompt, response, _ in items]
        width = max(len(ids) for ids, _ in rows)
        ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
        for row, (tokens, prompt_length) in enumerate(rows):
            ids[row, : len(tokens)] = torch.tensor(tokens)
            mask[row, : len(tokens)] = 1
            labels[row, prompt_length : len(tokens)] = torch.tensor(tokens[prompt_length:])
        negative = torch.tensor([flag for _, _, flag in items], dtype=torch.bool)
        return {"input_ids": ids, "attention_mask": mask, "labels": labels, "negative": negative}

    def _logits(self, batch: dict[str, Any]) -> tuple[Any, Any, Any]:
        """(logits [N, V], targets [N], negative [N]) of the counted response tokens."""
        causal = self.model.get_base_model()
        device = next(self.model.parameters()).device
        positions, targets, negative = next_token_targets(batch["labels"], batch["negative"])
        decoder = getattr(causal, causal.base_model_prefix)
        hidden = decoder(
            input_ids=batch["input_ids"].to(device),
            attention_mask=batch["attention_mask"].to(device),
        ).last_hidden_state
        logits = causal.get_output_embeddings()(hidden[positions.to(device)])
        cap = getattr(causal.config, "final_logit_softcapping", None)
        if cap:
            logits = torch_module().tanh(logits / cap) * cap
        return logits, targets.to(device), negative.to(device)

    # ---- training ----------------------------------------------------------------------

    def loss(self, examples: Sequence[Example]) -> Any:
        logits, targets, negative = self._logits(self.batch(examples))
        value, _ = self.loss_fn(logits, targets, negative)
        return value

    def fit(
        self,
        examples: Sequence[Example],
        config: TrainConfig,
        progress: bool = True,
        checkpoints: Checkpoints | None = None,
    ) -> dict[str, Any]:
        """Train the adapters on positives (MLE) and, with ``alpha`` > 0, negatives (UL)."""
        items = [
            e
            for e in examples
            if e.label == "positive" or (e.label == "negative" and self.settings.alpha > 0)
        ]
        if not any(e.label == "positive" for e in items):
            raise ValueError("the generator needs positive examples to learn from")
        return fit(
            self.model,
            None,
            items,
            self.loss,
            config,
            progress,
            "training generator" + (" (MLE+UL)" if self.settings.alpha else " (MLE)"),
            checkpoints,
        )

    # ---- scoring and generating --------------------------------------------------------

    def perplexity(
        self, examples: Sequence[Example], batch_size: int = 8, progress: bool = False
    ) -> dict[str, float]:
        """Corpus perplexity of the responses given their prompts, for the positive and the
        negative examples apart (the paper's Table 8), and negative / positive."""
        torch = torch_module()
        totals = {"positive": [0.0, 0], "negative": [0.0, 0]}
        self.model.eval()
        with (
            torch.no_grad(),
            progress_bar(len(examples), "perplexity", enabled=progress) as advance,
        ):
            for start in range(0, len(examples), batch_size):
                chunk = list(examples[start : start + batch_size])
                logits, targets, negative = self._logits(self.batch(chunk))
                nll = (
                    -torch.log_softmax(logits.float(), -1)
                    .gather(-1, targets.unsqueeze(-1))
                    .squeeze(-1)
                )
                for label, flag in (("positive", False), ("negative", True)):
                    picked = nll[negative == flag]
                    totals[label][0] += float(picked.sum())
                    totals[label][1] += int(picked.numel())
                advance(len(chunk))
        out = {
            f"ppl_{label}": math.exp(total / count)
            for label, (total, count) in totals.items()
            if count
        }
        if "ppl_positive" in out and "ppl_negative" in out:
            out["ppl_ratio"] = out["ppl_negative"] / out["ppl_positive"]
        return out

    def response_perplexities(
        self,
        histories: Sequence[Sequence[Turn] | str],
        responses: Sequence[str],
        batch_size: int = 8,
    ) -> list[float]:
        """Perplexity of each response as the next system turn after its history (the
        fallback question is the one with the lowest)."""
        torch = torch_module()
        if len(histories) != len(responses):
            raise ValueError(f"{len(histories)} histories but {len(responses)} responses")
        out: list[float] = []
        self.model.eval()
        with torch.no_grad():
            for start in range(0, len(responses), batch_size):
                chunk = range(start, min(start + batch_size, len(responses)))
                batch = self._batch_rows(
                    [(self.prompt(histories[i]), responses[i], False) for i in chunk]
                )
                positions, _, _ = next_token_targets(batch["labels"], batch["negative"])
                logits, targets, _ = self._logits(batch)
                nll = (
                    -torch.log_softmax(logits.float(), -1)
                    .gather(-1, targets.unsqueeze(-1))
                    .squeeze(-1)
                )
                rows = positions.nonzero()[:, 0].to(nll.device)
                total = torch.zeros(len(chunk), device=nll.device).index_add_(0, rows, nll)
                count = torch.bincount(rows, minlength=len(chunk)).clamp(min=1)
                out += torch.exp(total / count).tolist()
        return out

    def generate(
        self,
        histories: Sequence[Sequence[Turn] | str],
        max_new_tokens: int = 48,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        """The next system turn for each history (greedy unless ``temperature`` > 0),
        cut at the first newline."""
        return self.complete([self.prompt(h) for h in histories], max_new_tokens, temperature, seed)

    def complete(
        self,
        prompts: Sequence[str],
        max_new_tokens: int = 48,
        temperature: float = 0.0,
        seed: int = 0,
        batch_size: int = 8,
    ) -> list[str]:
        """The continuation of each prompt up to its first newline."""
        out: list[str] = []
        for start in range(0, len(prompts), batch_size):
            out += self._complete(
                prompts[start : start + batch_size], max_new_tokens, temperature, seed
            )
        return out

    def _complete(
        self,
        prompts: Sequence[str],
        max_new_tokens: int,
        temperature: float,
        seed: int,
        processors: Callable[[int], Any] | None = None,
    ) -> list[str]:
        """``processors(width)``: a ``LogitsProcessorList`` for this batch, whose left-padded
        prompts end at column ``width``."""
        torch = torch_module()
        tok = self.tokenizer
        room = self.settings.max_length - max_new_tokens - 1
        rows = [self._prompt_ids(prompt, room) for prompt in prompts]
        width = max(len(ids) for ids in rows)
        ids = torch.full((len(rows), width), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for row, tokens in enumerate(rows):  # left padding: every row ends at the prompt
            ids[row, width - len(tokens) :] = torch.tensor(tokens)
            mask[row, width - len(tokens) :] = 1
        device = next(self.model.parameters()).device
        self.model.eval()
        torch.manual_seed(seed)
        with torch.no_grad():
            out = self.model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                max_new_tokens=max_new_tokens,
                do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None,
                top_p=None,
                top_k=None,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
                logits_processor=processors(width) if processors else None,
            )
        texts = tok.batch_decode(out[:, width:], skip_special_tokens=True)
        return [text.strip().split("\n")[0].strip() for text in texts]

    # ---- saving ------------------------------------------------------------------------

    def save(self, directory: str | Path, metrics: dict | None = None) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(directory / ADAPTER_DIR)
        self.tokenizer.save_pretrained(directory / ADAPTER_DIR)
        if self.settings.base == IN_CODE:  # a base built in code exists nowhere else
            _clone_peft(self.model).unload().save_pretrained(directory / BASE_DIR)
            self.tokenizer.save_pretrained(directory / BASE_DIR)
        info = {
            "kind": self.KIND,
            "settings": self.settings.model_dump(mode="json"),
            "metrics": metrics or {},
            "rolecall": __version__,
        }
        (directory / MODEL_FILE).write_text(
            json.dumps(info, ensure_ascii=False, indent=2), encoding="utf-8"
        )
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> Generator:
        """A generator saved by ``save``: its base loaded again, the adapters on it."""
        from peft import PeftModel

        directory = Path(directory)
        settings = read_model_settings(directory, cls.KIND, cls.COMMAND, cls.SETTINGS)
        adapter = directory / ADAPTER_DIR
        if not (adapter / "adapter_config.json").is_file():
            raise InputFileError(
                directory,
                f"has no {ADAPTER_DIR}/adapter_config.json",
                fix="the model directory is incomplete: train it again",
            )
        model, tokenizer = load_base(
            str(directory / BASE_DIR) if settings.base == IN_CODE else settings.base
        )
        try:
            wrapped = PeftModel.from_pretrained(model, adapter)
        except Exception as exc:  # safetensors and peft raise many kinds for a bad file
            raise InputFileError(
                adapter,
                f"the LoRA adapter cannot be loaded: {exc}",
                fix="the adapter files are corrupt or belong to another "
                "base model: train the generator again",
            ) from exc
        wrapped.eval()
        return cls(wrapped, tokenizer, settings)

    def export(self, out: str | Path, merged: bool = True) -> Path:
        """Merged weights (a plain transformers model directory) or the adapter with its
        base named in ``adapter_config.json``; both load in transformers and vLLM."""
        out = Path(out)
        if out.exists() and any(out.iterdir()):
            raise ConfigError(
                f"{out} exists and is not empty", fix="give a new directory to export into"
            )
        if merged:
            copy = _clone_peft(self.model)
            copy.merge_and_unload().save_pretrained(out)
        else:
            self.model.save_pretrained(out)
            config_path = out / "adapter_config.json"
            config = json.loads(config_path.read_text(encoding="utf-8"))
            config["base_model_name_or_path"] = self.base_path()
            write_json(config_path, config)
        self.tokenizer.save_pretrained(out)
        return out

    def base_path(self) -> str:
        if self.settings.base == EMBEDDED:
            from rolecall.llm.hf import embedded_snapshot

            return str(embedded_snapshot())
        return self.settings.base


def read_model_settings(
    directory: Path, kind: str, command: str, settings_type: type[GeneratorSettings]
) -> GeneratorSettings:
    """The settings a model directory of ``kind`` was trained with (its ``model.json``),
    checked as ``settings_type``; a clear error naming ``command`` when they do not read."""
    info = read_info(directory, kind, command)
    try:
        return settings_type.model_validate(info["settings"])
    except ValidationError as exc:
        raise InputFileError(
            directory / MODEL_FILE,
            f"bad settings: {describe_validation(exc, 'settings')}",
            fix=f"train it again ({command}) with this rolecall version",
        ) from None


def _clone_peft(model: Any) -> Any:
    import copy

    return copy.deepcopy(model)


def train_generator(
    examples_path: str | Path,
    out_dir: str | Path,
    base: str | tuple[Any, Any] = EMBEDDED,
    settings: GeneratorSettings | None = None,
    config: TrainConfig | None = None,
    test_share: float = 0.1,
    progress: bool = True,
    checkpoints: Checkpoints | None = None,
) -> dict[str, Any]:
    """Train on an examples file (positives by MLE, negatives by UL), report perplexity on
    held-out dialogues before and after, save to ``out_dir``; returns the metrics. With
    ``checkpoints`` a killed run goes on from the last one (removed once saved)."""
    from rolecall.train.data import read_examples
    from rolecall.train.pairs import held_out

    config = config or GENERATOR_TRAINING.model_copy()
    settings = settings or GeneratorSettings()
    if isinstance(base, str):
        where = base if base == EMBEDDED else str(Path(base).expanduser().resolve())
        settings = settings.model_copy(update={"base": where})
    examples = read_examples(examples_path)
    train, test = held_out(examples, test_share, config.seed, examples_path)
    generator = Generator.create(base, settings, config.seed)
    before = generator.perplexity(test, progress=progress) if test else {}
    history = generator.fit(train, config, progress, checkpoints)
    after = generator.perplexity(test, progress=progress) if test else {}
    metrics: dict[str, Any] = {
        "train_examples": len(train),
        "test_examples": len(test),
        "alpha": generator.settings.alpha,
        "steps": history["steps"],
        "first_loss": round(history["first_loss"], 5),
        "last_loss": round(history["last_loss"], 5),
        **{f"base_{key}": round(value, 4) for key, value in before.items()},
        **{key: round(value, 4) for key, value in after.items()},
    }
    generator.save(out_dir, metrics)
    if checkpoints is not None:
        checkpoints.clear()
    return metrics
