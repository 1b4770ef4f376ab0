"""Exact vector search helpers shared by the slang index and the bot's candidate index."""

from __future__ import annotations

import numpy as np

from rolecall.errors import RolecallError

INSTALL_FIX = "pip install faiss-cpu (it comes with 'rolecall[models]' and 'rolecall[dense]')"


def faiss_module():
    """The ``faiss`` module, or an error that says how to install it."""
    try:
        import faiss
    except ImportError:
        raise RolecallError("vector search needs FAISS (faiss-cpu)", fix=INSTALL_FIX) from None
    return faiss


def stable_top(docs: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The best ``k`` of FAISS's neighbours, equal scores in corpus order (FAISS's own
    order among ties is arbitrary)."""
    keep = docs >= 0  # FAISS pads with -1 when it has fewer than asked
    docs, scores = docs[keep], scores[keep]
    order = np.lexsort((docs, -scores))[:k]
    return [(int(docs[i]), float(scores[i])) for i in order]
