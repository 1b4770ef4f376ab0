"""Retrieval: the K/DA slang index (Kiwi morphemes + BM25) over comment corpora.

``clean`` reads and cleans comment corpora; ``slang`` builds, loads and searches the index.
"""

from rolecall.retrieval.clean import clean_comments, clean_records, read_corpus
from rolecall.retrieval.slang import (Corpus, Hit, SlangIndex, build_index,
                                      parse_corpus_spec, search_tokens)

__all__ = ["Corpus", "Hit", "SlangIndex", "build_index", "clean_comments", "clean_records",
           "parse_corpus_spec", "read_corpus", "search_tokens"]
