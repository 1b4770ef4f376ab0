"""BM25 as every lexical search here runs it: the bm25s library, loaded once it is needed,
with the parameters the K/DA slang index and the bot's lexical stage share."""

from __future__ import annotations

import logging

from rolecall.errors import RolecallError

BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}


def load_bm25s():
    try:
        import bm25s
    except ImportError:
        raise RolecallError(
            "BM25 search needs the library bm25s", fix="pip install bm25s"
        ) from None
    # subtle: bm25s sets its own logger to DEBUG on import, which prints its chatter under
    # any root handler; NOTSET makes it follow the application's level (-v shows it)
    logging.getLogger("bm25s").setLevel(logging.NOTSET)
    return bm25s
