import pytest

from rolecall.errors import InputFileError
from rolecall.formats.kda import read_kda_csv, write_data_card, write_kda_csv
from rolecall.records import Pair
from tests.conftest import SHARED_DATA


def test_reads_the_released_kda_file():
    pairs = read_kda_csv(SHARED_DATA / "detox" / "kda_ko.csv")
    assert len(pairs) == 7020
    assert pairs[0].provenance == {"source": "kda_ko.csv", "line": 2}
    assert all(p.neutral and p.toxic for p in pairs)


def test_round_trip_with_commas_quotes_and_newlines(tmp_path):
    pairs = [Pair(neutral='그는 "괜찮다"고, 말했다.', toxic="괜찮다고? 퍽이나, ㅋㅋ"),
             Pair(neutral="여러 줄\n문장", toxic="줄바꿈도\n그대로")]
    path = tmp_path / "out.csv"
    assert write_kda_csv(path, pairs) == 2
    back = read_kda_csv(path)
    assert [(p.neutral, p.toxic) for p in back] == [(p.neutral, p.toxic) for p in pairs]
    assert path.read_text(encoding="utf-8").startswith("neutral,implicit\n")


@pytest.mark.parametrize("content, needle", [
    ("neutral,toxic\na,b\n", "missing column(s) ['implicit']"),
    ("neutral,implicit\na,\n", ":2: a row needs both"),
    ("neutral,implicit\n", "has no pairs"),
])
def test_bad_files_are_named(tmp_path, content, needle):
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFileError) as info:
        read_kda_csv(path)
    assert needle in str(info.value)


def test_data_card_has_the_warning_counts_and_retention(tmp_path):
    report = {"filters": [{"filter": "consistency", "in": 10, "kept": 5, "unparsed": 1,
                           "retention": 0.5, "by_n": {"0": {"in": 10, "kept": 5,
                                                            "unparsed": 1,
                                                            "retention": 0.5}}}],
              "overall": {"in": 10, "kept": 5, "retention": 0.5}}
    card = tmp_path / "DATA_CARD.md"
    write_data_card(card, name="test", pairs=5, report=report,
                    manifest={"models": {"generator": "m"}}, licence="CC BY-SA 4.0",
                    sources=["x.csv:Q"])
    text = card.read_text(encoding="utf-8")
    assert "Content warning" in text and "- pairs: 5" in text and "CC BY-SA 4.0" in text
    assert "| consistency | 0 | 10 | 5 | 1 | 0.5 |" in text and '"generator": "m"' in text
