"""Retrieval: the K/DA slang index (Kiwi morphemes + BM25) over comment corpora.

``clean`` cleans comment corpora (``rolecall.textfiles`` reads them); ``slang_build``
builds the index from their Kiwi-morpheme ``tokens``; ``slang`` loads and searches it (and
offers the build's names too); ``dense`` and ``fusion`` add dense and hybrid search.
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
