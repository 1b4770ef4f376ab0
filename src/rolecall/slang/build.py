"""Building a K/DA slang index: corpora read and cleaned, tokenized, indexed and written.

``build_index`` reads the corpora (``textfiles.read_corpus``), cleans them (``clean.py``),
tokenizes them into Kiwi content morphemes (``tokens.py``) and writes a BM25 index
(bm25s), the comments and ``manifest.json`` to a directory that ``index.SlangIndex``
loads; with a dense model it also writes the embeddings (``dense.py``). The directory's
format (its file names, the manifest's format and version) is defined here, where it is
written. The manifest goes last, so a killed build is never taken for a complete one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rolecall import __version__
from rolecall.errors import ConfigError, InputFileError
from rolecall.jsonl import write_jsonl
from rolecall.retrieval.bm25 import BM25_PARAMS, load_bm25s
from rolecall.retrieval.tokens import search_tokens, tokenizer_info
from rolecall.rundir import now_iso, write_json
from rolecall.slang import dense
from rolecall.slang.clean import clean_records
from rolecall.textfiles import SPREADSHEET_DELIMITERS, normalize_delimiter, read_corpus

INDEX_FORMAT = "rolecall-slang-index"
FORMAT_VERSION = 1
MANIFEST, COMMENTS, BM25_DIR = "manifest.json", "comments.jsonl", "bm25"
RETRIEVERS = ("bm25", "dense", "hybrid")


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


def require_retriever(retriever: str) -> None:
    if retriever not in RETRIEVERS:
        raise ConfigError(
            f"unknown retriever {retriever!r}", fix=f"use one of {', '.join(RETRIEVERS)}"
        )


def _check_build_options(retriever: str, dense_model: str | None) -> None:
    """A dense model exactly when the retriever needs one: never ignored, never guessed."""
    require_retriever(retriever)
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
    bm25s = load_bm25s()
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
        # relative to the index: it moves with its corpora
        source["path"] = os.path.relpath(source["path"], Path(out_dir).resolve())
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
        "built_at": now_iso(),
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
