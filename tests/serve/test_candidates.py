"""The candidate index: build, search (bi and poly two-stage), reload, refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("faiss")

from rolecall.errors import ConfigError, InputFileError  # noqa: E402
from rolecall.serve.candidates import CandidateIndex, build_candidate_index  # noqa: E402
from rolecall.train.backbones.base import Backbone  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from rolecall.train.retriever import Retriever, RetrieverSettings, fit_retriever  # noqa: E402
from tests.serve.topics import PAIRS, TOPICS  # noqa: E402
from tests.tiny_models import tiny_backbone  # noqa: E402

SMALL = {"dim": 32, "codes": 4, "context_max_tokens": 32, "candidate_max_tokens": 16}


def train(kind: str, directory):
    tiny = tiny_backbone([t for pair in PAIRS for t in pair], vocab_size=150, dropout=0.0)
    tiny = Backbone(tiny.model, tiny.tokenizer, "in-code", frozen=True)
    retriever, _ = fit_retriever(
        PAIRS,
        tiny,
        RetrieverSettings(kind=kind, **SMALL),
        TrainConfig(epochs=20, batch_size=8, lr=1e-2),
        progress=False,
    )
    retriever.save(directory / kind)
    return retriever


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("models")
    return {kind: train(kind, directory) for kind in ("bi", "poly")}


@pytest.fixture(params=["bi", "poly"])
def trained(request, models):
    return models[request.param]


def test_the_index_finds_the_gold_and_reloads_identically(trained, tmp_path):
    answers = [a for _, a in PAIRS] + [" 오늘 날씨가 맑아요 ", ""]  # duplicates, blank
    index = build_candidate_index(trained, answers, tmp_path / "index", progress=False)
    assert len(index) == len(TOPICS) and index.texts == [a for _, a in TOPICS]
    manifest = json.loads((tmp_path / "index" / "manifest.json").read_text("utf-8"))
    assert manifest["count"] == len(TOPICS) and manifest["dim"] == SMALL["dim"]
    # the retriever relative to the index, so that the two move together
    assert (tmp_path / "index" / manifest["retriever"]).resolve() == trained.path.resolve()
    assert len(manifest["candidates_sha256"]) == 64 and manifest["kind"] == trained.settings.kind
    contexts = [c for c, _ in PAIRS]
    hits = index.search(contexts, k=3)
    assert all(len(row) == 3 for row in hits)
    assert all(row[0][2] >= row[1][2] >= row[2][2] for row in hits)
    top1 = np.mean([row[0][1] == gold for row, (_, gold) in zip(hits, PAIRS)])
    assert top1 > 0.5  # chance: 1/8
    candidate_id, text, _ = hits[0][0]
    assert index.texts[candidate_id] == text
    again = CandidateIndex.load(tmp_path / "index")  # the retriever from the manifest
    assert again.search(contexts, k=3) == hits

    # a bot's index lies inside its retriever: the two move together
    import shutil

    from rolecall.train.retriever import Retriever

    shutil.copytree(trained.path, tmp_path / "bot" / "retriever")
    inside = Retriever.load(tmp_path / "bot" / "retriever")
    build_candidate_index(inside, answers, tmp_path / "bot" / "retriever" / "c", progress=False)
    shutil.move(tmp_path / "bot", tmp_path / "moved")
    moved = CandidateIndex.load(tmp_path / "moved" / "retriever" / "c")
    assert moved.search(contexts, k=3) == hits


def test_search_scores_are_the_retrievers_scores(trained, tmp_path):
    index = build_candidate_index(trained, [a for _, a in TOPICS], tmp_path / "i", progress=False)
    contexts = [c for c, _ in PAIRS[:4]]
    direct = trained.score(contexts, [index.texts] * len(contexts))
    for row, hits in zip(direct, index.search(contexts, k=len(TOPICS))):
        assert sorted(row.tolist(), reverse=True) == pytest.approx(
            [s for _, _, s in hits], rel=1e-4, abs=1e-5
        )


def test_poly_two_stage_with_a_shallow_first_stage(models, tmp_path):
    poly = models["poly"]
    index = build_candidate_index(poly, [a for _, a in TOPICS], tmp_path / "i", progress=False)
    contexts = [c for c, _ in PAIRS]
    exact = poly.score(contexts, [index.texts] * len(contexts))
    first = poly.query_vectors(poly.encode_contexts(contexts)) @ index._vectors.T
    shallow = index.search(contexts, k=2, depth=3)
    for row, hits in enumerate(shallow):
        kept = set(np.argsort(-first[row], kind="stable")[:3].tolist())
        assert len(hits) == 2 and {cid for cid, _, _ in hits} <= kept
        best = sorted(kept, key=lambda cid: -exact[row, cid])[:2]
        assert [cid for cid, _, _ in hits] == best  # re-ranked by the full poly score
        for cid, _, score in hits:
            assert score == pytest.approx(exact[row, cid], rel=1e-4, abs=1e-5)


def test_refusals(trained, tmp_path):
    with pytest.raises(ConfigError, match="no candidate responses"):
        build_candidate_index(trained, ["", " "], tmp_path / "empty", progress=False)
    index = build_candidate_index(trained, [a for _, a in TOPICS], tmp_path / "i", progress=False)
    with pytest.raises(ConfigError, match="k must be"):
        index.search(["x"], k=0)
    assert index.search([], k=3) == []
    other = Retriever.new(trained.backbone, trained.settings, seed=7)
    with pytest.raises(InputFileError, match="another retriever"):
        CandidateIndex.load(tmp_path / "i", retriever=other)
    with (tmp_path / "i" / "candidates.jsonl").open("a", encoding="utf-8") as file:
        file.write('{"id": 8, "text": "새 답"}\n')
    with pytest.raises(InputFileError, match="SHA-256"):
        CandidateIndex.load(tmp_path / "i")
    (tmp_path / "i" / "manifest.json").unlink()
    with pytest.raises(InputFileError, match="manifest.json is missing"):
        CandidateIndex.load(tmp_path / "i")
