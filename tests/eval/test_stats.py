import json
import unicodedata

import pytest
from rich.console import Console

from rolecall.eval.stats import (
    dataset_stats,
    dialogue_stats,
    format_stats_table,
    ngram_counts,
    normalize_text,
    stats_to_json,
    tokenize,
)
from rolecall.records import Dialogue, Example, Turn


def S(text, flag=None, category=None):
    return Turn(role="system", text=text, out_of_bounds=flag, category=category)


def U(text):
    return Turn(role="user", text=text)


# Two dialogues, six turns. "t0".."t5" below number the turns in order.
DIALOGUES = [
    Dialogue(
        id="s1",
        turns=[
            S("안녕하세요 어르신", False),  # t0
            U("네 안녕하세요"),  # t1
            S("식사는 하셨어요?", False),
        ],
    ),  # t2
    Dialogue(
        id="s2",
        turns=[
            S(" 안녕하세요  어르신 ", False),  # t3: t0 with extra spaces
            U("밥 먹었어요"),  # t4
            S("저도 밥 먹었어요", True, "wrong persona"),
        ],
    ),  # t5
]

# The same for both units:
#   dialogues 2, turns 6, avg 6/2 = 3.0
#   split: s1 -> t0, t2 positive; s2 -> t3 positive, t5 negative  => 3 positive, 1 negative
#   system texts after whitespace normalisation: 안녕하세요 어르신 (t0 = t3), 식사는 하셨어요?,
#   저도 밥 먹었어요  => 3 unique system turns
COMMON = {
    "dialogues": 2,
    "turns": 6,
    "avg_turns_per_dialogue": 3.0,
    "positive_examples": 3,
    "negative_examples": 1,
    "unique_system_turns": 3,
}

# Eojeol (whitespace tokens):
#   t0 안녕하세요|어르신 (2)   t1 네|안녕하세요 (2)   t2 식사는|하셨어요? (2)
#   t3 안녕하세요|어르신 (2)   t4 밥|먹었어요 (2)     t5 저도|밥|먹었어요 (3)    => 13 words
#   unique: 안녕하세요 어르신 네 식사는 하셨어요? 밥 먹었어요 저도                => 8
#   bigrams per turn 1+1+1+1+1+2 = 7; unique: (안녕하세요,어르신) (네,안녕하세요)
#   (식사는,하셨어요?) (밥,먹었어요) (저도,밥); t3's and t5's (밥,먹었어요) repeat  => 5
EOJEOL = COMMON | {
    "unit": "eojeol",
    "tokenizer": "whitespace",
    "words": 13,
    "avg_words_per_turn": 13 / 6,
    "unique_words": 8,
    "unique_bigrams": 5,
    "distinct_1": 8 / 13,
    "distinct_2": 5 / 7,
}

# Morphemes (Kiwi "form/tag"; pinned in test_kiwi_morphemes_are_form_slash_tag):
#   t0 안녕/NNG 하/XSA 세요/EF 어르신/NNG                   4 tokens, 3 bigrams
#   t1 네/IC 안녕/NNG 하/XSA 세요/EF                        4, 3
#   t2 식사/NNG 는/JX 하/VV 시/EP 었/EP 어요/EF ?/SF        7, 6
#   t3 = t0                                                  4, 3
#   t4 밥/NNG 먹/VV 었/EP 어요/EF                           4, 3
#   t5 저/NP 도/JX 밥/NNG 먹/VV 었/EP 어요/EF               6, 5
#   words 4+4+7+4+4+6 = 29; bigrams 3+3+6+3+3+5 = 23
#   unique words, new per turn: t0 4, t1 +1 (네), t2 +7 (하/VV differs from 하/XSA),
#   t3 +0, t4 +2 (밥, 먹), t5 +2 (저, 도)                                  => 16
#   unique bigrams, new per turn: t0 3, t1 +1 (네 안녕), t2 +6, t3 +0,
#   t4 +2 (밥 먹, 먹 었; 었 어요 seen in t2), t5 +2 (저 도, 도 밥)            => 14
MORPHEME = COMMON | {
    "unit": "morpheme",
    "words": 29,
    "avg_words_per_turn": 29 / 6,
    "unique_words": 16,
    "unique_bigrams": 14,
    "distinct_1": 16 / 29,
    "distinct_2": 14 / 23,
}


def test_eojeol_counts_match_the_hand_count():
    assert dialogue_stats(DIALOGUES, unit="eojeol") == pytest.approx(EOJEOL)


def test_morpheme_counts_match_the_hand_count():
    stats = dialogue_stats(DIALOGUES, unit="morpheme")
    assert stats.pop("tokenizer").startswith("kiwipiepy ")
    assert stats == pytest.approx(MORPHEME)


def test_kiwi_morphemes_are_form_slash_tag():
    assert tokenize(["식사는 하셨어요?", "저도 밥 먹었어요", "", "이게 뭐예요"], "morpheme") == [
        ["식사/NNG", "는/JX", "하/VV", "시/EP", "었/EP", "어요/EF", "?/SF"],
        ["저/NP", "도/JX", "밥/NNG", "먹/VV", "었/EP", "어요/EF"],
        [],
        ["이것/NP", "이/JKS", "뭐/NP", "이/VCP", "예요/EF"],  # 이/JKS and 이/VCP stay apart
    ]


def test_decomposed_jamo_count_as_the_same_words():
    nfd = unicodedata.normalize("NFD", "안녕하세요 어르신")
    assert nfd != "안녕하세요 어르신"
    assert tokenize([nfd], "eojeol") == [["안녕하세요", "어르신"]]
    assert normalize_text(nfd) == "안녕하세요 어르신"


def test_given_examples_override_the_split():
    examples = [Example(history=[], response="네.", label="negative", category="x")] * 2
    stats = dialogue_stats(DIALOGUES, examples)
    assert (stats["positive_examples"], stats["negative_examples"]) == (0, 2)
    assert dialogue_stats(DIALOGUES, [])["positive_examples"] == 0


def test_unjudged_dialogues_have_no_examples():
    unjudged = [Dialogue(id="u", turns=[S("안녕하세요."), U("네."), S("식사는 하셨어요?")])]
    stats = dialogue_stats(unjudged)
    assert (stats["positive_examples"], stats["negative_examples"]) == (0, 0)
    assert stats["turns"] == 3


def test_unique_system_turns_ignore_whitespace_variants_only():
    turns = [
        S("밥은 드셨어요?"),
        S("밥은  드셨어요?"),
        S("\t밥은 드셨어요?\n"),
        S("밥은드셨어요?"),
        U("밥은 드셨어요?"),
    ]
    # the first three differ only in whitespace; removing a space changes the text;
    # user turns do not count
    assert dialogue_stats([Dialogue(id="w", turns=turns)])["unique_system_turns"] == 2


ZERO = {
    "dialogues": 0,
    "turns": 0,
    "avg_turns_per_dialogue": 0.0,
    "positive_examples": 0,
    "negative_examples": 0,
    "unique_system_turns": 0,
    "words": 0,
    "avg_words_per_turn": 0.0,
    "unique_words": 0,
    "unique_bigrams": 0,
    "distinct_1": 0.0,
    "distinct_2": 0.0,
}


@pytest.mark.parametrize("unit", ["eojeol", "morpheme"])
@pytest.mark.parametrize(
    "dialogues, nonzero",
    [
        ([], {}),
        ([Dialogue(id="e", turns=[])], {"dialogues": 1}),
        # blank texts: turns without words (the blank system text is still one system turn)
        (
            [Dialogue(id="b", turns=[U(""), S("   ")])],
            {"dialogues": 1, "turns": 2, "avg_turns_per_dialogue": 2.0, "unique_system_turns": 1},
        ),
    ],
)
def test_empty_inputs_give_zeros_not_errors(unit, dialogues, nonzero):
    stats = dialogue_stats(dialogues, unit=unit)
    assert {k: stats[k] for k in ZERO} == ZERO | nonzero


def test_distinct_n_edge_cases():
    assert ngram_counts([]) == {
        "unigrams": 0,
        "unique_unigrams": 0,
        "bigrams": 0,
        "unique_bigrams": 0,
    }
    # one-word turns have unigrams but no bigrams: distinct-2 is 0.0, not a crash
    stats = dialogue_stats([Dialogue(id="o", turns=[U("네"), U("네"), U("아니요")])])
    assert (stats["distinct_1"], stats["distinct_2"]) == (2 / 3, 0.0)
    # bigrams do not cross turns: "a b" + "c" has one bigram, not two
    assert ngram_counts([["a", "b"], ["c"]])["bigrams"] == 1
    assert ngram_counts([["a", "a", "a"]]) == {
        "unigrams": 3,
        "unique_unigrams": 1,
        "bigrams": 2,
        "unique_bigrams": 1,
    }


def test_unknown_unit_is_refused():
    with pytest.raises(ValueError, match="unknown word unit"):
        dialogue_stats(DIALOGUES, unit="syllable")


def render(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_table_puts_datasets_side_by_side_in_both_units():
    columns = {
        "generated": dataset_stats(DIALOGUES),
        "one unit": dialogue_stats(DIALOGUES[:1], unit="eojeol"),
    }
    text = render(format_stats_table(columns, title="Table 2"))
    lines = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in text.splitlines()
        if line.count("│") == 4
    }
    assert lines["dialogues"] == ["2", "1"]
    assert lines["avg turns / dialogue"] == ["3.00", "3.00"]
    assert lines["words (어절)"] == ["13", "6"]
    assert lines["words (morphemes)"] == ["29", "–"]
    assert lines["distinct-2 (morphemes)"] == [f"{14 / 23:.4f}", "–"]
    assert lines["unique system turns"] == ["3", "2"]


def test_stats_json_round_trips():
    columns = {"generated": dataset_stats(DIALOGUES, units=["eojeol"])}
    text = stats_to_json(columns)
    assert json.loads(text) == columns
    assert json.loads(text)["generated"]["eojeol"]["words"] == 13
