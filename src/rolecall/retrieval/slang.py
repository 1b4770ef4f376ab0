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
Dense retrieval and hybrid fusion have their place in the API (``retriever=``) but are
not implemented yet: asking for them raises ``ConfigError``, never a silent BM25.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from rolecall import __version__
from rolecall.errors import ConfigError, InputFileError, RolecallError
from rolecall.eval.stats import kiwi
from rolecall.jsonl import read_jsonl, write_jsonl
from rolecall.progress import progress_bar
from rolecall.retrieval.clean import (SPREADSHEET_DELIMITERS, clean_records,
                                      normalize_delimiter, read_corpus)

log = logging.getLogger(__name__)

INDEX_FORMAT = "rolecall-slang-index"
FORMAT_VERSION = 1
TOKEN_RULES_VERSION = 1  # bump when search_tokens changes: old indexes must be rebuilt
MANIFEST, COMMENTS, BM25_DIR = "manifest.json", "comments.jsonl", "bm25"
RETRIEVERS = ("bm25", "dense", "hybrid")
BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
KEPT_TAGS = frozenset({"NNG", "NNP", "NR", "VV", "VA", "MAG", "IC", "XR", "XPN", "XSN",
                       "SL", "SH", "SN", "W_HASHTAG", "W_EMOJI"})
JAMO_RE = re.compile("[\u3131-\u318e]")
REPEAT_RE = re.compile(r"(.)\1{2,}")
TOKENIZE_CHUNK = 2048  # texts per Kiwi call: big enough for its threads, small for the bar


@dataclass(frozen=True)
class Hit:
    """One retrieved comment: ``id`` is ``FILE:LINE`` in its corpus, ``score`` is BM25."""

    id: str
    text: str
    score: float


@dataclass(frozen=True)
class Corpus:
    """One corpus file and how to read it (see ``clean.read_corpus``)."""

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


def _require(retriever: str, dense_model: str | None = None) -> None:
    if retriever not in RETRIEVERS:
        raise ConfigError(f"unknown retriever {retriever!r}", fix=f"use one of {RETRIEVERS}")
    if retriever != "bm25" or dense_model is not None:
        raise ConfigError(f"the {retriever!r} retriever (dense embeddings in FAISS, hybrid "
                          "by reciprocal-rank fusion) is not implemented yet",
                          fix="use retriever='bm25' (Kiwi morphemes + BM25), without a "
                              "dense model")


def _bm25s():
    try:
        import bm25s
    except ImportError:
        raise RolecallError("the slang index needs the BM25 library bm25s",
                            fix="pip install bm25s") from None
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
            chunk = list(texts[start: start + TOKENIZE_CHUNK])
            for tokens in analyser.tokenize(chunk, normalize_coda=True):
                out.append([t for t in (_token(m.form, m.tag) for m in tokens) if t])
            advance(len(chunk))
    return out


def tokenizer_info() -> dict:
    from kiwipiepy import __version__ as kiwi_version

    return {"name": "kiwi-content-morphemes", "rules_version": TOKEN_RULES_VERSION,
            "kiwipiepy": kiwi_version, "normalize_coda": True,
            "kept_tags": sorted(KEPT_TAGS) + ["SW (jamo only)"], "token": "form/T"}


def _sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _read_corpora(corpora: Sequence[Corpus]) -> tuple[list[tuple[str, str]], list[dict]]:
    names = [c.path.name for c in corpora]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ConfigError(f"two corpora are named {clash[0]}: their comment ids (NAME:LINE) "
                          "would collide", fix="rename or copy one of the files")
    rows: list[tuple[str, str]] = []
    sources = []
    for corpus in corpora:
        found = read_corpus(corpus.path, corpus.column, corpus.delimiter)
        rows.extend(found)
        sources.append({"name": corpus.path.name, "path": str(corpus.path.resolve()),
                        "column": corpus.column, "delimiter": corpus.delimiter,
                        "rows": len(found), "sha256": _sha256(corpus.path)})
    return rows, sources


def _check_out_dir(out_dir: Path) -> None:
    """Refuse a directory holding anything but an index's own files (finished or not).

    Called before the slow part of a build too, so a wrong ``--out`` fails at once.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} exists and is not a directory",
                          fix="choose another --out")
    ours = {MANIFEST, COMMENTS, BM25_DIR, MANIFEST + ".tmp", COMMENTS + ".tmp"}
    entries = out_dir.iterdir() if out_dir.is_dir() else []
    foreign = sorted(p.name for p in entries if p.name not in ours)
    if foreign:
        raise ConfigError(f"{out_dir} holds files that are not a slang index's "
                          f"({', '.join(foreign[:3])}): refusing to write into it",
                          fix="choose a new or empty directory for --out")


def _prepare_out_dir(out_dir: Path) -> None:
    _check_out_dir(out_dir)
    # the manifest goes last: a directory without one is an unfinished build
    (out_dir / MANIFEST).unlink(missing_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)


def _write_json(path: Path, data: dict) -> None:
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)


def save_index(out_dir: str | Path, records: Sequence[tuple[str, str]],
               tokens: Sequence[Sequence[str]], manifest: dict) -> dict:
    """BM25 over ``tokens`` written to ``out_dir`` with the comments and the manifest.

    The second half of ``build_index``, split out so the benchmark can time it apart from
    the tokenization. Returns the manifest as written.
    """
    out_dir = Path(out_dir)
    if not any(tokens):
        raise InputFileError(out_dir, "no searchable words in the corpora (every comment "
                             "was only particles, endings or punctuation)",
                             fix="check the corpora and the column")
    bm25s = _bm25s()
    _prepare_out_dir(out_dir)
    retriever = bm25s.BM25(**BM25_PARAMS)
    retriever.index([t if isinstance(t, list) else list(t) for t in tokens],
                    show_progress=False)
    retriever.save(str(out_dir / BM25_DIR), show_progress=False)
    write_jsonl(out_dir / COMMENTS, ({"id": i, "text": t} for i, t in records))
    manifest = {"format": INDEX_FORMAT, "format_version": FORMAT_VERSION, **manifest,
                "comments": len(records), "vocabulary": len(retriever.vocab_dict),
                "retrievers": ["bm25"], "tokenizer": tokenizer_info(),
                "bm25": {"library": "bm25s", "version": bm25s.__version__, **BM25_PARAMS}}
    _write_json(out_dir / MANIFEST, manifest)
    return manifest


def build_index(corpora: Iterable[Corpus | str | Path], out_dir: str | Path, *,
                min_chars: int = 5, max_chars: int | None = 300, retriever: str = "bm25",
                dense_model: str | None = None, progress: bool = True) -> dict:
    """Read, clean, tokenize and index ``corpora`` into ``out_dir``; returns the manifest.

    ``corpora`` are ``Corpus`` objects or ``PATH[:COLUMN]`` strings. Duplicates are
    dropped across corpora (the first one keeps its id). ``retriever`` other than
    ``"bm25"`` or a ``dense_model`` raise ``ConfigError`` (not implemented yet).
    """
    _require(retriever, dense_model)
    corpora = [c if isinstance(c, Corpus) else parse_corpus_spec(c) for c in corpora]
    if not corpora:
        raise ConfigError("no corpus given", fix="name at least one corpus file")
    _check_out_dir(Path(out_dir))
    started = time.perf_counter()
    rows, sources = _read_corpora(corpora)
    records, report = clean_records(rows, min_chars, max_chars)
    kept_by_source: dict[str, int] = {}
    for source_id, _ in records:
        name = source_id.rpartition(":")[0]
        kept_by_source[name] = kept_by_source.get(name, 0) + 1
    for source in sources:
        source["kept"] = kept_by_source.get(source["name"], 0)
    cleaned = time.perf_counter()
    tokens = search_tokens([text for _, text in records], progress=progress)
    tokenized = time.perf_counter()
    manifest = {"built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "rolecall": __version__, "sources": sources, "cleaning": report}
    manifest = save_index(out_dir, records, tokens, manifest)
    finished = time.perf_counter()
    manifest["build_seconds"] = {"read_and_clean": round(cleaned - started, 3),
                                 "tokenize": round(tokenized - cleaned, 3),
                                 "index_and_save": round(finished - tokenized, 3),
                                 "total": round(finished - started, 3)}
    _write_json(Path(out_dir) / MANIFEST, manifest)
    return manifest


def _load_manifest(path: Path) -> dict:
    fix = "build one: rolecall slang index CORPUS... --out DIR"
    if not path.is_dir():
        raise InputFileError(path, "not found" if not path.exists() else
                             "is a file, not a slang index directory", fix=fix)
    if not (path / MANIFEST).is_file():
        raise InputFileError(path, "is not a slang index (no manifest.json; an unfinished "
                             "build also has none)", fix=fix)
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != INDEX_FORMAT:
        raise InputFileError(path / MANIFEST, "is not a rolecall slang index manifest",
                             fix=fix)
    if manifest.get("format_version", 0) > FORMAT_VERSION:
        raise InputFileError(path, "was built by a newer rolecall", fix="upgrade rolecall")
    if manifest["tokenizer"].get("rules_version") != TOKEN_RULES_VERSION:
        raise InputFileError(path, "was built with other tokenization rules than this "
                             "rolecall uses", fix="rebuild it with rolecall slang index")
    return manifest


class SlangIndex:
    """A built index, loaded: the BM25 matrices plus the comments they point at."""

    def __init__(self, path: Path, manifest: dict, ids: list[str], texts: list[str], bm25):
        self.path, self.manifest, self.ids, self.texts = path, manifest, ids, texts
        self._bm25 = bm25
        self._vocab: dict[str, int] = bm25.vocab_dict

    @classmethod
    def load(cls, path: str | Path) -> SlangIndex:
        """Open ``path``; a directory that is not a complete index is an ``InputFileError``."""
        path = Path(path)
        manifest = _load_manifest(path)
        for part in (COMMENTS, BM25_DIR):
            if not (path / part).exists():
                raise InputFileError(path, f"is an incomplete slang index: {part} is missing",
                                     fix="rebuild it with rolecall slang index")
        comments = list(read_jsonl(path / COMMENTS))
        bm25 = _bm25s().BM25.load(str(path / BM25_DIR), show_progress=False)
        if bm25.scores["num_docs"] != len(comments):
            raise InputFileError(path, f"is inconsistent: {len(comments)} comments but "
                                 f"{bm25.scores['num_docs']} indexed documents",
                                 fix="rebuild it with rolecall slang index")
        built_with = manifest["tokenizer"].get("kiwipiepy")
        if built_with != tokenizer_info()["kiwipiepy"]:
            log.warning("%s was built with kiwipiepy %s, this is %s: query morphemes may "
                        "differ slightly; rebuild the index to be sure", path, built_with,
                        tokenizer_info()["kiwipiepy"])
        return cls(path, manifest, [c["id"] for c in comments],
                   [c["text"] for c in comments], bm25)

    def __len__(self) -> int:
        return len(self.ids)

    def _top_k(self, tokens: Sequence[str], k: int) -> list[Hit]:
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
        return [Hit(self.ids[i], self.texts[i], float(scores[i])) for i in top]

    def search(self, query: str, k: int = 9, retriever: str = "bm25") -> list[Hit]:
        """The ``k`` comments most like ``query``, best first (fewer if few match)."""
        return self.search_many([query], k, retriever)[0]

    def search_many(self, queries: Sequence[str], k: int = 9, retriever: str = "bm25"
                    ) -> list[list[Hit]]:
        """``search`` for each query; the queries are tokenized in one Kiwi batch."""
        _require(retriever)
        if k < 0:
            raise ConfigError(f"k must be 0 or more, got {k}")
        if k == 0:
            return [[] for _ in queries]
        tokens = search_tokens([unicodedata.normalize("NFC", q) for q in queries])
        return [self._top_k(t, k) for t in tokens]


def summarize(manifest: dict, out_dir: str | Path) -> str:
    """One paragraph for people: what went in, what was dropped and why, how long."""
    report = manifest["cleaning"]
    dropped = ", ".join(f"{n:,} {reason.replace('_', ' ')}"
                        for reason, n in report["dropped"].items())
    seconds = manifest.get("build_seconds", {}).get("total")
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    return (f"{out_dir}: slang index of {manifest['comments']:,} comments from "
            f"{len(manifest['sources'])} corpora ({report['input']:,} rows read; dropped "
            f"{dropped}; kept {report['kept_without_hangul']:,} without Hangul; "
            f"{manifest['vocabulary']:,} distinct tokens){took}")


def index_command(corpora: list[str], out: Path, min_chars: int = 5,
                  max_chars: int | None = 300, delimiter: str | None = None,
                  retriever: str = "bm25", dense_model: str | None = None,
                  progress: bool = True) -> str:
    """``rolecall slang index``: build, then the summary line to print."""
    specs = [parse_corpus_spec(c, delimiter) for c in corpora]
    manifest = build_index(specs, out, min_chars=min_chars, max_chars=max_chars,
                           retriever=retriever, dense_model=dense_model, progress=progress)
    return summarize(manifest, out)


def search_command(index_dir: Path, query: str, k: int = 9) -> list[Hit]:
    """``rolecall slang search``: the hits, for the CLI to print (``format_hits``)."""
    return SlangIndex.load(index_dir).search(query, k)


def format_hits(hits: Sequence[Hit]) -> str:
    """Rank, score, id and text, one hit a line; '(no hits)' says a search found nothing."""
    if not hits:
        return "(no hits)"
    return "\n".join(f"{rank:>2}. {hit.score:7.3f}  {hit.id}  {hit.text}"
                     for rank, hit in enumerate(hits, start=1))


def hits_to_json(hits: Sequence[Hit]) -> str:
    return "\n".join(json.dumps(asdict(hit), ensure_ascii=False) for hit in hits)
