"""Where an ``hf:`` model string's weights are, and loading them (transformers, in-process).

Model strings:

- ``hf:/path/to/model``  a local model directory (config, weights, tokenizer files);
- ``hf:/path/file.gguf`` or ``hf:/dir?gguf_file=file.gguf``  a GGUF file, loaded (and
  dequantized) by transformers' ``gguf_file=`` support (needs the ``gguf`` package);
- ``hf:embedded``  the embedded Gemma 3 270M GGUF (see ``embedded.py``), converted once
  to a transformers folder beside it (see ``embedded_snapshot``).

Nothing is ever downloaded: every load uses ``local_files_only=True``. ``load_hf_model``
is the one place that loads a model, for the ``hf:`` backend (``hf.py``) and for training
(LoRA), so both use the exact same weights.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rolecall.errors import ConfigError, InputFileError

_NO_PATH_FIX = (
    "give a local model directory (config.json, weights and tokenizer files) "
    "or a .gguf file, e.g. hf:/models/my-model or hf:embedded; "
    "hf: never downloads from a model hub"
)


class HFOptions(BaseModel):
    """Options of ``hf:`` model strings (``?device=cuda&dtype=bfloat16``)."""

    model_config = ConfigDict(extra="forbid")
    device: str = Field(
        "cpu",
        pattern=r"^(cpu|auto|mps|cuda(:\d+)?)$",
        description="cpu, cuda, cuda:N, mps, or auto (the best one present)",
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] | None = Field(
        None, description="default: float32 on CPU, bfloat16 on a GPU; auto = the model's"
    )
    gguf_file: str | None = Field(None, description="a GGUF file name inside the directory")
    chat: bool = Field(True, description="serve chat requests with the chat template")
    trust_remote_code: bool = False


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model string's weights are: ``directory`` plus, for GGUF, the file name."""

    directory: Path
    gguf_file: str | None
    embedded: bool = False

    @property
    def path(self) -> Path:
        return self.directory / self.gguf_file if self.gguf_file else self.directory


def resolve_location(location: str, gguf_file: str | None = None) -> ResolvedModel:
    """Turn a model string's location into a checked local path (no loading)."""
    if location == "embedded":
        from rolecall.llm.embedded import embedded_model_path

        if gguf_file is not None:
            raise ConfigError(
                "hf:embedded takes no gguf_file option",
                fix="drop ?gguf_file=, or give hf:/dir?gguf_file=NAME",
            )
        path = embedded_model_path()
        return ResolvedModel(path.parent, path.name, embedded=True)
    path = Path(location).expanduser().resolve()
    if path.suffix.lower() == ".gguf":
        if gguf_file is not None:
            raise ConfigError(
                f"'{location}' is already a .gguf file; ?gguf_file= is extra",
                fix="give either hf:/path/file.gguf or hf:/dir?gguf_file=NAME",
            )
        path, gguf_file = path.parent, path.name
    if gguf_file is not None:
        if not (path / gguf_file).is_file():
            raise InputFileError(path / gguf_file, "no such GGUF file", fix=_NO_PATH_FIX)
        return ResolvedModel(path, gguf_file)
    if not path.is_dir():
        raise InputFileError(path, "no such model directory", fix=_NO_PATH_FIX)
    if not (path / "config.json").is_file():
        raise InputFileError(
            path, "not a transformers model directory (no config.json)", fix=_NO_PATH_FIX
        )
    return ResolvedModel(path, None)


def fingerprint(resolved: ResolvedModel) -> str:
    """A short stamp that changes when the weights change (sizes and mtimes, not contents:
    hashing gigabytes on every start would cost more than a stale cache ever saves)."""
    if resolved.gguf_file:
        files = [resolved.path]
    else:
        files = sorted(p for p in resolved.directory.iterdir() if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        digest.update(f"{file.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


def _pick_device(device: str) -> str:
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _pick_dtype(dtype: str | None, device: str) -> Any:
    import torch

    if dtype == "auto":
        return "auto"
    if dtype is None:
        return torch.float32 if device == "cpu" else torch.bfloat16
    return getattr(torch, dtype)


def load_hf_model(
    location: str, options: HFOptions | None = None, resolved: ResolvedModel | None = None
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` for an ``hf:`` location; the model is in eval mode.

    Training code reuses this, so loading (paths, GGUF, dtype, device) lives in one place.
    A tokenizer without a pad token gets its EOS token as pad token: batched generation
    and training both need one, and padding is masked out anyway.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    options = options or HFOptions()
    resolved = resolved or resolve_location(location, options.gguf_file)
    if resolved.embedded:
        resolved = ResolvedModel(embedded_snapshot(), None, embedded=True)
    device = _pick_device(options.device)
    common: dict[str, Any] = {
        "local_files_only": True,
        "trust_remote_code": options.trust_remote_code,
    }
    if resolved.gguf_file:
        common["gguf_file"] = resolved.gguf_file
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved.directory, **common)
        model = AutoModelForCausalLM.from_pretrained(
            resolved.directory, **_dtype_kwarg(_pick_dtype(options.dtype, device)), **common
        )
    except (OSError, ValueError) as exc:
        raise InputFileError(
            resolved.path, f"transformers cannot load this model: {exc}", fix=_load_fix(resolved)
        ) from exc
    model.to(device)
    model.eval()
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def embedded_snapshot() -> Path:
    """The embedded GGUF converted once into a transformers folder; returns its path.

    Loading a GGUF through transformers parses its 262k-entry vocabulary in Python three
    times (config, tokenizer, weights): about 80 s on two cores, every time. The converted
    folder (float32 safetensors, ~1.1 GB, next to the GGUF in ROLECALL_HOME/models) loads
    in seconds with the very same numbers. The GGUF's SHA-256 is checked when it is
    assembled, so the conversion never goes stale.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rolecall.llm.embedded import embedded_model_path

    gguf = embedded_model_path()
    target = gguf.parent / f"hf-{gguf.stem}"
    if (target / "config.json").is_file():
        return target
    common = {"gguf_file": gguf.name, "local_files_only": True}
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **common)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, **_dtype_kwarg(torch.float32), **common
    )
    partial = Path(tempfile.mkdtemp(prefix=f"{target.name}.", suffix=".partial", dir=gguf.parent))
    # The weights are plain dequantized floats by now; transformers still tags the model
    # as "gguf-quantized" and would refuse to save it, so drop the tag (it has no effect
    # on the numbers).
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        # atomic: a killed conversion leaves no half-written folder behind, and of two
        # processes converting at once the second one's rename fails harmlessly
        partial.rename(target)
    except OSError:
        if not (target / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def _dtype_kwarg(dtype: Any) -> dict[str, Any]:
    """transformers renamed ``torch_dtype=`` to ``dtype=`` (4.56); pass what it accepts."""
    import transformers

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    return {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}


def _load_fix(resolved: ResolvedModel) -> str:
    if resolved.gguf_file:
        return (
            "check that the gguf package is installed (pip install gguf) and that "
            "transformers supports this GGUF architecture; or use llamacpp: for it"
        )
    return "check that the directory holds a complete causal-LM checkpoint and tokenizer"


def hf_model_id(resolved: ResolvedModel, dtype: str) -> str:
    """The model's identity in the call cache: its path and a stamp of its weights (the
    embedded model: its name), and the dtype unless float32."""
    if resolved.embedded:
        # the embedded file is verified by its SHA-256 when assembled: its name is enough,
        # and the id stays the same across ROLECALL_HOME folders
        from rolecall.llm.embedded import embedded_model_id

        base = embedded_model_id()
    else:
        base = f"{resolved.path}@{fingerprint(resolved)}"
    # precision changes the numbers, so it is part of the model's identity (device is not)
    dtype = dtype.removeprefix("torch.")
    return base if dtype == "float32" else f"{base}?dtype={dtype}"
