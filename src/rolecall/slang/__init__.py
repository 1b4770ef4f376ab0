"""The K/DA slang index: community comment corpora searched for the comments most like a
neutral sentence (Kiwi morphemes + BM25, optionally dense and hybrid), whose slang K/DA's
rewrites borrow.

``clean`` cleans comment corpora (``rolecall.textfiles`` reads them); ``build`` builds
the index; ``index`` loads and searches it (and offers the build's names too); ``dense``
and ``fusion`` add dense and hybrid search. The parts other searches share (Kiwi search
tokens, BM25, the sentence encoders' vectors) are in ``rolecall.retrieval``.
"""

from rolecall.slang.clean import clean_comments, clean_records
from rolecall.slang.index import (
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
