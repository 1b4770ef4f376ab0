"""The fields both pipeline configs share (pipelines/run_config.py): their paths resolved
against the config file, a PostgreSQL cache URL kept as given."""

from __future__ import annotations

import pytest

from rolecall.errors import InputFileError
from rolecall.pipelines.dialogues import DialogueRunConfig, load_dialogue_config
from rolecall.pipelines.kda import KdaRunConfig, load_kda_config
from rolecall.pipelines.run_config import RunConfig


def write(folder, name, text):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("cache", ["calls.sqlite", "postgresql://rc@db:5432/calls"])
def test_both_configs_resolve_the_shared_paths_alike(tmp_path, cache):
    folder = tmp_path / "configs"
    folder.mkdir()
    for name in ("s.yaml", "e.jsonl"):  # the inputs a dialogue config names must exist
        (folder / name).write_text("", encoding="utf-8")
    dialogues = load_dialogue_config(
        write(folder, "d.yaml", f"spec: s.yaml\nexamples: e.jsonl\nout: runs/d\ncache: {cache}\n")
    )
    detox = load_kda_config(
        write(
            folder,
            "k.yaml",
            f"out: runs/k\ncache: {cache}\nsentences:\n  path: n.txt\ngenerate:\n  ns: [0]\n",
        )
    )
    assert isinstance(dialogues, RunConfig) and isinstance(detox, RunConfig)
    assert dialogues.out == str(folder / "runs" / "d") and detox.out == str(folder / "runs" / "k")
    expected = str(folder / cache) if "://" not in cache else cache  # a URL is not a path
    assert dialogues.cache == detox.cache == expected
    assert dialogues.spec == str(folder / "s.yaml")
    shared = set(RunConfig.model_fields)
    assert shared <= set(DialogueRunConfig.model_fields) & set(KdaRunConfig.model_fields)


def test_an_unknown_key_is_refused_in_either_config(tmp_path):
    with pytest.raises(InputFileError, match="workerz: Extra inputs are not permitted"):
        load_dialogue_config(
            write(tmp_path, "d.yaml", "spec: s.yaml\nexamples: e.jsonl\nout: o\nworkerz: 2\n")
        )
