"""A frozen backbone's features extracted on Ray are the ones extracted here (#18).

A tiny BERT saved to a folder is loaded by the driver and by each Ray actor (the same
identity, so the same keys); one local Ray cluster (``ray.init(num_cpus=2)``, loopback;
``tests/conftest.ray_cluster``) serves every test of the session, and the tests
that need it skip, with Ray's own reason, only when Ray is missing or cannot start.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from rolecall.cli.app import app  # noqa: E402
from rolecall.errors import ConfigError, InputFileError  # noqa: E402
from rolecall.jsonl import write_jsonl  # noqa: E402
from rolecall.train.backbones.features import Features  # noqa: E402
from rolecall.train.backbones.load import load_backbone  # noqa: E402
from rolecall.train.classifier import train_classifier  # noqa: E402
from rolecall.train.data import unique_candidates  # noqa: E402
from rolecall.train.features_ray import (  # noqa: E402
    Extractor,
    Inputs,
    extract_for_training,
    extract_on_ray,
    precompute_on_ray,
    received,
    training_inputs,
)
from rolecall.train.reranker import train_reranker  # noqa: E402
from rolecall.train.retriever import Retriever, train_retriever  # noqa: E402
from rolecall.train.settings import (  # noqa: E402
    ClassifierSettings,
    RerankerSettings,
    RetrieverSettings,
    TrainConfig,
)
from tests.dialogue_data import BAD, GOOD, USERS, make_examples, tiny  # noqa: E402

TEXTS = [f"{u} {g}" for u in USERS for g in GOOD + BAD] + [USERS[0]] * 3  # duplicates too
PAIRS = [(u, r) for u in USERS for r in GOOD + BAD]
CONFIG = TrainConfig(epochs=1, batch_size=8, lr=1e-2)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The tiny backbone as a model folder, what ``load_backbone`` loads on every node."""
    folder = tmp_path_factory.mktemp("tiny-backbone")
    backbone = tiny(frozen=True)
    backbone.model.save_pretrained(folder)
    backbone.tokenizer.save_pretrained(folder)
    return folder


def cached(folder, cache, kind, items, max_length, layer=None, **options):
    """The states a cache holds for ``items`` (every one of them must be there)."""
    features = Features(load_backbone(str(folder), frozen=True, layer=layer), cache)
    assert features.missing(kind, items, max_length, **options) == {}
    if kind == "texts":
        return features.texts(items, max_length, **options)
    return features.pairs([a for a, _ in items], [b for _, b in items], max_length, **options)


def assert_same_states(first, second):
    (hidden_a, mask_a), (hidden_b, mask_b) = first, second
    assert torch.equal(mask_a, mask_b)
    assert np.allclose(hidden_a.numpy(), hidden_b.numpy(), atol=2e-3)
    assert hidden_a[mask_a].abs().sum() > 0  # real states, not padding


def local_cache(folder, cache, kind, items, max_length, layer=None, **options):
    backbone = load_backbone(str(folder), frozen=True, layer=layer)
    features = Features(backbone, cache, batch_size=4)
    features.precompute(kind, items, max_length, progress=False, **options)


def test_texts_on_ray_are_the_local_states_only_the_missing_sent_once(
    ray_cluster,
    saved,
    tmp_path,
):
    local_cache(saved, tmp_path / "local", "texts", TEXTS, 12, side="left")
    cache = tmp_path / "ray"
    local_cache(saved, cache, "texts", TEXTS[:10], 12, side="left")  # a part-filled cache
    first = set(cache.glob("shard-*.npz"))
    backbone = load_backbone(str(saved), frozen=True)
    twice = [Inputs("texts", TEXTS, 12, {"side": "left"})] * 2  # the second finds all cached
    sent = extract_for_training(twice, backbone, str(saved), {}, cache, workers=2)
    assert sent == len(set(TEXTS)) - len(set(TEXTS[:10]))
    assert first < set(cache.glob("shard-*.npz"))  # its shard kept, the rest added
    assert_same_states(
        cached(saved, tmp_path / "local", "texts", TEXTS, 12, side="left"),
        cached(saved, cache, "texts", TEXTS, 12, side="left"),
    )
    again = precompute_on_ray(str(saved), {}, "texts", TEXTS, 12, cache, workers=2, side="left")
    assert again == 0


def actor_batch(extractor, items):
    """What ``map_batches`` gives an actor (numpy columns), and what it answers."""
    firsts = [i if isinstance(i, str) else i[0] for i in items]
    seconds = ["" if isinstance(i, str) else i[1] for i in items]
    return extractor({"first": np.array(firsts, dtype=object), "second": np.array(seconds)})


@pytest.mark.parametrize("kind", ["texts", "pairs"])
def test_an_actor_answers_the_keys_and_states_of_local_extraction(saved, tmp_path, kind):
    """The actor's work, in this process (Ray only carries it): the same keys and states."""
    items, options = (TEXTS, {"side": "left"}) if kind == "texts" else (PAIRS, {"second_max": 5})
    here = Features(load_backbone(str(saved), frozen=True), tmp_path / "cache")
    asked = here.missing(kind, items, 16, **options)
    answer = actor_batch(Extractor(str(saved), {}, kind, 16, **options), list(asked.values()))
    here.add(received(answer, asked, here.backbone))
    here.flush()
    local_cache(saved, tmp_path / "local", kind, items, 16, **options)
    assert_same_states(
        cached(saved, tmp_path / "local", kind, items, 16, **options),
        cached(saved, tmp_path / "cache", kind, items, 16, **options),
    )


def test_workers_with_another_backbone_stop_with_a_clear_error(saved):
    here = Features(tiny(frozen=True), None)  # source "in-code", not the folder the actor loads
    asked = here.missing("texts", TEXTS, 12)
    answer = actor_batch(Extractor(str(saved), {}, "texts", 12), list(asked.values()))
    with pytest.raises(ConfigError, match="the Ray workers' backbone is '/") as error:
        received(answer, asked, here.backbone)
    assert "same model at the same path" in error.value.fix


def test_a_trainable_backbone_or_no_cache_is_refused(saved):
    trainable = Features(load_backbone(str(saved), frozen=False), None)
    with pytest.raises(ConfigError, match="frozen backbone"):
        extract_on_ray(trainable, str(saved), {}, "texts", TEXTS, 12)


def shards(cache) -> set:
    return set(cache.glob("shard-*.npz"))


def examples_file(tmp_path):
    path = tmp_path / "examples.jsonl"
    write_jsonl(path, make_examples(30))
    return path


@pytest.mark.parametrize("model", ["classifier", "retriever", "reranker"])
def test_training_reads_nothing_that_training_inputs_leaves_out(saved, tmp_path, model):
    """Cache what ``training_inputs`` lists, then train: no new state is computed."""
    path, cache, out = examples_file(tmp_path), tmp_path / "cache", tmp_path / "model"
    backbone = load_backbone(str(saved), frozen=True)
    settings = {
        "classifier": ClassifierSettings(max_length=48, response_max=16, width=16),
        "retriever": RetrieverSettings(context_max_tokens=24, candidate_max_tokens=12),
        "reranker": RerankerSettings(
            max_length=48, context_max_tokens=24, candidate_max_tokens=12, hard_count=1
        ),
    }[model]

    def hard(context, gold, k):  # a text outside the positives' pool first
        return [text for text in [BAD[0], "푹 쉬세요", "오늘 날씨가 좋네요"] if text != gold][:k]

    features = Features(backbone, cache)
    for one in training_inputs(model, path, settings, backbone, hard):
        features.precompute(one.kind, one.items, one.max_length, False, **one.options)
    before = shards(cache)
    assert before
    if model == "classifier":
        train_classifier(path, out, backbone, settings, CONFIG, 0.3, False, cache)
    elif model == "retriever":
        train_retriever(path, out, backbone, settings, CONFIG, False, cache)
        responses = [e.response for e in make_examples(30) if e.label == "positive"]
        Retriever.load(out, cache).encode_candidates(unique_candidates(responses), False)
    else:
        train_reranker(path, out, backbone, settings, CONFIG, hard, 0.3, False, cache)
    assert shards(cache) == before


def test_train_classifier_engine_ray_extracts_then_trains_here(
    ray_cluster,
    saved,
    tmp_path,
):
    path, cache = examples_file(tmp_path), tmp_path / "cache"
    args = ["train", "classifier", str(path), "--out", str(tmp_path / "model")]
    args += ["--backbone", str(saved), "--frozen", "--features-cache", str(cache)]
    args += ["--max-length", "48", "--epochs", "1", "--batch-size", "8", "--no-progress"]
    args += ["--layer", "1"]  # a backbone option: every actor must load it the same way
    result = CliRunner().invoke(app, [*args, "--engine", "ray", "--workers", "2"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert metrics["train_examples"] > 0
    # the pairs it extracted on Ray are the states extracted here, of the layer asked for
    backbone = load_backbone(str(saved), frozen=True, layer=1)
    (pairs,) = training_inputs("classifier", path, ClassifierSettings(max_length=48), backbone)
    assert pairs.kind == "pairs" and pairs.options == {"second_max": 128}
    local_cache(saved, tmp_path / "local", "pairs", pairs.items, 48, 1, **pairs.options)
    assert_same_states(
        cached(saved, tmp_path / "local", "pairs", pairs.items, 48, 1, **pairs.options),
        cached(saved, cache, "pairs", pairs.items, 48, 1, **pairs.options),
    )

    refused = CliRunner().invoke(app, [*args, "--trainable", "--engine", "ray"])
    assert isinstance(refused.exception, ConfigError) and "--frozen" in refused.exception.fix


def test_under_a_launcher_only_rank_0_extracts_and_the_others_wait(monkeypatch, saved, tmp_path):
    from rolecall.train import distributed, jobs
    from rolecall.train.loop import TrainConfig

    waited = []
    monkeypatch.setattr(distributed, "barrier", lambda: waited.append(True))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    # rank 1 reads nothing else: a missing examples file or cache would fail here
    job = jobs.Job(tmp_path / "missing.jsonl", tmp_path / "out", tmp_path / "none", engine="ray")
    choice = jobs.BackboneChoice(str(saved), frozen=True)
    backbone = load_backbone(str(saved), frozen=True)
    jobs.features_on_ray(job, choice, "classifier", backbone, None, TrainConfig())
    assert waited == [True]


def test_train_features_fills_a_cache_here_then_the_rest_on_ray(
    ray_cluster,
    saved,
    tmp_path,
):
    texts, cache = tmp_path / "texts.txt", tmp_path / "cache"
    args = ["train", "features", str(texts), "--backbone", str(saved), "--max-length", "12"]
    args += ["--side", "left", "--features-cache", str(cache), "--no-progress"]
    texts.write_text("\n".join(TEXTS[:10]) + "\n\n", encoding="utf-8")
    here = CliRunner().invoke(app, args)
    assert here.exit_code == 0, here.output
    assert json.loads(here.stdout.splitlines()[-1])["computed"] == len(set(TEXTS[:10]))

    texts.write_text("\n".join(TEXTS), encoding="utf-8")
    on_ray = CliRunner().invoke(app, [*args, "--engine", "ray", "--workers", "2"])
    assert on_ray.exit_code == 0, on_ray.output
    rest = len(set(TEXTS)) - len(set(TEXTS[:10]))
    assert json.loads(on_ray.stdout.splitlines()[-1])["computed"] == rest
    local_cache(saved, tmp_path / "local", "texts", TEXTS, 12, side="left")
    assert_same_states(
        cached(saved, tmp_path / "local", "texts", TEXTS, 12, side="left"),
        cached(saved, cache, "texts", TEXTS, 12, side="left"),
    )

    texts.write_bytes("안녕".encode("cp949"))
    refused = CliRunner().invoke(app, args)
    assert isinstance(refused.exception, InputFileError) and "UTF-8" in str(refused.exception)
