"""``rolecall slang``: the K/DA slang index."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

import typer

from rolecall.cli.common import DELIMITER_OPTION, PROGRESS_OPTION, out, out_directory

slang_app = typer.Typer(
    help="K/DA slang index: comment corpora searched for trend-aligned slang.", no_args_is_help=True
)

CORPUS_HELP = (
    "corpus files: PATH (one comment a line) or PATH:COLUMN (a header name, or a "
    "1-based field number for a file without a header); .csv/.tsv must name "
    "their column"
)


@slang_app.command("index")
def slang_index(
    corpora: list[str] = typer.Argument(..., help=CORPUS_HELP),
    out_dir: Path = typer.Option(
        ..., "--out", "-o", callback=out_directory, help="the index directory to write"
    ),
    delimiter: Optional[str] = DELIMITER_OPTION,
    min_chars: int = typer.Option(
        5, min=0, help="drop shorter comments (characters, after cleaning)"
    ),
    max_chars: int = typer.Option(300, min=1, help="drop longer comments"),
    retriever: Literal["bm25", "dense", "hybrid"] = typer.Option(
        "bm25",
        help="bm25 (Kiwi morphemes), dense (embeddings in FAISS) or hybrid "
        "(reciprocal-rank fusion of both): BM25 is always built; this "
        "becomes the index's default for 'slang search'",
    ),
    dense_model: Optional[str] = typer.Option(
        None,
        help="for dense/hybrid: 'sentence' or 'e5' (the bundled encoders), a "
        "sentence-transformers model directory, or a name already in the local Hugging "
        "Face cache (never downloaded)",
    ),
    progress: bool = PROGRESS_OPTION,
):
    """Build a slang index: clean the comments, Kiwi morphemes, BM25 (bm25s), and
    optionally sentence-transformers embeddings in FAISS."""
    from rolecall.slang.index import index_command

    out.print(
        index_command(
            corpora,
            out_dir,
            min_chars=min_chars,
            max_chars=max_chars,
            delimiter=delimiter,
            retriever=retriever,
            dense_model=dense_model,
            progress=progress,
        ),
        highlight=False,
        markup=False,
    )


@slang_app.command("search")
def slang_search(
    index_dir: Path = typer.Argument(..., help="a directory built by 'slang index'"),
    query: str = typer.Argument(..., help="the sentence to find slang-bearing comments for"),
    k: int = typer.Option(9, "-k", "--k", min=1, help="how many comments (K/DA: 1-9)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per hit"),
    retriever: Optional[Literal["bm25", "dense", "hybrid"]] = typer.Option(
        None, help="bm25, dense or hybrid (default: the one the index was built for)"
    ),
    dense_model: Optional[str] = typer.Option(
        None,
        help="the model to embed the query with, if the one recorded in the "
        "index has moved (it must be the same model)",
    ),
):
    """The comments most like a sentence: rank, score (BM25, cosine for dense, RRF for
    hybrid), FILE:LINE id, text."""
    from rolecall.slang.index import format_hits, hits_to_json, search_command

    hits = search_command(index_dir, query, k, retriever, dense_model)
    out.print(hits_to_json(hits) if as_json else format_hits(hits), highlight=False, markup=False)
