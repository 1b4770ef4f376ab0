"""Retrieval: the K/DA slang index (Kiwi morphemes + BM25) over comment corpora.

``clean`` cleans comment corpora (``rolecall.textfiles`` reads them); ``slang`` builds,
loads and searches the index; ``dense`` and ``fusion`` add dense and hybrid search.
"""

from rolecall.retrieval.clean import clean_comments, clean_records
from rolecall.retrieval.slang import (
    Corpus,
    Hit,
    SlangIndex,
    build_index,
    parse_corpus_spec,
    search_tokens,
)

__all__ = [
    "Corpus",
    "Hit",
    "SlangIndex",
    "build_index",
    "clean_comments",
    "clean_records",
    "parse_corpus_spec",
    "search_tokens",
]
