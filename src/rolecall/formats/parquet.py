"""Parquet and Hugging Face ``datasets`` exports of K/DA pairs (the optional extra ``export``).

One row per ``Pair``: ``neutral``, ``implicit`` (the toxic rewrite, under K/DA's column
name), the provenance every generated pair has as typed columns (``PROVENANCE_COLUMNS``)
and everything else in its provenance as one JSON object in the ``provenance`` column, so
``read_parquet`` gives back exactly the pairs written. ``write_hf_dataset`` saves the same
Arrow table with ``Dataset.save_to_disk`` (open it with ``datasets.load_from_disk``).

Both writes are atomic: a killed export leaves the previous file or dataset in place.
pyarrow and datasets are imported only when a function here runs (``import datasets``
alone takes over a second) and never reach the network: nothing here names a hub.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import ValidationError

from rolecall import __version__
from rolecall.atomic import atomic_open
from rolecall.errors import ConfigError, InputFileError, RolecallError, describe_validation
from rolecall.formats.kda import WARNING
from rolecall.records import Pair

FORMAT = "kda-pairs"
FORMAT_VERSION = "1"
# The provenance keys that ``generate/kda.py`` gives every pair, with their column types.
PROVENANCE_COLUMNS = {
    "candidate_id": "string",
    "sentence_id": "string",
    "n": "int64",
    "comment_ids": "list<string>",
    "prompt_hash": "string",
    "model": "string",
    "seed": "int64",
}
COLUMNS = ("neutral", "implicit", *PROVENANCE_COLUMNS, "provenance")
INFO_KEYS = ("description", "license", "citation", "homepage")
DESCRIPTION = (
    "Neutral -> implicitly offensive Korean sentence pairs in the K/DA format "
    "(neutral, implicit) with their provenance, made with rolecall.\n\n" + WARNING
)
INSTALL_FIX = "pip install 'rolecall[export]'"
INT64 = (-(2**63), 2**63 - 1)


def _import(module: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        package = module.split(".")[0]
        raise RolecallError(
            f"the Parquet / datasets export needs the package {package}", fix=INSTALL_FIX
        ) from None


def schema():
    """The Arrow schema of a K/DA pairs table, with the format named in its metadata."""
    pa = _import("pyarrow")
    types = {"string": pa.string(), "int64": pa.int64(), "list<string>": pa.list_(pa.string())}
    fields = [
        pa.field("neutral", pa.string(), nullable=False),
        pa.field("implicit", pa.string(), nullable=False),
        *(pa.field(name, types[kind]) for name, kind in PROVENANCE_COLUMNS.items()),
        pa.field("provenance", pa.string()),
    ]
    return pa.schema(
        fields,
        metadata={
            "rolecall.format": FORMAT,
            "rolecall.format_version": FORMAT_VERSION,
            "rolecall.version": __version__,
        },
    )


def _fits(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "int64":
        return (
            isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]
        )
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _row(pair: Pair) -> dict:
    row: dict[str, Any] = {"neutral": pair.neutral, "implicit": pair.toxic}
    extra = {}
    for key, value in pair.provenance.items():
        kind = PROVENANCE_COLUMNS.get(key)
        if kind and _fits(kind, value):
            row[key] = value
        else:
            # subtle: an explicit None or a value of another type (sentence_id 7, n 3.0)
            # goes to the JSON column too, so it comes back as it was: not missing, not cast.
            extra[key] = value
    try:  # the JSON encoder of model_dump_json: what a JSONL file keeps, this column keeps
        row["provenance"] = pydantic_core.to_json(extra).decode() if extra else None
    except pydantic_core.PydanticSerializationError as exc:
        raise RolecallError(
            f"the provenance of the pair {pair.neutral!r} is not JSON ({exc})",
            fix="keep provenance values to JSON types",
        ) from None
    return row


def pairs_to_table(pairs: Iterable[Pair]):
    """The ``pyarrow.Table`` of ``pairs`` (typed columns even when there are none)."""
    pa = _import("pyarrow")
    return pa.Table.from_pylist([_row(pair) for pair in pairs], schema=schema())


def _cannot_write(path: Path, exc: OSError) -> RolecallError:
    return RolecallError(
        f"cannot write {path} ({exc.strerror or exc})",
        fix="choose a path in a folder you can write to",
    )


def write_parquet(path: str | Path, pairs: Iterable[Pair]) -> int:
    """Write ``pairs`` to a Parquet file atomically (a temp file renamed over it); count."""
    pq = _import("pyarrow.parquet")
    path = Path(path)
    table = pairs_to_table(pairs)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path, "wb") as handle:
            pq.write_table(table, handle)
    except OSError as exc:  # the temp file is gone already (atomic_open)
        raise _cannot_write(path, exc) from None
    return table.num_rows


def read_parquet(path: str | Path) -> list[Pair]:
    """The pairs of a Parquet file ``write_parquet`` wrote, exactly as they were written.

    A Parquet file from elsewhere with string columns ``neutral`` and ``implicit`` (the
    K/DA release's) is read like ``read_kda_csv`` reads the CSV: text stripped, provenance
    ``{"source": file name, "row": 0-based row}``, other columns ignored.
    """
    pa = _import("pyarrow")
    pq = _import("pyarrow.parquet")
    path = Path(path)
    if not path.is_file():
        raise InputFileError(
            path, "file not found" if not path.exists() else "not a file", fix="check the path"
        )
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputFileError(
            path,
            f"is not a readable Parquet file ({exc})",
            fix="give a file written by rolecall's Parquet export",
        ) from None
    metadata = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    if "rolecall.format" not in metadata:
        return _foreign_pairs(pa, table, path)
    if metadata["rolecall.format"] != FORMAT:
        raise InputFileError(
            path,
            f"holds rolecall {metadata['rolecall.format']!r} records, not K/DA pairs",
            fix="give a K/DA pairs file",
        )
    version = metadata.get("rolecall.format_version")
    if version != FORMAT_VERSION:
        raise InputFileError(
            path,
            f"is K/DA pairs format version {version}; this rolecall reads version {FORMAT_VERSION}",
            fix="upgrade rolecall",
        )
    table = _checked(pa, table, path)
    return [_own_pair(path, index, row) for index, row in enumerate(table.to_pylist())]


def _kind_of(pa, arrow_type) -> str | None:
    types = pa.types
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return "string"
    if types.is_integer(arrow_type):
        return "int64"
    if (types.is_list(arrow_type) or types.is_large_list(arrow_type)) and _kind_of(
        pa, arrow_type.value_type
    ) == "string":
        return "list<string>"
    return None


def _checked(pa, table, path: Path):
    """``table`` cast to ``schema()`` after checking its columns name and type by type."""
    missing = [c for c in COLUMNS if c not in table.column_names]
    unknown = [c for c in table.column_names if c not in COLUMNS]
    if missing or unknown:
        raise InputFileError(
            path,
            f"K/DA pairs columns missing {missing}, unexpected {unknown}",
            fix="export the pairs again with rolecall",
        )
    kinds = {
        "neutral": "string",
        "implicit": "string",
        **PROVENANCE_COLUMNS,
        "provenance": "string",
    }
    wrong = [
        f"{field.name}: {field.type}"
        for field in table.schema
        if not pa.types.is_null(field.type) and _kind_of(pa, field.type) != kinds[field.name]
    ]
    if wrong:
        raise InputFileError(
            path,
            f"columns of the wrong type ({', '.join(wrong)})",
            fix="export the pairs again with rolecall",
        )
    target = pa.schema([field.with_nullable(True) for field in schema()])
    try:  # nulls in neutral/implicit are left to Pair's validation, which names the row
        return table.select(list(COLUMNS)).cast(target)
    except pa.ArrowException as exc:
        raise InputFileError(
            path,
            f"columns do not fit the K/DA pairs types ({exc})",
            fix="export the pairs again with rolecall",
        ) from None


def _pair(path: Path, index: int, neutral, toxic, provenance: dict) -> Pair:
    try:
        return Pair(neutral=neutral, toxic=toxic, provenance=provenance)
    except ValidationError as exc:
        raise InputFileError(
            path,
            f"row {index}: not a valid pair: {describe_validation(exc, 'pair')}",
            fix="a row needs both neutral and implicit text",
        ) from None


def _own_pair(path: Path, index: int, row: dict) -> Pair:
    provenance = {key: row[key] for key in PROVENANCE_COLUMNS if row[key] is not None}
    if row["provenance"] is not None:
        try:
            extra = json.loads(row["provenance"])
        except json.JSONDecodeError:
            extra = None
        if not isinstance(extra, dict) or provenance.keys() & extra.keys():
            raise InputFileError(
                path,
                f"row {index}: the provenance column is not a JSON "
                "object of the other provenance keys",
                fix="export the pairs again with rolecall",
            )
        provenance.update(extra)
    return _pair(path, index, row["neutral"], row["implicit"], provenance)


def _foreign_pairs(pa, table, path: Path) -> list[Pair]:
    kinds = {field.name: _kind_of(pa, field.type) for field in table.schema}
    if kinds.get("neutral") != "string" or kinds.get("implicit") != "string":
        raise InputFileError(
            path,
            f"is not a K/DA pairs file: it needs the string columns "
            f"neutral and implicit; found {table.column_names}",
            fix="give a file written by rolecall's Parquet export",
        )
    rows = table.select(["neutral", "implicit"]).to_pylist()
    return [
        _pair(
            path,
            index,
            (row["neutral"] or "").strip(),
            (row["implicit"] or "").strip(),
            {"source": path.name, "row": index},
        )
        for index, row in enumerate(rows)
    ]


def _info_fields(info: dict | None) -> dict[str, str]:
    fields = dict(info or {})
    unknown = sorted(set(fields) - set(INFO_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown dataset info key(s) {unknown}",
            fix=f"use only {list(INFO_KEYS)} (note the spelling 'license')",
        )
    not_text = sorted(key for key, value in fields.items() if not isinstance(value, str))
    if not_text:
        raise ConfigError(f"dataset info {not_text} must be text", fix="pass strings")
    fields.setdefault("description", DESCRIPTION)
    return fields


@contextlib.contextmanager
def _no_progress_bars(datasets) -> Iterator[None]:
    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def _check_replaceable(out_dir: Path) -> None:
    """Refuse to replace anything but an empty folder or a dataset saved by ``datasets``."""
    if out_dir.exists() and not out_dir.is_dir():
        raise RolecallError(
            f"{out_dir} exists and is not a folder", fix="give a new folder for the dataset"
        )
    saved = (out_dir / "state.json").is_file() and (out_dir / "dataset_info.json").is_file()
    if out_dir.is_dir() and not saved and any(out_dir.iterdir()):
        raise RolecallError(
            f"{out_dir} is a folder that holds no saved dataset; not replacing it",
            fix="give a new or empty folder",
        )


def _swap_in(new: Path, out_dir: Path) -> None:
    # subtle: a directory cannot be renamed over a non-empty one, so the old dataset steps
    # aside first. Killed between the two renames, it is kept as .NAME.old, never lost.
    old = out_dir.with_name(f".{out_dir.name}.old")
    shutil.rmtree(old, ignore_errors=True)  # left by a killed run; `new` is complete
    if out_dir.exists():
        os.replace(out_dir, old)
    os.replace(new, out_dir)
    shutil.rmtree(old, ignore_errors=True)


def write_hf_dataset(
    out_dir: str | Path, pairs: Iterable[Pair], *, split: str = "train", info: dict | None = None
) -> int:
    """Save ``pairs`` as a ``datasets.Dataset`` in ``out_dir``; returns the row count.

    ``info`` sets the DatasetInfo's ``description``, ``license``, ``citation`` and
    ``homepage``; the description defaults to one with the offensive-content warning. The
    dataset is saved in a sibling ``.NAME.partial`` folder and renamed into place.
    """
    if not re.fullmatch(r"\w+(\.\w+)*", split):
        raise ConfigError(f"bad split name {split!r}", fix="use a name like train or test")
    fields = _info_fields(info)
    datasets = _import("datasets")
    out_dir = Path(out_dir).resolve()
    _check_replaceable(out_dir)
    table = pairs_to_table(pairs)
    dataset = datasets.Dataset(table, info=datasets.DatasetInfo(**fields), split=split)
    partial = out_dir.with_name(f".{out_dir.name}.partial")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(partial, ignore_errors=True)
        with _no_progress_bars(datasets):
            # subtle: datasets clamps the shard count to the row count, so an empty
            # dataset gets no data file and load_from_disk fails (huggingface/datasets
            # PR #8385 is the fix); an explicit single shard keeps the schema on disk.
            dataset.save_to_disk(str(partial), num_shards=1 if not len(table) else None)
        _swap_in(partial, out_dir)
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise _cannot_write(out_dir, exc) from None
    return table.num_rows
