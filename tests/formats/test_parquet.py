import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rolecall.errors import ConfigError, InputFileError, RolecallError
from rolecall.formats.kda import WARNING
from rolecall.formats.parquet import (
    COLUMNS,
    pairs_to_table,
    read_parquet,
    write_hf_dataset,
    write_parquet,
)
from rolecall.records import Pair

REPO = Path(__file__).resolve().parents[2]


def generated(candidate: str, n: int, comments: list[str], **extra) -> Pair:
    """A pair with the provenance ``generate/kda.py`` gives it, plus ``extra`` keys."""
    return Pair(
        neutral="오늘 회의는 세 시에 시작합니다.",
        toxic=f"회의래 ㅋㅋ 또 시작이네 {candidate}",
        provenance={
            "candidate_id": candidate,
            "sentence_id": "s-1",
            "n": n,
            "comment_ids": comments,
            "prompt_hash": "ab12",
            "model": "fake:echo",
            "seed": 7,
            **extra,
        },
    )


PAIRS = [
    generated("s-1:n0:0", 0, []),
    generated(
        "s-1:n3:1",
        3,
        ["comments.csv:12", "comments.csv:40", "댓글.txt:3"],
        judge={"consistency": "maintained", "scores": [0.9, 0.1]},
    ),
    # an explicit None and values of other types than the columns' stay as they were
    Pair(
        neutral="비가 와서 길이 막힌다.",
        toxic="비 오면 또 거북이 운전 ㅉㅉ",
        provenance={
            "sentence_id": 17,
            "n": 3.0,
            "seed": None,
            "comment_ids": ["x", 2],
            "note": "손으로 고침",
        },
    ),
    Pair(neutral='그는 "괜찮다"고,\n말했다.', toxic="괜찮다고? 퍽이나, ㅋㅋ"),
]


def test_round_trip_is_lossless(tmp_path):
    path = tmp_path / "out" / "pairs.parquet"
    assert write_parquet(path, iter(PAIRS)) == 4
    assert read_parquet(path) == PAIRS
    assert [p.name for p in path.parent.iterdir()] == ["pairs.parquet"]  # no temp file left


def test_columns_are_typed_and_flattened(tmp_path):
    path = tmp_path / "pairs.parquet"
    write_parquet(path, PAIRS)
    table = pq.read_table(path)
    assert tuple(table.column_names) == COLUMNS
    assert table.schema.field("n").type == pa.int64()
    assert table.schema.field("comment_ids").type == pa.list_(pa.string())
    assert table.schema.metadata[b"rolecall.format"] == b"kda-pairs"
    rows = table.to_pylist()
    assert rows[1]["implicit"] == PAIRS[1].toxic and rows[1]["n"] == 3
    assert rows[1]["comment_ids"][2] == "댓글.txt:3"
    assert json.loads(rows[1]["provenance"]) == {
        "judge": {"consistency": "maintained", "scores": [0.9, 0.1]}
    }
    assert rows[0]["provenance"] is None and rows[0]["comment_ids"] == []
    assert (rows[2]["sentence_id"], rows[2]["n"], rows[2]["seed"]) == (None, None, None)
    assert json.loads(rows[2]["provenance"]) == {
        "sentence_id": 17,
        "n": 3.0,
        "seed": None,
        "comment_ids": ["x", 2],
        "note": "손으로 고침",
    }
    assert rows[3]["candidate_id"] is None and rows[3]["provenance"] is None


def test_an_empty_export_keeps_the_schema(tmp_path):
    path = tmp_path / "empty.parquet"
    assert write_parquet(path, []) == 0
    assert read_parquet(path) == []
    schema = pq.read_schema(path)
    assert schema.names == list(COLUMNS)
    assert schema.field("seed").type == pa.int64() and schema.field("neutral").type == pa.string()


def test_a_foreign_file_with_the_kda_columns_is_read_like_the_csv(tmp_path):
    path = tmp_path / "kda.parquet"
    pq.write_table(
        pa.table({"neutral": [" 안녕하세요 "], "implicit": ["안녕하시긴 ㅋ"], "label": [1]}), path
    )
    assert read_parquet(path) == [
        Pair(
            neutral="안녕하세요",
            toxic="안녕하시긴 ㅋ",
            provenance={"source": "kda.parquet", "row": 0},
        )
    ]


def test_bad_files_are_named(tmp_path):
    with pytest.raises(InputFileError, match="file not found"):
        read_parquet(tmp_path / "nope.parquet")
    garbage = tmp_path / "garbage.parquet"
    garbage.write_text("neutral,implicit\n가,나\n", encoding="utf-8")
    with pytest.raises(InputFileError, match="not a readable Parquet file") as info:
        read_parquet(garbage)
    assert info.value.fix
    cut = tmp_path / "cut.parquet"
    write_parquet(cut, PAIRS)
    cut.write_bytes(cut.read_bytes()[:-20])
    with pytest.raises(InputFileError, match="not a readable Parquet file"):
        read_parquet(cut)


def write_with(path: Path, table: pa.Table, **metadata) -> Path:
    metadata = {"rolecall.format": "kda-pairs", "rolecall.format_version": "1", **metadata}
    pq.write_table(table.replace_schema_metadata(metadata), path)
    return path


def own_table() -> pa.Table:
    return pairs_to_table(PAIRS[:2])


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda: pa.table({"text": ["가"]}), "is not a K/DA pairs file"),
        (lambda: pa.table({"neutral": [1], "implicit": [2]}), "needs the string columns"),
        (
            lambda: own_table().replace_schema_metadata({"rolecall.format": "examples"}),
            "holds rolecall 'examples' records",
        ),
    ],
)
def test_other_parquet_files_are_refused(tmp_path, make, needle):
    path = tmp_path / "other.parquet"
    pq.write_table(make(), path)
    with pytest.raises(InputFileError, match=needle) as info:
        read_parquet(path)
    assert str(path) in str(info.value) and info.value.fix


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda t: t.drop_columns(["seed"]), "missing ['seed']"),
        (lambda t: t.set_column(4, "n", pa.array(["3", "5"])), "wrong type (n: string)"),
        (
            lambda t: t.set_column(9, "provenance", pa.array(["[1]", None])),
            "row 0: the provenance column is not a JSON object",
        ),
        (
            lambda t: t.set_column(9, "provenance", pa.array(['{"n": 1}', None])),
            "row 0: the provenance column is not a JSON object",
        ),
        (lambda t: t.set_column(1, "implicit", pa.array(["ㅋ", None])), "row 1: not a valid pair"),
    ],
)
def test_damaged_own_files_name_the_problem(tmp_path, change, needle):
    path = write_with(tmp_path / "pairs.parquet", change(own_table()))
    with pytest.raises(InputFileError) as info:
        read_parquet(path)
    assert needle in str(info.value)


def test_a_newer_format_version_asks_for_an_upgrade(tmp_path):
    path = write_with(tmp_path / "pairs.parquet", own_table(), **{"rolecall.format_version": "2"})
    with pytest.raises(InputFileError, match="version 2") as info:
        read_parquet(path)
    assert info.value.fix == "upgrade rolecall"


def test_unwritable_paths_give_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(RolecallError, match="cannot write") as info:
        write_parquet(blocker / "pairs.parquet", PAIRS)
    assert info.value.fix
    with pytest.raises(RolecallError, match="cannot write"):
        write_parquet(tmp_path, PAIRS)  # a folder
    with pytest.raises(RolecallError, match="cannot write"):
        write_hf_dataset(blocker / "ds", PAIRS)
    odd = Pair(neutral="가", toxic="나", provenance={"when": object()})
    with pytest.raises(RolecallError, match="provenance of the pair '가' is not JSON"):
        write_parquet(tmp_path / "odd.parquet", [odd])
    assert not (tmp_path / "odd.parquet").exists()


def test_hf_dataset_round_trip(tmp_path):
    import datasets

    out = tmp_path / "kda_ds"
    info = {"license": "CC BY-SA 4.0", "description": "테스트. " + WARNING}
    assert write_hf_dataset(out, PAIRS, split="test", info=info) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kda_ds"]  # no partial left
    dataset = datasets.load_from_disk(str(out))
    assert dataset.column_names == list(COLUMNS)
    assert dataset.split == "test" and len(dataset) == 4
    assert dataset.info.license == "CC BY-SA 4.0" and "Content warning" in dataset.info.description
    assert dataset.features["neutral"] == datasets.Value("string")
    assert dataset.features["n"] == datasets.Value("int64")
    assert dataset.features["seed"] == datasets.Value("int64")
    assert dataset.features["comment_ids"] == datasets.List(datasets.Value("string"))
    assert dataset.to_list() == pairs_to_table(PAIRS).to_pylist()
    assert dataset[1]["implicit"] == PAIRS[1].toxic and dataset[1]["n"] == 3


def test_hf_dataset_replaces_an_old_export_but_nothing_else(tmp_path):
    import datasets

    out = tmp_path / "ds"
    write_hf_dataset(out, PAIRS)
    assert write_hf_dataset(out, PAIRS[:1]) == 1
    assert len(datasets.load_from_disk(str(out))) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert write_hf_dataset(empty, []) == 0
    loaded = datasets.load_from_disk(str(empty))
    assert len(loaded) == 0 and loaded.column_names == list(COLUMNS)
    assert "Content warning" in loaded.info.description  # the default description
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(RolecallError, match="holds no saved dataset"):
        write_hf_dataset(precious, PAIRS)
    assert (precious / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"info": {"licence": "MIT"}}, "unknown dataset info key(s) ['licence']"),
        ({"info": {"license": 3}}, "must be text"),
        ({"split": "train set"}, "bad split name"),
    ],
)
def test_hf_dataset_options_are_checked(tmp_path, kwargs, needle):
    with pytest.raises(ConfigError) as info:
        write_hf_dataset(tmp_path / "ds", PAIRS, **kwargs)
    assert needle in str(info.value)
    assert not (tmp_path / "ds").exists()


def test_hf_export_works_offline_and_writes_only_its_folder(tmp_path):
    """In a fresh interpreter (datasets reads its settings on import) with a fake home."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "XDG_"))}
    env |= {
        "HOME": str(home),
        "TMPDIR": str(home),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(REPO / "src"),
    }
    script = (
        "from rolecall.formats.parquet import write_hf_dataset\n"
        "from rolecall.records import Pair\n"
        "write_hf_dataset('ds', [Pair(neutral='가', toxic='나')])\n"
        "import datasets\nassert len(datasets.load_from_disk('ds')) == 1\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=work, env=env, check=True, timeout=120)
    assert [p.name for p in work.iterdir()] == ["ds"]
    assert list(home.iterdir()) == []
