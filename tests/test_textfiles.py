"""Bad input files for ``read_corpus`` / ``read_text_file`` and giant lines in cleaning.

The good paths (ids, quoting, the pipe-file repair, the cleaning rules) are tested in
``test_slang.py``; here every kind of bad file gets a clear ``InputFileError`` (file,
line, byte, fix) or a documented drop that the cleaning report counts.
"""

import csv
import gzip
import io
import time
import zipfile
from pathlib import Path

import pytest

from rolecall.errors import ConfigError, InputFileError
from rolecall.slang.clean import clean_comments, clean_records
from rolecall.textfiles import read_corpus, read_text_file
from tests.paths import SHARED_DATA


def write(path, data):
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def error(path, *args, **kwargs) -> InputFileError:
    with pytest.raises(InputFileError) as info:
        read_corpus(path, *args, **kwargs)
    assert str(path) in str(info.value)  # every error names the file
    assert info.value.fix
    return info.value


# ---- encodings -----------------------------------------------------------------------


def test_cp949_names_line_byte_and_the_iconv_line(tmp_path):
    good = "좋아요\n괜찮아요\n".encode()
    path = write(tmp_path / "korean windows.txt", good + "안녕하세요\n".encode("cp949"))
    err = error(path)
    assert err.line == 3
    assert f"{path}:3: is not UTF-8 text: byte {len(good)} (0xbe)" in str(err)
    assert "looks like CP949/EUC-KR" in err.message
    # the path is shell-quoted, so the fix can be pasted as it is
    assert err.fix == (f"convert it: iconv -f cp949 -t utf-8 '{path}' > '{path}.utf8'")
    # this file mixes UTF-8 and CP949 lines: named CP949, its UTF-8 lines do not decode
    err = error(path, encoding="cp949")
    assert err.line == 1 and "is not CP949 text: byte 6" in err.message
    assert "looks like UTF-8" in err.message and "encoding='utf-8'" in err.fix
    whole = write(tmp_path / "cp949.txt", "좋아요\n안녕하세요\n".encode("cp949"))
    assert read_corpus(whole, encoding="cp949") == [
        ("cp949.txt:1", "좋아요"),
        ("cp949.txt:2", "안녕하세요"),
    ]


def test_cp949_csv_with_the_encoding_named(tmp_path):
    path = write(tmp_path / "q.csv", "Q,A\n안녕,네\n".encode("cp949"))
    assert "CP949" in error(path, "Q").message
    assert read_corpus(path, "Q", encoding="cp949") == [("q.csv:2", "안녕")]
    with pytest.raises(ConfigError, match="unknown text encoding 'kr'"):
        read_corpus(path, "Q", encoding="kr")


@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32"])
def test_a_byte_order_mark_is_read_silently(tmp_path, codec):
    data = "Q,A\n안녕,네\n".encode(codec)
    if codec == "utf-16-be":
        data = b"\xfe\xff" + data
    path = write(tmp_path / "q.csv", data)
    # the mark must not stick to the first column's name
    assert read_corpus(path, "Q") == [("q.csv:2", "안녕")]
    assert read_text_file(path) == "Q,A\n안녕,네\n"


@pytest.mark.parametrize("codec, name", [("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE")])
@pytest.mark.parametrize("text", ["좋아요\n안녕\n", "hello\nworld\n"])
def test_utf16_without_a_bom_is_recognised(tmp_path, codec, name, text):
    path = write(tmp_path / "c.txt", text.encode(codec))
    err = error(path)
    assert f"looks like {name} without a byte-order mark" in err.message
    assert f"iconv -f {name.lower()} -t utf-8" in err.fix


def test_unknown_encoding_gets_a_generic_fix(tmp_path):
    path = write(tmp_path / "latin.txt", "café\n".encode("latin-1"))
    err = error(path)
    assert err.line == 1 and "looks like" not in err.message
    assert err.fix.startswith(f"find its encoding (file -i {path})")


def test_nul_bytes_and_archives(tmp_path):
    err = error(
        write(tmp_path / "nul.tsv", "comments\thate\n댓글\tnone\n가\x00나\tx\n"), "comments"
    )
    assert err.line == 3 and "has a NUL character (byte 29)" in err.message
    assert "tr -d" in err.fix
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("sheet.xml", "<x/>")
    assert (
        "zip archive (an Excel .xlsx?)"
        in error(write(tmp_path / "c.csv", buffer.getvalue()), "Q").message
    )
    err = error(write(tmp_path / "c.txt.gz", gzip.compress("댓글\n".encode())))
    assert "gzip-compressed" in err.message and "gunzip -k" in err.fix


def test_missing_file_and_directory(tmp_path):
    err = error(tmp_path / "nope.txt")
    assert "file not found" in err.message and err.fix == "check the path"  # absolute
    err = error(Path("nope.txt"))
    assert "relative path starts at" in err.fix and "the config's folder" in err.fix
    write(tmp_path / "comments.txt", "댓글\n")
    err = error(tmp_path)
    assert "is a directory, not a file" in err.message
    assert err.fix == "name a file, not a directory (this one holds comments.txt)"
    (tmp_path / "empty").mkdir()
    assert error(tmp_path / "empty").fix == "name a file, not a directory"


# ---- giant lines ---------------------------------------------------------------------


def test_a_5mb_line_is_read_and_dropped_as_too_long(tmp_path):
    giant = "아주 긴 댓글 " * 625_000  # 5 MB in UTF-8
    path = write(tmp_path / "c.txt", f"첫 댓글입니다\n{giant}\n마지막 댓글\n")
    rows = read_corpus(path)
    assert [row_id for row_id, _ in rows] == ["c.txt:1", "c.txt:2", "c.txt:3"]
    kept, report = clean_records(rows)
    assert [row_id for row_id, _ in kept] == ["c.txt:1", "c.txt:3"]
    assert report["dropped"]["too_long"] == 1


@pytest.fixture
def default_csv_field_limit():
    """csv's field limit is process-wide: start from the default, whatever ran before."""
    old = csv.field_size_limit(131072)
    yield
    csv.field_size_limit(old)


@pytest.mark.parametrize("name, sep", [("c.csv", ","), ("c.tsv", "\t")])
def test_a_field_over_csvs_limit_is_read(tmp_path, name, sep, default_csv_field_limit):
    giant = "가" * 200_000  # Python's csv refuses fields over 131072 characters by default
    path = write(tmp_path / name, f'comments{sep}label\n"{giant}"{sep}1\n짧은 댓글{sep}0\n')
    rows = read_corpus(path, "comments")
    assert rows == [(f"{name}:2", giant), (f"{name}:3", "짧은 댓글")]
    assert clean_records(rows)[1]["dropped"]["too_long"] == 1


@pytest.mark.parametrize(
    "line",
    [
        ".".join(str(i) for i in range(300_000)),  # "0.1.2.3...": was quadratic
        "-".join(["word"] * 200_000) + ".com/x",  # a giant slug
        "a." * 500_000 + "com/",  # one giant bare domain
        "@a " * 200_000 + "댓글",  # reply markers, one pass
    ],
)
def test_giant_pathological_lines_clean_in_linear_time(line):
    started = time.perf_counter()
    kept, report = clean_comments([line], max_chars=None)
    assert time.perf_counter() - started < 5
    assert report["input"] == 1


@pytest.mark.parametrize(
    "line, cleaned",
    [
        ("여기m.blog.naver.com/abc 좋아요", "여기 좋아요"),  # glued to Hangul: all of it
        ("...naver.me/5h07 대박", "... 대박"),  # after an ellipsis
        ("1.2.3 버전 naver.com 좋아요", "1.2.3 버전 naver.com 좋아요"),
    ],
)
def test_bare_domains_after_the_linear_rewrite(line, cleaned):
    assert clean_comments([line], min_chars=1)[0] == [cleaned]


# ---- broken delimited files ----------------------------------------------------------


@pytest.mark.parametrize(
    "name, content, args, needle, line",
    [
        # a quote never closed: the row where it opens, even when it swallowed the rest
        (
            "c.csv",
            'Q,A\n안녕,네\n"열린 따옴표,네\n다음,줄\n',
            ("Q",),
            "broken row: a quote opened in it is never closed",
            3,
        ),
        ("c.csv", 'Q,A\n"닫힌"뒤에 글,네\n', ("Q",), "broken row", 2),
        ("c.csv", "Q,A\n안녕,네\n혼자\n", ("Q",), "broken row: 1 fields, expected 2", 3),
        ("c.csv", "Q,A\n안녕,네,또\n", ("Q",), "broken row: 3 fields, expected 2", 2),
        ("c.txt", "댓글|1\n댓글만\n", ("1", "|"), "broken row: 1 fields, expected 2", 2),
        ("c.txt", "댓글만\n", ("2", "|"), "broken row: 1 fields, expected 2", 1),
        ("c.csv", "Q,A\n안녕,네\n", ("q",), "has no column 'q'; its columns are: Q, A", None),
        ("c.csv", "", ("Q",), "is an empty corpus: the file is empty (0 bytes)", None),
        ("c.txt", "", (), "is an empty corpus: the file is empty (0 bytes)", None),
        ("c.txt", " \n\t\n", (), "is an empty corpus: the file has only blank lines", None),
        ("c.csv", "Q,A\n", ("Q",), "empty corpus: it has a header row and nothing under it", None),
        (
            "c.csv",
            "Q,A\n,네\n  ,네\n",
            ("Q",),
            "empty corpus: column Q is blank in every row",
            None,
        ),
        ("c.txt", "첫 번째 댓글\r두 번째 댓글\r", (), "old Mac line endings (CR only)", None),
    ],
)
def test_broken_files(tmp_path, name, content, args, needle, line):
    err = error(write(tmp_path / name, content), *args)
    assert needle in err.message and err.line == line


def test_missing_column_fixes(tmp_path):
    path = write(tmp_path / "c.csv", "Q,A\n안녕,네\n")
    assert error(path, "q").fix == "names are case-sensitive: c.csv:Q"
    headerless = write(tmp_path / "curse.txt", "욕설 댓글|1\n")
    fix = error(headerless, "comments", "|").fix
    assert "give a field number (curse.txt:1 for the first)" in fix


# ---- blank and non-Korean lines ------------------------------------------------------


@pytest.mark.parametrize(
    "name, content, args",
    [
        ("c.txt", "첫 번째 댓글\n\n   \n\t\n두 번째 댓글\n", ()),
        ("c.tsv", "comments\tlabel\n첫 번째 댓글\t1\n\n   \n\t\n두 번째 댓글\t0\n", ("comments",)),
        ("c.txt", "첫 번째 댓글|1\n\n   \n|\n두 번째 댓글|0\n", ("1", "|")),
    ],
)
def test_blank_and_whitespace_lines_become_empty_rows(tmp_path, name, content, args):
    rows = read_corpus(write(tmp_path / name, content), *args)
    assert [text for _, text in rows if text.strip()] == ["첫 번째 댓글", "두 번째 댓글"]
    kept, report = clean_records(rows)
    assert [text for _, text in kept] == ["첫 번째 댓글", "두 번째 댓글"]
    assert report["dropped"]["empty"] == 3 and report["input"] == 5


def test_non_korean_lines_are_kept_and_counted(tmp_path):
    path = write(
        tmp_path / "c.txt",
        "한국어 댓글입니다\nthis is so cringe lol\nㅋㅋㅋ 진짜 웃기네\n日本語のコメント\n",
    )
    kept, report = clean_records(read_corpus(path))
    assert len(kept) == 4 and report["kept_without_hangul"] == 2


# ---- the real files ------------------------------------------------------------------


def test_the_real_corpora_read_cleanly():
    neutral = read_corpus(SHARED_DATA / "neutral" / "chatbot_data.csv", "Q")
    assert neutral[0][0] == "chatbot_data.csv:2" and len(neutral) > 10_000
    curse = read_corpus(SHARED_DATA / "slang" / "curse_detection.txt", 1, "|")
    assert len(curse) == 5_825


def test_input_lines_are_stripped_non_blank_lines_of_a_checked_file(tmp_path, monkeypatch):
    from rolecall.textfiles import input_lines

    path = tmp_path / "turns.txt"
    path.write_bytes("\ufeff 안녕하세요 \n\n밥 먹었어요\r\n".encode())
    assert input_lines(path) == ["안녕하세요", "밥 먹었어요"]
    monkeypatch.setattr("sys.stdin", io.StringIO("가\n \n나\n"))
    assert input_lines("-") == ["가", "나"]
    path.write_bytes("안녕".encode("cp949"))
    with pytest.raises(InputFileError, match="iconv"):
        input_lines(path)
