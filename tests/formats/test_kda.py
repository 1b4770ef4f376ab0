import csv

import pytest

from rolecall.errors import ConfigError, InputFileError
from rolecall.formats.kda import read_kda_csv, write_data_card, write_kda_csv
from rolecall.records import Pair
from tests.paths import SHARED_DATA


def test_reads_the_released_kda_file():
    pairs = read_kda_csv(SHARED_DATA / "detox" / "kda_ko.csv")
    assert len(pairs) == 7020
    assert pairs[0].provenance == {"source": "kda_ko.csv", "line": 2}
    assert all(p.neutral and p.toxic for p in pairs)


def test_round_trip_with_commas_quotes_and_newlines(tmp_path):
    pairs = [
        Pair(neutral='그는 "괜찮다"고, 말했다.', toxic="괜찮다고? 퍽이나, ㅋㅋ"),
        Pair(neutral="여러 줄\n문장", toxic="줄바꿈도\n그대로"),
    ]
    path = tmp_path / "out.csv"
    assert write_kda_csv(path, pairs) == 2
    back = read_kda_csv(path)
    assert [(p.neutral, p.toxic) for p in back] == [(p.neutral, p.toxic) for p in pairs]
    assert path.read_text(encoding="utf-8").startswith("neutral,implicit\n")


@pytest.mark.parametrize(
    "content, needle, line",
    [
        ("neutral,toxic\na,b\n", "has no column 'implicit'; its columns are: neutral, toxic", 1),
        ("\nid,text\na,b\n", "has no column 'neutral' or 'implicit'; its columns are: id, text", 2),
        ("neutral,implicit\na,\n", ":2: a row needs both", 2),
        ("neutral,implicit\na,b\n  ,바\n", ":3: a row needs both", 3),
        ("neutral,implicit\n", "has no pairs", None),
        ("", "is empty: no header row", None),
        # an unquoted comma in the text: the fields shift, so it is an error, not a guess
        ("neutral,implicit\na,b\n다,라, 마\n", ":3: broken row: 3 fields, expected 2", 3),
        ("neutral,implicit\na,b\n다\n", ":3: broken row: 1 fields, expected 2", 3),
        (
            'neutral,implicit\na,b\n"다,라\n마,바\n',
            ":3: broken row: a quote opened in it is never closed",
            3,
        ),
        ('neutral,implicit\n"a"b,c\n', ":2: broken row", 2),
        ("neutral,implicit\na\x00,b\n", ":2: has a NUL character (byte 18)", 2),
    ],
)
def test_bad_files_are_named(tmp_path, content, needle, line):
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        read_kda_csv(path)
    assert needle in str(info.value) and info.value.line == line and info.value.fix


def test_encodings(tmp_path):
    path = tmp_path / "kda.csv"
    path.write_bytes("neutral,implicit\n안녕,잘 가라\n".encode("cp949"))
    with pytest.raises(InputFileError) as info:
        read_kda_csv(path)
    assert info.value.line == 2 and "looks like CP949/EUC-KR" in info.value.message
    assert f"iconv -f cp949 -t utf-8 {path} > {path}.utf8" in info.value.fix
    assert read_kda_csv(path, encoding="cp949")[0].toxic == "잘 가라"
    with pytest.raises(ConfigError, match="unknown text encoding"):
        read_kda_csv(path, encoding="euc-kr-x")
    for codec in ("utf-8-sig", "utf-16"):  # Excel's "CSV UTF-8" and "Unicode text"
        path.write_bytes("neutral,implicit\n안녕,잘 가라\n".encode(codec))
        assert read_kda_csv(path)[0].neutral == "안녕"


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputFileError, match="file not found"):
        read_kda_csv(tmp_path / "nope.csv")
    with pytest.raises(InputFileError, match="is a directory, not a file"):
        read_kda_csv(tmp_path)


@pytest.fixture
def default_csv_field_limit():
    """csv's field limit is process-wide: start from the default, whatever ran before."""
    old = csv.field_size_limit(131072)
    yield
    csv.field_size_limit(old)


def test_lenient_where_nothing_is_lost(tmp_path, default_csv_field_limit):
    giant = "가" * 200_000  # over csv's default field limit
    path = tmp_path / "kda.csv"
    path.write_text(
        f' neutral , implicit ,note\n\n"여러\n줄",b,\n{giant},c,x\n\n마,바,\n', encoding="utf-8"
    )
    pairs = read_kda_csv(path)
    assert [(p.neutral, p.toxic) for p in pairs] == [("여러\n줄", "b"), (giant, "c"), ("마", "바")]
    # provenance is the line a row starts on, as sed -n LINEp shows it
    assert [p.provenance["line"] for p in pairs] == [3, 5, 7]


def test_data_card_has_the_warning_counts_and_retention(tmp_path):
    report = {
        "filters": [
            {
                "filter": "consistency",
                "in": 10,
                "kept": 5,
                "unparsed": 1,
                "retention": 0.5,
                "by_n": {"0": {"in": 10, "kept": 5, "unparsed": 1, "retention": 0.5}},
            }
        ],
        "overall": {"in": 10, "kept": 5, "retention": 0.5},
    }
    card = tmp_path / "DATA_CARD.md"
    write_data_card(
        card,
        name="test",
        pairs=5,
        report=report,
        manifest={"models": {"generator": "m"}},
        licence="CC BY-SA 4.0",
        sources=["x.csv:Q"],
    )
    text = card.read_text(encoding="utf-8")
    assert "Content warning" in text and "- pairs: 5" in text and "CC BY-SA 4.0" in text
    assert "| consistency | 0 | 10 | 5 | 1 | 0.5 |" in text and '"generator": "m"' in text
    assert "judges below" in text and "consistency judge" not in text


def test_data_card_names_the_default_judges_and_their_warnings(tmp_path):
    manifest = {
        "judge_defaults": {
            "consistency": {"kind": "classifier", "judge": "classifier:/j/c", "reason": "why"}
        },
        "warnings": ["the embedded model judges near random"],
    }
    card = tmp_path / "DATA_CARD.md"
    write_data_card(card, name="t", pairs=0, report={}, manifest=manifest, licence="x", sources=[])
    text = card.read_text(encoding="utf-8")
    assert "- consistency judge: classifier `classifier:/j/c` (why)" in text
    assert "- warning: the embedded model judges near random" in text
