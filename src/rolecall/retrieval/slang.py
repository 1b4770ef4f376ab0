"""The K/DA slang index: comment corpora searched for slang-bearing comments like a sentence.

K/DA (Jeon et al., ACL 2025) retrieves n in {0, 3, 5, 7, 9} community comments similar to
a neutral sentence and shows them to the LLM that rewrites the sentence, so that the
toxic variant uses current, community-specific slang. Here: ``build_index`` reads and
cleans the corpora (``clean.py``), tokenizes them into Kiwi morphemes and builds a BM25
index (bm25s); ``SlangIndex.load(dir).search(sentence, k)`` returns ``Hit(id, text,
score)`` where ``id`` is ``FILE:LINE`` of the comment, recorded as provenance.

Tokens (``search_tokens``), chosen for matching topic and slang, not grammar:

- only content morphemes are kept: nouns (NNG, NNP, NR), verb and adjective stems (VV,
  VA), adverbs (MAG), interjections (IC), roots (XR), prefixes and noun suffixes (XPN,
  XSN: slang lives in 개-, -충, -년), Latin/hanja/numbers (SL, SH, SN: "아18"), hashtags and
  emoji, and symbol runs made of Hangul jamo (SW "ㅅㅂ", "ㅋㅋ"). Particles, endings,
  copulas, auxiliaries, dependent nouns, pronouns, determiners and punctuation carry no
  topic and would only slow every query down.
- a token is ``form/T`` with T the first letter of the tag: the noun 나/N stays apart from
  the verb stem 나/V, but NNG-vs-NNP tagging noise on the same slang word still matches
  (the full ``form/TAG`` of ``eval.stats`` would split it).
- Latin is lowercased and runs of one character are cut to two (ㅋㅋㅋㅋ -> ㅋㅋ, ㅎㅎㅎ ->
  ㅎㅎ), and Kiwi's ``normalize_coda`` splits "했닼ㅋㅋ" into 했다 + ㅋㅋ.

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

import hashlib
import json
import logging
import re
import shutil
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from rolecall import __version__
from rolecall.errors import ConfigError, InputFileError, RolecallError
from rolecall.jsonl import read_jsonl, write_jsonl
from rolecall.korean import kiwi
from rolecall.progress import progress_bar
from rolecall.retrieval import dense
from rolecall.retrieval.clean import clean_records
from rolecall.retrieval.fusion import RRF_K, reciprocal_rank_fusion
from rolecall.rundir import write_json
from rolecall.textfiles import SPREADSHEET_DELIMITERS, normalize_delimiter, read_corpus

log = logging.getLogger(__name__)

INDEX_FORMAT = "rolecall-slang-index"
FORMAT_VERSION = 1
TOKEN_RULES_VERSION = 1  # bump when search_tokens changes: old indexes must be rebuilt
MANIFEST, COMMENTS, BM25_DIR = "manifest.json", "comments.jsonl", "bm25"
RETRIEVERS = ("bm25", "dense", "hybrid")
BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
KEPT_TAGS = frozenset(
    {
        "NNG",
        "NNP",
        "NR",
        "VV",
        "VA",
        "MAG",
        "IC",
        "XR",
        "XPN",
        "XSN",
        "SL",
        "SH",
        "SN",
        "W_HASHTAG",
        "W_EMOJI",
    }
)
JAMO_RE = re.compile("[\u3131-\u318e]")
REPEAT_RE = re.compile(r"(.)\1{2,}")
TOKENIZE_CHUNK = 2048  # texts per Kiwi call: big enough for its threads, small for the bar
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


@dataclass(frozen=True)
class Corpus:
    """One corpus file and how to read it (see ``textfiles.read_corpus``)."""

    path: Path
    column: str | None = None
    delimiter: str | None = None


def parse_corpus_spec(spec: str | Path, delimiter: str | None = None) -> Corpus:
    """``PATH`` or ``PATH:COLUMN`` (a header name, or a 1-based field number).

    A path that exists as given wins, so a file whose name has a colon still works. The
    delimiter (one for a whole command) applies only to a corpus with a column that is not
    ``.csv``/``.tsv``: those two always use their own, and plain files have none.
    """
    text = str(spec)
    path, _, column = text.rpartition(":")
    if Path(text).exists() or not path or not column or re.search(r"[/\\]", column):
        return Corpus(Path(text))
    if Path(path).suffix.lower() in SPREADSHEET_DELIMITERS:
        return Corpus(Path(path), column)
    return Corpus(Path(path), column, normalize_delimiter(delimiter))


def _require(retriever: str) -> None:
    if retriever not in RETRIEVERS:
        raise ConfigError(
            f"unknown retriever {retriever!r}", fix=f"use one of {', '.join(RETRIEVERS)}"
        )


def _check_build_options(retriever: str, dense_model: str | None) -> None:
    """A dense model exactly when the retriever needs one: never ignored, never guessed."""
    _require(retriever)
    if retriever != "bm25" and not dense_model:
        raise ConfigError(
            f"the {retriever} retriever needs a sentence-transformers model",
            fix="pass --dense-model PATH (dense_model=PATH), a model "
            "directory; rolecall never downloads models",
        )
    if retriever == "bm25" and dense_model:
        raise ConfigError(
            "a dense model is only used by the dense and hybrid retrievers",
            fix="add --retriever hybrid (or dense), or drop --dense-model",
        )


def _bm25s():
    try:
        import bm25s
    except ImportError:
        raise RolecallError(
            "the slang index needs the BM25 library bm25s", fix="pip install bm25s"
        ) from None
    # subtle: bm25s sets its own logger to DEBUG on import, which prints its chatter under
    # any root handler; NOTSET makes it follow the application's level (-v shows it)
    logging.getLogger("bm25s").setLevel(logging.NOTSET)
    return bm25s


def _token(form: str, tag: str) -> str | None:
    base = tag.split("-")[0]  # Kiwi marks irregular stems VV-I, VA-R, ...
    if base not in KEPT_TAGS and not (base == "SW" and JAMO_RE.search(form)):
        return None
    form = REPEAT_RE.sub(r"\1\1", form.lower())
    return f"{form}/{base[0]}"


def search_tokens(texts: Sequence[str], progress: bool = False) -> list[list[str]]:
    """Each text as retrieval tokens (see the module docstring); texts should be NFC."""
    analyser = kiwi()
    out: list[list[str]] = []
    with progress_bar(len(texts), "tokenizing comments", enabled=progress) as advance:
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            chunk = list(texts[start : start + TOKENIZE_CHUNK])
            for tokens in analyser.tokenize(chunk, normalize_coda=True):
                out.append([t for t in (_token(m.form, m.tag) for m in tokens) if t])
            advance(len(chunk))
    return out


def tokenizer_info() -> dict:
    from kiwipiepy import __version__ as kiwi_version

    return {
        "name": "kiwi-content-morphemes",
        "rules_version": TOKEN_RULES_VERSION,
        "kiwipiepy": kiwi_version,
        "normalize_coda": True,
        "kept_tags": sorted(KEPT_TAGS) + ["SW (jamo only)"],
        "token": "form/T",
    }


def _sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _read_corpora(corpora: Sequence[Corpus]) -> tuple[list[tuple[str, str]], list[dict]]:
    names = [c.path.name for c in corpora]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ConfigError(
            f"two corpora are named {clash[0]}: their comment ids (NAME:LINE) would collide",
            fix="rename or copy one of the files",
        )
    rows: list[tuple[str, str]] = []
    sources = []
    for corpus in corpora:
        found = read_corpus(corpus.path, corpus.column, corpus.delimiter)
        rows.extend(found)
        sources.append(
            {
                "name": corpus.path.name,
                "path": str(corpus.path.resolve()),
                "column": corpus.column,
                "delimiter": corpus.delimiter,
                "rows": len(found),
                "sha256": _sha256(corpus.path),
            }
        )
    return rows, sources


def _check_out_dir(out_dir: Path) -> None:
    """Refuse a directory holding anything but an index's own files (finished or not).

    Called before the slow part of a build too, so a wrong ``--out`` fails at once.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} exists and is not a directory", fix="choose another --out")
    ours = {MANIFEST, COMMENTS, BM25_DIR, dense.DENSE_DIR, MANIFEST + ".tmp", COMMENTS + ".tmp"}
    entries = out_dir.iterdir() if out_dir.is_dir() else []
    foreign = sorted(p.name for p in entries if p.name not in ours)
    if foreign:
        raise ConfigError(
            f"{out_dir} holds files that are not a slang index's "
            f"({', '.join(foreign[:3])}): refusing to write into it",
            fix="choose a new or empty directory for --out",
        )


def _prepare_out_dir(out_dir: Path) -> None:
    _check_out_dir(out_dir)
    # the manifest goes last: a directory without one is an unfinished build
    (out_dir / MANIFEST).unlink(missing_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    old_dense = out_dir / dense.DENSE_DIR  # a previous build's: stale whatever comes next
    if old_dense.is_dir():
        shutil.rmtree(old_dense)
    else:
        old_dense.unlink(missing_ok=True)


def save_index(
    out_dir: str | Path,
    records: Sequence[tuple[str, str]],
    tokens: Sequence[Sequence[str]],
    manifest: dict,
    vectors: tuple[np.ndarray, dict] | None = None,
) -> dict:
    """BM25 over ``tokens`` written to ``out_dir`` with the comments and the manifest.

    The second half of ``build_index``, split out so the benchmark can time it apart from
    the tokenization. ``vectors`` (embeddings and ``dense.dense_info``) add the dense
    part, written before the manifest so that a killed build is never taken for a complete
    one. Returns the manifest as written.
    """
    out_dir = Path(out_dir)
    if not any(tokens):
        raise InputFileError(
            out_dir,
            "no searchable words in the corpora (every comment "
            "was only particles, endings or punctuation)",
            fix="check the corpora and the column",
        )
    bm25s = _bm25s()
    _prepare_out_dir(out_dir)
    retriever = bm25s.BM25(**BM25_PARAMS)
    retriever.index([t if isinstance(t, list) else list(t) for t in tokens], show_progress=False)
    retriever.save(str(out_dir / BM25_DIR), show_progress=False)
    write_jsonl(out_dir / COMMENTS, ({"id": i, "text": t} for i, t in records))
    retrievers = ["bm25"]
    if vectors is not None:
        dense.write_dense(out_dir, *vectors)
        retrievers += ["dense", "hybrid"]
    manifest = {
        "format": INDEX_FORMAT,
        "format_version": FORMAT_VERSION,
        "default_retriever": "bm25",
        **manifest,
        "comments": len(records),
        "vocabulary": len(retriever.vocab_dict),
        "retrievers": retrievers,
        "tokenizer": tokenizer_info(),
        "bm25": {"library": "bm25s", "version": bm25s.__version__, **BM25_PARAMS},
    }
    if vectors is not None:
        manifest["dense"] = {k: v for k, v in vectors[1].items() if k != "probe"}
    write_json(out_dir / MANIFEST, manifest)
    return manifest


def build_index(
    corpora: Iterable[Corpus | str | Path],
    out_dir: str | Path,
    *,
    min_chars: int = 5,
    max_chars: int | None = 300,
    retriever: str = "bm25",
    dense_model: str | None = None,
    progress: bool = True,
) -> dict:
    """Read, clean, tokenize and index ``corpora`` into ``out_dir``; returns the manifest.

    ``corpora`` are ``Corpus`` objects or ``PATH[:COLUMN]`` strings. Duplicates are
    dropped across corpora (the first one keeps its id). ``retriever`` ``"dense"`` or
    ``"hybrid"`` also embeds the comments with ``dense_model`` (a sentence-transformers
    model directory, or a name in the local Hugging Face cache) and becomes the index's
    ``default_retriever``.
    """
    _check_build_options(retriever, dense_model)
    corpora = [c if isinstance(c, Corpus) else parse_corpus_spec(c) for c in corpora]
    if not corpora:
        raise ConfigError("no corpus given", fix="name at least one corpus file")
    _check_out_dir(Path(out_dir))
    started = time.perf_counter()
    # the model loads first: a wrong one must fail before minutes of tokenizing
    encoder = dense.load_encoder(dense_model) if dense_model else None
    loaded = time.perf_counter()
    rows, sources = _read_corpora(corpora)
    records, report = clean_records(rows, min_chars, max_chars)
    kept_by_source: dict[str, int] = {}
    for source_id, _ in records:
        name = source_id.rpartition(":")[0]
        kept_by_source[name] = kept_by_source.get(name, 0) + 1
    for source in sources:
        source["kept"] = kept_by_source.get(source["name"], 0)
    cleaned = time.perf_counter()
    texts = [text for _, text in records]
    tokens = search_tokens(texts, progress=progress)
    tokenized = time.perf_counter()
    vectors = None
    if encoder is not None and any(tokens):  # no searchable words: save_index says so
        embeddings = dense.encode(encoder, texts, progress=progress)
        vectors = (embeddings, dense.dense_info(encoder, dense_model, embeddings))
    embedded = time.perf_counter()
    manifest = {
        "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "rolecall": __version__,
        "default_retriever": retriever,
        "sources": sources,
        "cleaning": report,
    }
    manifest = save_index(out_dir, records, tokens, manifest, vectors)
    finished = time.perf_counter()
    manifest["build_seconds"] = {
        **({"load_model": round(loaded - started, 3)} if encoder is not None else {}),
        "read_and_clean": round(cleaned - loaded, 3),
        "tokenize": round(tokenized - cleaned, 3),
        **({"embed": round(embedded - tokenized, 3)} if vectors is not None else {}),
        "index_and_save": round(finished - embedded, 3),
        "total": round(finished - started, 3),
    }
    write_json(Path(out_dir) / MANIFEST, manifest)
    return manifest


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
        bm25 = _bm25s().BM25.load(str(path / BM25_DIR), show_progress=False)
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
        _require(retriever)
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


def summarize(manifest: dict, out_dir: str | Path) -> str:
    """One paragraph for people: what went in, what was dropped and why, how long."""
    report = manifest["cleaning"]
    dropped = ", ".join(
        f"{n:,} {reason.replace('_', ' ')}" for reason, n in report["dropped"].items()
    )
    seconds = manifest.get("build_seconds", {}).get("total")
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    embedded = (
        f"; embedded with {manifest['dense']['model']} (dimension "
        f"{manifest['dense']['dimension']}), searched by "
        f"{manifest['default_retriever']} unless told otherwise"
        if "dense" in manifest
        else ""
    )
    return (
        f"{out_dir}: slang index of {manifest['comments']:,} comments from "
        f"{len(manifest['sources'])} corpora ({report['input']:,} rows read; dropped "
        f"{dropped}; kept {report['kept_without_hangul']:,} without Hangul; "
        f"{manifest['vocabulary']:,} distinct tokens{embedded}){took}"
    )


def index_command(
    corpora: list[str],
    out: Path,
    min_chars: int = 5,
    max_chars: int | None = 300,
    delimiter: str | None = None,
    retriever: str = "bm25",
    dense_model: str | None = None,
    progress: bool = True,
) -> str:
    """``rolecall slang index``: build, then the summary line to print."""
    specs = [parse_corpus_spec(c, delimiter) for c in corpora]
    manifest = build_index(
        specs,
        out,
        min_chars=min_chars,
        max_chars=max_chars,
        retriever=retriever,
        dense_model=dense_model,
        progress=progress,
    )
    return summarize(manifest, out)


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
