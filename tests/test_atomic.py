"""rolecall.atomic: a file is written whole or not at all (#51 item 6: one helper instead
of eleven hand-written temp-and-rename writers)."""

from __future__ import annotations

import pytest

from rolecall.atomic import atomic_open, atomic_path, write_bytes_atomic, write_text_atomic


def test_a_write_replaces_the_file_whole(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old", encoding="utf-8")
    write_text_atomic(path, "새 내용\n")
    assert path.read_text(encoding="utf-8") == "새 내용\n"
    write_bytes_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    with atomic_open(path, newline="") as handle:
        handle.write("a,b\r\n")
    assert path.read_bytes() == b"a,b\r\n"  # newline="" keeps what the CSV writer wrote
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temp file left


def test_a_writer_that_fails_leaves_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text("kept\n", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_open(path) as handle:
        handle.write("half of a ")
        raise RuntimeError("killed mid-write")
    assert path.read_text(encoding="utf-8") == "kept\n"
    with pytest.raises(ValueError), atomic_path(tmp_path / "index.faiss") as temp:
        temp.write_bytes(b"partial")
        raise ValueError("the library failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl"]
    with atomic_path(tmp_path / "index.faiss") as temp:  # a library that writes a path
        assert temp.name == "index.faiss.tmp"
        temp.write_bytes(b"whole")
    assert (tmp_path / "index.faiss").read_bytes() == b"whole"
