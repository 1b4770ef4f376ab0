"""The K/DA slang index: comment corpora searched for slang-bearing comments like a sentence.

K/DA (Jeon et al., ACL 2025) retrieves n in {0, 3, 5, 7, 9} community comments similar to
a neutral sentence and shows them to the LLM that rewrites the sentence, so that the
toxic variant uses current, community-specific slang. Here: ``build_index``
(``build.py``) reads and cleans the corpora (``clean.py``), tokenizes them into Kiwi
morphemes (``retrieval/tokens.py``) and builds a BM25 index (``retrieval/bm25.py``);
``SlangIndex.load(dir).search(sentence, k)`` returns ``Hit(id, text, score)`` where ``id``
is ``FILE:LINE`` of the comment, recorded as provenance.

Hits with score 0 share no token with the sentence and are not returned, so a search may
give fewer than k hits; equal scores go to the earliest comment, so results are stable.
k=0 gives none (K/DA's n=0 condition).

Optionally (``retriever="dense"`` or ``"hybrid"`` with ``dense_model=``, any
sentence-transformers model the user has) the comments are also embedded into a FAISS
index (``dense.py``): dense search ranks by cosine similarity, hybrid fuses the BM25 and
the dense rankings by reciprocal rank (``fusion.py``), so that a comment saying the same
in other words and one sharing the exact slang can both be found. BM25 is always built (it
is cheap); the manifest lists the ``retrievers`` built and the ``default_retriever``
asked for, which ``rolecall slang search`` uses. ``SlangIndex.search`` keeps ``"bm25"``
as its default so that existing callers do not change behaviour with the index.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from rolecall.errors import ConfigError, InputFileError
from rolecall.jsonl import read_jsonl
from rolecall.retrieval.bm25 import BM25_PARAMS, load_bm25s
from rolecall.retrieval.tokens import TOKEN_RULES_VERSION, search_tokens, tokenizer_info
from rolecall.slang import dense

# re-exported below (__all__): one module gives the index, its build and its search
from rolecall.slang.build import (
    BM25_DIR,
    COMMENTS,
    FORMAT_VERSION,
    INDEX_FORMAT,
    MANIFEST,
    Corpus,
    build_index,
    index_command,
    parse_corpus_spec,
    require_retriever,
    save_index,
    summarize,
)
from rolecall.slang.fusion import RRF_K, reciprocal_rank_fusion

__all__ = [
    "BM25_PARAMS",
    "Corpus",
    "Hit",
    "SlangIndex",
    "build_index",
    "format_hits",
    "hits_to_json",
    "index_command",
    "parse_corpus_spec",
    "save_index",
    "search_command",
    "search_tokens",
    "summarize",
    "tokenizer_info",
]

log = logging.getLogger(__name__)

FUSION_DEPTH = 50  # hits taken from each ranking before fusing (or 2k, if more)
REBUILD_DENSE = "rebuild with --retriever dense --dense-model PATH (or hybrid)"


@dataclass(frozen=True)
class Hit:
    """One retrieved comment: ``id`` is ``FILE:LINE`` in its corpus.

    ``score`` depends on the retriever, so compare scores within one search only: BM25
    (0 excluded, unbounded above), the cosine similarity of the embeddings for dense (-1
    to 1), the reciprocal-rank-fusion score for hybrid (at most 2/61 with RRF k=60).
    """

    id: str
    text: str
    score: float


def _load_manifest(path: Path) -> dict:
    fix = "build one: rolecall slang index CORPUS... --out DIR"
    if not path.is_dir():
        raise InputFileError(
            path,
            "not found" if not path.exists() else "is a file, not a slang index directory",
            fix=fix,
        )
    if not (path / MANIFEST).is_file():
        raise InputFileError(
            path,
            "is not a slang index (no manifest.json; an unfinished build also has none)",
            fix=fix,
        )
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != INDEX_FORMAT:
        raise InputFileError(path / MANIFEST, "is not a rolecall slang index manifest", fix=fix)
    if manifest.get("format_version", 0) > FORMAT_VERSION:
        raise InputFileError(path, "was built by a newer rolecall", fix="upgrade rolecall")
    if manifest["tokenizer"].get("rules_version") != TOKEN_RULES_VERSION:
        raise InputFileError(
            path,
            "was built with other tokenization rules than this rolecall uses",
            fix="rebuild it with rolecall slang index",
        )
    return manifest


class SlangIndex:
    """A built index, loaded: the BM25 matrices (and the dense vectors, where built) plus
    the comments they point at."""

    def __init__(
        self,
        path: Path,
        manifest: dict,
        ids: list[str],
        texts: list[str],
        bm25,
        dense_index: dense.DenseIndex | None = None,
    ):
        self.path, self.manifest, self.ids, self.texts = path, manifest, ids, texts
        self._bm25, self._dense = bm25, dense_index
        self._vocab: dict[str, int] = bm25.vocab_dict

    @property
    def retrievers(self) -> list[str]:
        return list(self.manifest.get("retrievers", ["bm25"]))

    @property
    def default_retriever(self) -> str:
        """The retriever asked for at build time (``"bm25"`` for indexes from before)."""
        return self.manifest.get("default_retriever", "bm25")

    @classmethod
    def load(cls, path: str | Path, dense_model: str | None = None) -> SlangIndex:
        """Open ``path``; a directory that is not a complete index is an ``InputFileError``.

        ``dense_model`` replaces the model recorded at build time (say, a model directory
        that moved); it must embed like the recorded one, which the first dense search
        checks.
        """
        path = Path(path)
        manifest = _load_manifest(path)
        for part in (COMMENTS, BM25_DIR):
            if not (path / part).exists():
                raise InputFileError(
                    path,
                    f"is an incomplete slang index: {part} is missing",
                    fix="rebuild it with rolecall slang index",
                )
        comments = list(read_jsonl(path / COMMENTS))
        bm25 = load_bm25s().BM25.load(str(path / BM25_DIR), show_progress=False)
        if bm25.scores["num_docs"] != len(comments):
            raise InputFileError(
                path,
                f"is inconsistent: {len(comments)} comments but "
                f"{bm25.scores['num_docs']} indexed documents",
                fix="rebuild it with rolecall slang index",
            )
        built_with = manifest["tokenizer"].get("kiwipiepy")
        if built_with != tokenizer_info()["kiwipiepy"]:
            log.warning(
                "%s was built with kiwipiepy %s, this is %s: query morphemes may "
                "differ slightly; rebuild the index to be sure",
                path,
                built_with,
                tokenizer_info()["kiwipiepy"],
            )
        dense_index = (
            dense.DenseIndex.load(path, len(comments), dense_model)
            if "dense" in manifest.get("retrievers", [])
            else None
        )
        return cls(
            path,
            manifest,
            [c["id"] for c in comments],
            [c["text"] for c in comments],
            bm25,
            dense_index,
        )

    def __len__(self) -> int:
        return len(self.ids)

    def _bm25_top(self, tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        # the public scoring call of bm25s, not retrieve(): that one wraps every query in
        # a progress bar and array copies, and cannot drop the zero-score hits
        token_ids = [self._vocab[t] for t in tokens if t in self._vocab]
        if k == 0 or not token_ids:
            return []
        scores = self._bm25.get_scores_from_ids(token_ids)
        k = min(k, len(scores))
        kth = -np.partition(-scores, k - 1)[k - 1]  # the k-th best score
        # subtle: take every document tied with the k-th, then sort: which tied documents
        # make the cut is then the earliest in the corpus, not argpartition's whim
        top = np.flatnonzero(scores >= max(kth, np.finfo(scores.dtype).tiny))
        top = top[np.lexsort((top, -scores[top]))][:k]  # best first; ties in corpus order
        return [(int(i), float(scores[i])) for i in top]

    def _dense_index(self, retriever: str) -> dense.DenseIndex:
        if self._dense is None:
            raise InputFileError(
                self.path,
                f"has no dense embeddings for the {retriever} "
                f"retriever (built for {', '.join(self.retrievers)})",
                fix=REBUILD_DENSE,
            )
        return self._dense

    def search(self, query: str, k: int = 9, retriever: str | None = None) -> list[Hit]:
        """The ``k`` comments most like ``query``, best first (fewer if few match)."""
        return self.search_many([query], k, retriever)[0]

    def search_many(
        self, queries: Sequence[str], k: int = 9, retriever: str | None = None
    ) -> list[list[Hit]]:
        """``search`` for each query, batched: one Kiwi call, one encoder call.

        ``retriever`` is ``"bm25"``, ``"dense"`` or ``"hybrid"`` (default: the index's
        ``default_retriever``, the one asked for at build time); the last two need an index
        built with a dense model. Dense and hybrid give ``k`` hits whenever
        the index has that many comments (every comment has some cosine). Dense scores may
        differ in the last float digits between a batch and a lone query (batched matrix
        products), not their order in practice.
        """
        retriever = retriever or self.default_retriever
        require_retriever(retriever)
        if k < 0:
            raise ConfigError(f"k must be 0 or more, got {k}")
        if k == 0 or not queries:
            return [[] for _ in queries]
        queries = [unicodedata.normalize("NFC", q) for q in queries]
        if retriever == "bm25":
            ranked = [self._bm25_top(t, k) for t in search_tokens(queries)]
        elif retriever == "dense":
            ranked = self._dense_index(retriever).search_many(queries, k)
        else:
            ranked = self._hybrid(queries, k)
        return [[Hit(self.ids[i], self.texts[i], score) for i, score in hits] for hits in ranked]

    def _hybrid(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        """RRF of the BM25 and the dense rankings, each cut at ``FUSION_DEPTH`` (or 2k):
        deep enough that a comment both like, but neither ranks first, still surfaces."""
        dense_index = self._dense_index("hybrid")
        depth = max(FUSION_DEPTH, 2 * k)
        sparse = [self._bm25_top(t, depth) for t in search_tokens(queries)]
        nearest = dense_index.search_many(queries, depth)
        return [
            reciprocal_rank_fusion([[i for i, _ in s], [i for i, _ in d]], RRF_K)[:k]
            for s, d in zip(sparse, nearest)
        ]


def search_command(
    index_dir: Path,
    query: str,
    k: int = 9,
    retriever: str | None = None,
    dense_model: str | None = None,
) -> list[Hit]:
    """``rolecall slang search``: the hits, for the CLI to print (``format_hits``).

    ``retriever`` defaults to the index's own default (the one it was built for): a person
    who built a hybrid index means to search it so.
    """
    return SlangIndex.load(index_dir, dense_model).search(query, k, retriever)


def format_hits(hits: Sequence[Hit]) -> str:
    """Rank, score, id and text, one hit a line; '(no hits)' says a search found nothing."""
    if not hits:
        return "(no hits)"
    return "\n".join(
        f"{rank:>2}. {hit.score:7.3f}  {hit.id}  {hit.text}"
        for rank, hit in enumerate(hits, start=1)
    )


def hits_to_json(hits: Sequence[Hit]) -> str:
    return "\n".join(json.dumps(asdict(hit), ensure_ascii=False) for hit in hits)
