import json

import pytest

from rolecall.errors import InputFileError
from rolecall.jsonl import ResumableJsonl, read_jsonl, write_jsonl
from rolecall.records import Pair


def test_round_trip_keeps_korean_text(tmp_path):
    path = tmp_path / "pairs.jsonl"
    pairs = [
        Pair(neutral="오늘 날씨 좋네요.", toxic="날씨 하나는 좋네, 너랑 달리.", provenance={"n": 3})
    ]
    assert write_jsonl(path, pairs) == 1
    assert "오늘" in path.read_text(encoding="utf-8")  # not \\u-escaped
    assert list(read_jsonl(path, Pair)) == pairs


@pytest.mark.parametrize(
    "content, line, needle",
    [
        ('{"neutral": "a", "toxic": "b"}\n{"neutral": "a"\n', 2, "not valid JSON"),
        ('{"neutral": "a", "toxic": "b"}\n\n[1, 2]\n', 3, "expected a JSON object"),
        ('{"neutral": "a"}\n', 1, "toxic: Field required"),
        ('{"neutral": "a", "toxic": "b", "extra": 1}\n', 1, "extra"),
    ],
)
def test_malformed_lines_are_named(tmp_path, content, line, needle):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        list(read_jsonl(path, Pair))
    assert info.value.line == line and f"bad.jsonl:{line}:" in str(info.value)
    assert needle in str(info.value)


def test_missing_and_non_utf8_files(tmp_path):
    with pytest.raises(InputFileError, match="file not found"):
        list(read_jsonl(tmp_path / "nope.jsonl"))
    path = tmp_path / "latin.jsonl"
    path.write_bytes('{"a": "café"}\n'.encode("latin-1"))
    with pytest.raises(InputFileError, match="UTF-8"):
        list(read_jsonl(path))


def test_resumable_output_drops_a_cut_last_line_and_skips_done_keys(tmp_path):
    path = tmp_path / "out.jsonl"
    full = json.dumps({"id": "a", "text": "안녕하세요"}, ensure_ascii=False) + "\n"
    cut = json.dumps({"id": "b", "text": "반갑습니다"}, ensure_ascii=False).encode()[:-4]
    path.write_bytes(full.encode() + cut)  # a kill in the middle of a UTF-8 character
    with ResumableJsonl(path, key=lambda r: r["id"]) as out:
        assert out.done == {"a"}
        out.append({"id": "a", "text": "again"})  # already there: not written twice
        out.append({"id": "b", "text": "반갑습니다"})
    rows = list(read_jsonl(path))
    assert [r["id"] for r in rows] == ["a", "b"] and rows[0]["text"] == "안녕하세요"


def test_a_json_object_file_is_read_or_refused_with_its_line_and_fix(tmp_path):
    from rolecall.jsonl import read_json_object

    path = tmp_path / "report.json"
    path.write_text('{"a": 1}', encoding="utf-8")
    assert read_json_object(path, fix="rerun") == {"a": 1}
    path.write_text('{\n  "a": 1,\n}', encoding="utf-8")
    with pytest.raises(InputFileError, match="not valid JSON") as caught:
        read_json_object(path, fix="rerun")
    assert caught.value.line == 3 and caught.value.fix == "rerun"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(InputFileError, match="expected a JSON object, found list"):
        read_json_object(path, fix="rerun")


def test_a_byte_order_mark_is_dropped(tmp_path):
    """A JSONL saved by an editor that writes a UTF-8 BOM reads as without it."""
    from rolecall.jsonl import read_jsonl

    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + '{"text": "안녕"}\n{"text": "네"}\n'.encode())
    assert [r["text"] for r in read_jsonl(path)] == ["안녕", "네"]
