"""The candidate index: the bot's possible answers as retriever vectors in FAISS.

The Retrieve-fail-Generate bot (NAACL 2022 §4.3) answers with one of the unique positive
system turns of its examples (``data.unique_candidates``). Their candidate vectors are
computed once by a trained retriever (``train/retriever.py``) and kept in a directory:

- ``candidates.jsonl``: ``{"id": n, "text": ...}``, ``id`` = position in the index;
- ``index.faiss``: an exact inner-product index (``IndexFlatIP``; scores are the
  retriever's dot products, not cosines; flat because a bot's few thousand answers are
  searched in well under a millisecond without an approximate index's recall loss);
- ``manifest.json``, written last: count, dim, the retriever's model directory and kind,
  the SHA-256 of ``candidates.jsonl``. ``CandidateIndex.load`` checks them all, so an index
  built by another retriever or over other candidates is refused instead of searched.

Searching a **poly-encoder** index takes two stages, because the poly score depends on the
candidate (its attention over the context's code vectors) and FAISS needs one query vector:
first FAISS finds the ``depth`` best candidates (default the retriever's ``rerank_depth``,
100) for the context's code vectors averaged (the score under uniform attention, a lower
bound of the full score, which lies between the mean and the max of the per-code scores),
then those are re-scored with the full poly attention and the best ``k`` returned. With at
most ``depth`` candidates the first stage keeps them all and the search is exact. A
bi-encoder search is one exact FAISS search.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from rolecall.atomic import atomic_path, write_bytes_atomic
from rolecall.errors import ConfigError, InputFileError
from rolecall.train.data import unique_candidates
from rolecall.train.settings import SINGLE_VECTOR
from rolecall.vectors import faiss_module, stable_top

INDEX_FORMAT, FORMAT_VERSION = "rolecall-candidate-index", 1
MANIFEST, CANDIDATES, FAISS_FILE = "manifest.json", "candidates.jsonl", "index.faiss"
REBUILD = "rebuild it with build_candidate_index (rolecall train retriever ... then index)"


def build_candidate_index(
    retriever, candidates: Iterable[str], out_dir: str | Path, progress: bool = True
) -> CandidateIndex:
    """Encode the unique non-empty ``candidates`` with ``retriever`` and save the index.

    Each file is written to a temporary name and renamed; the manifest comes last, so a
    killed build leaves a directory that ``load`` refuses rather than a half index.
    """
    faiss = faiss_module()
    texts = unique_candidates(candidates)
    if not texts:
        raise ConfigError(
            "no candidate responses to index", fix="pass the positive system turns of your examples"
        )
    vectors = retriever.encode_candidates(texts, progress)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)  # the old manifest must not vouch for new files
    lines = "".join(
        json.dumps({"id": number, "text": text}, ensure_ascii=False) + "\n"
        for number, text in enumerate(texts)
    ).encode("utf-8")
    write_bytes_atomic(out / CANDIDATES, lines)
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    with atomic_path(out / FAISS_FILE) as temp:
        faiss.write_index(flat, str(temp))
    manifest = {
        "format": INDEX_FORMAT,
        "version": FORMAT_VERSION,
        "count": len(texts),
        "dim": int(vectors.shape[1]),
        "kind": retriever.settings.kind,
        # relative to the index: an index inside its retriever's directory (a bot's) moves
        # with it
        "retriever": (
            os.path.relpath(Path(retriever.path).resolve(), out.resolve())
            if retriever.path
            else None
        ),
        "candidates_sha256": hashlib.sha256(lines).hexdigest(),
        "faiss_index": "IndexFlatIP (exact, inner product)",
        "faiss": faiss.__version__,
        "created": time.time(),
    }
    write_bytes_atomic(
        out / MANIFEST, (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    )
    return CandidateIndex(out, manifest, texts, flat, retriever)


def index_examples(
    retriever_dir: str | Path,
    examples: str | Path | Sequence[str | Path],
    cache_dir: Path | None,
    progress: bool = True,
) -> CandidateIndex:
    """The candidate index of a trained retriever over the unique positive responses of
    its examples file (or files, in order), in ``retriever_dir/candidates`` (what
    ``rolecall train retriever`` and ``rolecall bot run`` build)."""
    from rolecall.train.data import read_examples
    from rolecall.train.retriever import Retriever

    files = [examples] if isinstance(examples, (str, Path)) else list(examples)
    responses = [e.response for path in files for e in read_examples(path) if e.label == "positive"]
    out = Path(retriever_dir) / "candidates"
    return build_candidate_index(Retriever.load(retriever_dir, cache_dir), responses, out, progress)


def hard_negative_miner(index_dir: str | Path, progress: bool = True):
    """A reranker's hard negatives (``train.negatives.Miner``): the nearest candidates of a
    candidate index to each context."""
    from rolecall.train.negatives import Miner

    index = CandidateIndex.load(index_dir)
    return Miner(
        lambda contexts, n: [[t for _, t, _ in hits] for hits in index.search(contexts, n)],
        progress=progress,
    )


class CandidateIndex:
    """A saved candidate index and the retriever that encodes its queries."""

    def __init__(self, path: Path, manifest: dict, texts: list[str], index, retriever):
        self.path, self.manifest, self.texts, self.retriever = path, manifest, texts, retriever
        self._index = index
        # kept whole for the poly re-scoring; a few thousand x 256 floats
        self._vectors = index.reconstruct_n(0, index.ntotal)

    def __len__(self) -> int:
        return len(self.texts)

    @classmethod
    def load(cls, directory: str | Path, retriever=None) -> CandidateIndex:
        """The index in ``directory``; ``retriever`` (a ``Retriever`` or its directory)
        replaces the recorded one, e.g. a model directory that moved."""
        path = Path(directory)
        manifest = _read_manifest(path)
        lines = (path / CANDIDATES).read_bytes()
        if hashlib.sha256(lines).hexdigest() != manifest.get("candidates_sha256"):
            raise InputFileError(
                path / CANDIDATES,
                "does not match the manifest's SHA-256: "
                "the candidates changed after the index was built",
                fix=REBUILD,
            )
        texts = [json.loads(line)["text"] for line in lines.decode("utf-8").splitlines()]
        index = faiss_module().read_index(str(path / FAISS_FILE))
        if not index.ntotal == len(texts) == manifest["count"] or index.d != manifest["dim"]:
            raise InputFileError(
                path,
                f"is inconsistent: {len(texts)} candidates, "
                f"{index.ntotal} vectors of dimension {index.d}, manifest "
                f"{manifest['count']} x {manifest['dim']}",
                fix=REBUILD,
            )
        loaded = cls(path, manifest, texts, index, _retriever(path, manifest, retriever))
        loaded._check_retriever()
        return loaded

    def _check_retriever(self) -> None:
        """Re-encode the first candidate: another retriever (other weights, same kind and
        dim) gives another vector, and its scores would not compare with the index's."""
        again = self.retriever.encode_candidates(self.texts[:1])[0]
        if not np.allclose(again, self._vectors[0], rtol=1e-3, atol=1e-4):
            raise InputFileError(
                self.path,
                "was built with another retriever: the first candidate encodes differently now",
                fix="load it with the retriever it was built with, or " + REBUILD,
            )

    def search(
        self, contexts: Sequence[str], k: int = 10, depth: int | None = None
    ) -> list[list[tuple[int, str, float]]]:
        """For each context its ``k`` best candidates as ``(candidate_id, text, score)``,
        best first, equal scores in candidate order. ``depth`` (poly only): first-stage
        candidates re-scored, default the retriever's ``rerank_depth``."""
        if k < 1:
            raise ConfigError(f"k must be 1 or more, got {k}")
        if not contexts:
            return []
        return self.search_encoded(self.retriever.encode_contexts(contexts), k, depth)

    def search_encoded(
        self, encoded, k: int = 10, depth: int | None = None
    ) -> list[list[tuple[int, str, float]]]:
        """``search`` for contexts already encoded by the retriever (``encode_contexts``
        or ``contexts_from_states``: one backbone pass shared with the reranker)."""
        if k < 1:
            raise ConfigError(f"k must be 1 or more, got {k}")
        queries = self.retriever.query_vectors(encoded)
        if self.manifest["kind"] in SINGLE_VECTOR:
            fetch = min(len(self), k + 16)  # a little slack so ties at the cut sort stably
            scores, ids = self._index.search(queries, fetch)
            tops = [stable_top(row_ids, row_scores, k) for row_ids, row_scores in zip(ids, scores)]
        else:
            depth = depth or self.retriever.settings.rerank_depth
            tops = self._rerank(encoded, queries, max(depth, k), k)
        return [[(doc, self.texts[doc], score) for doc, score in top] for top in tops]

    def score_ids(self, encoded, ids: Sequence[int]) -> np.ndarray:
        """The retriever's scores of one encoded context against the candidates ``ids``
        (e.g. ones another first stage found), exact for either kind."""
        if not len(ids):
            return np.zeros(0, dtype=np.float32)
        return self.retriever.score_vectors(encoded, self._vectors[np.asarray(ids)][None])[0]

    def _rerank(
        self, encoded, queries: np.ndarray, depth: int, k: int
    ) -> list[list[tuple[int, float]]]:
        """The poly-encoder's two stages (see the module docstring)."""
        fetch = min(len(self), depth)
        if fetch == len(self):  # every candidate: exact, no first stage needed
            ids = np.tile(np.arange(len(self)), (len(queries), 1))
        else:
            _, ids = self._index.search(queries, fetch)
        ids = np.where(ids < 0, 0, ids)  # FAISS pads with -1 only when short: not here
        scores = self.retriever.score_vectors(encoded, self._vectors[ids])
        tops = []
        for row_ids, row_scores in zip(ids, scores):
            order = np.lexsort((row_ids, -row_scores))[:k]
            tops.append([(int(row_ids[i]), float(row_scores[i])) for i in order])
        return tops


def _read_manifest(path: Path) -> dict:
    for part in (MANIFEST, CANDIDATES, FAISS_FILE):
        if not (path / part).is_file():
            raise InputFileError(
                path, f"is not a complete candidate index: {part} is missing", fix=REBUILD
            )
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InputFileError(path / MANIFEST, "is not valid JSON", fix=REBUILD) from None
    if manifest.get("format") != INDEX_FORMAT or manifest.get("version") != FORMAT_VERSION:
        raise InputFileError(
            path / MANIFEST, f"is not a {INDEX_FORMAT} version {FORMAT_VERSION}", fix=REBUILD
        )
    return manifest


def _retriever(path: Path, manifest: dict, retriever):
    from rolecall.train.retriever import Retriever

    if isinstance(retriever, Retriever):
        given = retriever
    else:
        recorded = manifest.get("retriever")
        where = retriever or (recorded and Path(path) / recorded)  # absolute: kept as is
        if not where:
            raise InputFileError(
                path / MANIFEST,
                "names no retriever model (it was built with an unsaved one)",
                fix="pass the retriever: CandidateIndex.load(dir, retriever=MODEL_DIR)",
            )
        given = Retriever.load(where)
    if given.settings.kind != manifest["kind"] or given.settings.dim != manifest["dim"]:
        raise InputFileError(
            path,
            f"was built with a {manifest['kind']}-encoder of dim "
            f"{manifest['dim']}, not this {given.settings.kind}-encoder of "
            f"dim {given.settings.dim}",
            fix="load it with the retriever it was built with, or " + REBUILD,
        )
    return given
