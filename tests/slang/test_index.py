"""The K/DA slang index: cleaning, corpus reading, index build/load/search, the real corpus.

Unit tests use small hand-made corpora; one ``embedded``-marked test builds the index from
the three real files in ../shared/data/slang/ (about 20 s of Kiwi tokenization).
"""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path

import pytest

from rolecall.errors import ConfigError, InputFileError
from rolecall.slang import (
    Corpus,
    Hit,
    SlangIndex,
    build_index,
    clean_comments,
    parse_corpus_spec,
    search_tokens,
)
from rolecall.slang.index import format_hits, index_command, search_command
from rolecall.textfiles import read_corpus

SLANG_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "slang"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---- cleaning ------------------------------------------------------------------------


def test_clean_counts_every_reason_once():
    lines = [
        "",
        "   ",
        "https://example.com/a",
        "ㅋㅋ",
        "가" * 301,
        "좋은 아침입니다",
        "좋은   아침입니다",  # whitespace dup
        "https://t.co/x 좋은 아침입니다",  # URL dup
        unicodedata.normalize("NFD", "좋은 아침입니다"),  # NFD dup
        "@kim 반가워요 여러분",
        "Hello world!",
        "ㄴㄴ 그건 아니지",
    ]
    kept, report = clean_comments(lines, min_chars=5, max_chars=300)
    assert kept == ["좋은 아침입니다", "반가워요 여러분", "Hello world!", "ㄴㄴ 그건 아니지"]
    assert report["dropped"] == {"empty": 3, "too_short": 1, "too_long": 1, "duplicate": 3}
    assert report["changed"] == {"url_removed": 2, "reply_marker_removed": 1}
    assert report["kept_without_hangul"] == 1
    assert report["input"] == len(lines) == report["kept"] + sum(report["dropped"].values())


@pytest.mark.parametrize(
    "line, cleaned",
    [
        ("ㄴ와 약쟁이 ^^", "와 약쟁이 ^^"),  # the community reply arrow
        ("RE: >> @kim 안녕하세요", "안녕하세요"),  # several markers in a row
        ("> 인용한 문장입니다", "인용한 문장입니다"),
        ("ㄴㄴ 아니야 진짜", "ㄴㄴ 아니야 진짜"),  # "no no": a word, not a marker
        ("ㄴㅁㅎ 아닌가?", "ㄴㅁㅎ 아닌가?"),  # initials
        ("ㄴㅏ경원 미모 봐라", "ㄴㅏ경원 미모 봐라"),  # a jamo-split name
        (">_< 귀엽다 진짜", ">_< 귀엽다 진짜"),  # an emoticon
        ("이거 봐 youtu.be/4mwsKWUm3WY 대박", "이거 봐 대박"),
        ("www.naver.com 에서 봤어요", "에서 봤어요"),
        ("naver.com 좋아요 진짜", "naver.com 좋아요 진짜"),  # a bare domain may be the topic
        ("탭\t과\u200b  공백   정리", "탭 과 공백 정리"),
    ],
)
def test_clean_rules(line, cleaned):
    assert clean_comments([line], min_chars=1)[0] == [cleaned]


def test_clean_limits_are_checked():
    with pytest.raises(ConfigError):
        clean_comments(["안녕하세요"], min_chars=10, max_chars=5)
    assert clean_comments(["가" * 1000], max_chars=None)[0] == ["가" * 1000]


# ---- reading corpora -----------------------------------------------------------------


def test_read_plain_text_ids_are_line_numbers(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes("\ufeff첫 번째 댓글\r\n\r\n세 번째 댓글\r\n".encode())
    assert read_corpus(path) == [
        ("c.txt:1", "첫 번째 댓글"),
        ("c.txt:2", ""),
        ("c.txt:3", "세 번째 댓글"),
    ]


def test_read_tsv_named_column_with_quoted_fields(tmp_path):
    path = write(
        tmp_path / "c.tsv",
        "comments\thate\n"
        '"줄이\n바뀐 댓글"\tnone\n'
        '"탭이\t든 ""인용"" 댓글"\thate\n'
        "평범한 댓글\tnone\n",
    )
    assert read_corpus(path, "comments") == [
        ("c.tsv:2", "줄이\n바뀐 댓글"),
        ("c.tsv:4", '탭이\t든 "인용" 댓글'),
        ("c.tsv:5", "평범한 댓글"),
    ]
    assert read_corpus(path, "2")[1] == ("c.tsv:2", "none")  # by number: no header


def test_read_pipe_file_without_header_rejoins_the_text(tmp_path):
    path = write(
        tmp_path / "curse.txt",
        "좌배 까는건 ㅇㅂ|1\n기사 제목 | 신문사 이름|0\n\n집에 롱 패딩만 세 개다|0\n",
    )
    rows = read_corpus(path, 1, "pipe")
    assert rows == [
        ("curse.txt:1", "좌배 까는건 ㅇㅂ"),
        ("curse.txt:2", "기사 제목 | 신문사 이름"),
        ("curse.txt:3", ""),
        ("curse.txt:4", "집에 롱 패딩만 세 개다"),
    ]
    with_header = write(tmp_path / "h.txt", "label|text\n1|욕설 댓글|이다\n")
    assert read_corpus(with_header, "text", "|") == [("h.txt:2", "욕설 댓글|이다")]


@pytest.mark.parametrize(
    "name, content, args, error, needle, line",
    [
        (
            "c.tsv",
            "comments\thate\n댓글\tnone\n",
            (None, None),
            InputFileError,
            "columns: comments, hate",
            None,
        ),
        (
            "c.tsv",
            "comments\thate\n댓글\tnone\n",
            ("text", None),
            InputFileError,
            "no column 'text'; its columns are: comments, hate",
            None,
        ),
        (
            "c.tsv",
            'comments\thate\n댓글\tnone\n"닫히지 않은\tnone\n',
            ("comments", None),
            InputFileError,
            "broken row",
            3,
        ),
        (
            "c.tsv",
            "comments\thate\n댓글\tnone\n댓글\tnone\t추가\n",
            ("comments", None),
            InputFileError,
            "3 fields, expected 2",
            3,
        ),
        ("c.txt", "댓글|1\n댓글만\n", ("2", "|"), InputFileError, "1 fields, expected 2", 2),
        ("c.txt", "\n  \n\n", (None, None), InputFileError, "empty corpus", None),
        ("c.tsv", "comments\thate\n\t\n", ("comments", None), InputFileError, "empty corpus", None),
        ("c.txt", "댓글|1\n", ("1", None), ConfigError, "no delimiter", None),
        ("c.txt", "댓글|1\n", (None, "|"), ConfigError, "no column", None),
        ("c.txt", "댓글|1\n", ("0", "|"), ConfigError, "start at 1", None),
        ("c.txt", "댓글|1\n", ("1", "||"), ConfigError, "bad delimiter", None),
    ],
)
def test_read_errors(tmp_path, name, content, args, error, needle, line):
    path = write(tmp_path / name, content)
    with pytest.raises(error) as info:
        read_corpus(path, *args)
    assert needle in str(info.value)
    if line is not None:
        assert info.value.line == line and f"{name}:{line}:" in str(info.value)


def test_read_missing_and_not_utf8(tmp_path):
    with pytest.raises(InputFileError, match="file not found"):
        read_corpus(tmp_path / "nope.txt")
    with pytest.raises(InputFileError, match="not a file"):
        read_corpus(tmp_path)
    path = tmp_path / "cp949.txt"
    path.write_bytes("좋아요\n괜찮아요\n".encode() + "안녕".encode("cp949") + b"\n")
    with pytest.raises(InputFileError, match="not UTF-8") as info:
        read_corpus(path)
    assert info.value.line == 3


def test_parse_corpus_spec(tmp_path):
    assert parse_corpus_spec("a/b.tsv:comments", "|") == Corpus(Path("a/b.tsv"), "comments")
    assert parse_corpus_spec("c.txt:1", "pipe") == Corpus(Path("c.txt"), "1", "|")
    assert parse_corpus_spec("plain.txt", "|") == Corpus(Path("plain.txt"))
    odd = write(tmp_path / "odd:name.txt", "댓글입니다\n")
    assert parse_corpus_spec(str(odd)) == Corpus(odd)


# ---- tokens --------------------------------------------------------------------------


def test_search_tokens_keep_content_and_slang():
    [tokens] = search_tokens(["ㅅㅂ 진짜 개빡치네 ㅋㅋㅋㅋ LOL!!"])
    assert {"ㅅㅂ/S", "진짜/M", "ㅋㅋ/S", "lol/S"} <= set(tokens)
    [tokens] = search_tokens(["오늘 날씨가 정말 좋네요."])
    assert tokens == ["오늘/N", "날씨/N", "정말/M", "좋/V"]  # no particle, ending or "."


# ---- the index -----------------------------------------------------------------------

COMMENTS = [
    "어제 축구 경기 손흥민 골 미쳤다 ㅋㅋㅋ",
    "라면은 역시 신라면이 제일 맛있음",
    "주식 또 떡락했네 개미들만 불쌍하다",
    "아이돌 컴백 무대 보고 소름 돋았어요",
    "집값 너무 올라서 서울에 집 사기는 글렀다",
    "장마철이라 비가 계속 오네요 빨래가 안 말라",
    "이 게임 현질 안 하면 못 이기는 구조임",
    "택배 기사님들 명절에도 고생 많으십니다",
    "ㅋㅋ",  # too short: dropped
    "라면은 역시 신라면이 제일 맛있음",  # duplicate: dropped
    "고양이 키우는데 츄르만 먹으려고 해서 걱정",
    "야구 경기 9회말 역전승 실화냐",
]


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("slang")
    corpus = write(root / "small.txt", "\n".join(COMMENTS) + "\n")
    extra = write(root / "extra.tsv", "comments\tlabel\n부동산 집값 폭등 정부는 뭐하냐\t1\n")
    manifest = build_index([corpus, f"{extra}:comments"], root / "index", progress=False)
    return root, manifest, SlangIndex.load(root / "index")


def test_build_manifest_counts_and_versions(small_index):
    root, manifest, index = small_index
    assert manifest["cleaning"]["input"] == 13 and manifest["comments"] == 11 == len(index)
    assert manifest["cleaning"]["dropped"] == {
        "empty": 0,
        "too_short": 1,
        "too_long": 0,
        "duplicate": 1,
    }
    assert [(s["name"], s["rows"], s["kept"]) for s in manifest["sources"]] == [
        ("small.txt", 12, 10),
        ("extra.tsv", 1, 1),
    ]
    assert manifest["bm25"]["version"] and manifest["tokenizer"]["kiwipiepy"]
    assert set(manifest["build_seconds"]) >= {"tokenize", "total"}
    on_disk = json.loads((root / "index" / "manifest.json").read_text(encoding="utf-8"))
    assert on_disk == manifest


@pytest.mark.parametrize(
    "query, expected_line",
    [
        ("어제 축구 경기 재밌었다", 1),
        ("신라면 맛있다", 2),
        ("주식이 떡락해서 슬프다", 3),
        ("비가 계속 와서 빨래가 안 마른다", 6),
        ("츄르 좋아하는 고양이", 11),
    ],
)
def test_search_finds_the_obvious_comment(small_index, query, expected_line):
    hits = small_index[2].search(query, k=3)
    assert hits[0].id == f"small.txt:{expected_line}"
    assert hits[0].text == COMMENTS[expected_line - 1]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_ids_point_at_their_source_line(small_index):
    root, _, index = small_index
    [hit] = index.search("정부는 뭐하냐 집값", k=1)
    assert hit == Hit("extra.tsv:2", "부동산 집값 폭등 정부는 뭐하냐", hit.score)
    lines = (root / "small.txt").read_text(encoding="utf-8").split("\n")
    for source_id, text in zip(index.ids, index.texts):
        name, _, line = source_id.rpartition(":")
        if name == "small.txt":
            assert lines[int(line) - 1] == text


def test_rebuild_gives_the_same_ids_and_scores(small_index, tmp_path):
    root, _, index = small_index
    build_index(
        [root / "small.txt", f"{root / 'extra.tsv'}:comments"], root / "index", progress=False
    )  # over the existing index: allowed
    again = SlangIndex.load(root / "index")
    assert again.ids == index.ids
    assert again.search("집값 서울", 5) == index.search("집값 서울", 5)


def test_k_edge_cases(small_index):
    index = small_index[2]
    assert index.search("축구 경기", k=0) == [] and index.search_many(["축구"], 0) == [[]]
    hits = index.search("경기", k=100)  # more than the corpus: only the matching ones
    assert {h.id for h in hits} == {"small.txt:1", "small.txt:12"}
    assert index.search("은는이가", k=9) == []  # no shared token: no zero-score hits
    with pytest.raises(ConfigError):
        index.search("축구", k=-1)


def test_ties_go_to_the_earliest_comment(tmp_path):
    lines = [f"축구 {fruit} 좋다" for fruit in ("바나나", "수박", "참외")]
    assert len({len(tokens) for tokens in search_tokens(lines)}) == 1  # equal lengths
    corpus = write(tmp_path / "ties.txt", "\n".join(lines) + "\n야구 경기 좋다\n")
    build_index([corpus], tmp_path / "index", progress=False)
    hits = SlangIndex.load(tmp_path / "index").search("축구", k=2)
    assert [h.id for h in hits] == ["ties.txt:1", "ties.txt:2"]
    assert hits[0].score == hits[1].score > 0


def test_search_many_equals_search(small_index):
    index = small_index[2]
    queries = ["축구 골", "집값 폭등", "게임 현질", "택배 고생", "없는단어입니다", ""]
    assert index.search_many(queries, k=4) == [index.search(q, k=4) for q in queries]


def test_load_errors(small_index, tmp_path):
    with pytest.raises(InputFileError, match="not found"):
        SlangIndex.load(tmp_path / "nope")
    with pytest.raises(InputFileError, match="not a slang index"):
        SlangIndex.load(tmp_path)
    write(tmp_path / "manifest.json", '{"format": "something-else"}')
    with pytest.raises(InputFileError, match="not a rolecall slang index manifest"):
        SlangIndex.load(tmp_path)
    with pytest.raises(InputFileError, match="is a file"):
        SlangIndex.load(tmp_path / "manifest.json")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_bytes(
        (small_index[0] / "index" / "manifest.json").read_bytes()
    )
    with pytest.raises(InputFileError, match="incomplete slang index: comments.jsonl"):
        SlangIndex.load(broken)


def test_build_errors(tmp_path):
    corpus = write(tmp_path / "c.txt", "축구 경기 재밌다\n")
    busy = tmp_path / "busy"
    busy.mkdir()
    write(busy / "notes.txt", "mine")
    with pytest.raises(ConfigError, match=r"\(notes.txt\): refusing"):
        build_index([corpus], busy, progress=False)
    unfinished = tmp_path / "unfinished"  # a killed build: our files, no manifest
    (unfinished / "bm25").mkdir(parents=True)
    write(unfinished / "comments.jsonl.tmp", "")
    build_index([corpus], unfinished, progress=False)
    assert len(SlangIndex.load(unfinished)) == 1
    other = tmp_path / "other"
    other.mkdir()
    write(other / "c.txt", "야구 경기 재밌다\n")
    with pytest.raises(ConfigError, match="collide"):
        build_index([corpus, other / "c.txt"], tmp_path / "i", progress=False)
    with pytest.raises(InputFileError, match="no searchable words"):
        build_index(
            [write(tmp_path / "p.txt", "!!!!!!\n......\n")], tmp_path / "i2", progress=False
        )
    with pytest.raises(ConfigError, match="no corpus"):
        build_index([], tmp_path / "i3", progress=False)


def test_dense_and_hybrid_are_never_silently_bm25(small_index, tmp_path):
    """Dense needs a model, a model needs dense, a BM25-only index has no dense search
    (tests/slang/test_dense.py has the dense index itself)."""
    corpus = small_index[0] / "small.txt"
    for kwargs, needle in [
        ({"retriever": "dense"}, "needs a sentence-transformers model"),
        ({"retriever": "hybrid"}, "needs a sentence-transformers model"),
        ({"dense_model": "/models/some-st-model"}, "only used by"),
        ({"retriever": "tfidf"}, "unknown retriever"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            build_index([corpus], tmp_path / "i", progress=False, **kwargs)
    assert small_index[1]["retrievers"] == ["bm25"]
    assert small_index[1]["default_retriever"] == small_index[2].default_retriever == "bm25"
    for retriever in ("dense", "hybrid"):
        with pytest.raises(InputFileError, match="has no dense embeddings") as info:
            small_index[2].search("축구", 3, retriever=retriever)
        assert "--retriever dense --dense-model PATH" in info.value.fix
    with pytest.raises(ConfigError, match="unknown retriever"):
        small_index[2].search("축구", 3, retriever="tfidf")
    assert not (tmp_path / "i").exists()


def test_cli_functions(tmp_path):
    curse = write(tmp_path / "curse.txt", "축구 보는 놈들 다 한심함|1\n축구 경기 또 졌네|0\n")
    summary = index_command([f"{curse}:1"], tmp_path / "idx", delimiter="|", progress=False)
    # not the real corpus's count (the summary names the tmp folder, whose number varies)
    assert "2 comments from 1 corpora" in summary and "47,614" not in summary
    hits = search_command(tmp_path / "idx", "축구 경기", k=9)
    assert hits[0].id == "curse.txt:2" and len(hits) == 2
    assert "curse.txt:2" in format_hits(hits).splitlines()[0]
    assert format_hits([]) == "(no hits)"


# ---- the real corpus -----------------------------------------------------------------


def drop_words(text: str, rng: random.Random, share: float = 0.3) -> str:
    words = text.split()
    keep = sorted(rng.sample(range(len(words)), len(words) - round(len(words) * share)))
    return " ".join(words[i] for i in keep)


@pytest.mark.slow
def test_real_slang_corpus(slang_index):
    folder, summary = slang_index  # all three corpora, built once per session
    index = SlangIndex.load(folder)
    report = index.manifest["cleaning"]
    assert [s["rows"] for s in index.manifest["sources"]] == [33_893, 7_896, 5_825]
    assert report["input"] == 47_614 == report["kept"] + sum(report["dropped"].values())
    assert 40_000 < len(index) == report["kept"] and "47,614 rows read" in summary
    assert sum(s["kept"] for s in index.manifest["sources"]) == len(index)
    assert report["dropped"]["duplicate"] > 1_000  # BEEP! repeats many comments

    rng = random.Random(7)
    chosen = [i for i in rng.sample(range(len(index)), 400) if len(index.texts[i].split()) >= 6][
        :30
    ]
    queries = [drop_words(index.texts[i], rng) for i in chosen]
    results = index.search_many(queries, k=9)
    found = sum(index.ids[i] in {h.id for h in hits} for i, hits in zip(chosen, results))
    assert found >= 0.9 * len(chosen), f"recall@9 {found}/{len(chosen)}"
